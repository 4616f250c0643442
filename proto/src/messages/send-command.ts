import { CommitOptions } from '../commit-options.js';
import { Type, type Static } from 'typebox';
import {
  DEVICE_TEXT_PATTERN,
  DeviceText,
  MAX_PATTERN_LENGTH,
  MAX_SECRET_LENGTH,
  NullableDeviceText,
} from '../device-input.js';
import { SshRequestOptions } from '../ssh-options.js';
import { ConfigTemplateRef } from './config-template.js';

/** Tag keys and values: alphanumeric plus hyphen, underscore and colon, 1 to 64 characters. */
export const TAG_PATTERN = '^[A-Za-z0-9_:-]{1,64}$';
export const MAX_TAGS = 10;

const NullableString = (description: string) =>
  Type.Union([Type.String(), Type.Null()], { description });

export const Tags = Type.Union(
  [
    Type.Record(Type.String({ pattern: TAG_PATTERN }), Type.String({ pattern: TAG_PATTERN }), {
      maxProperties: MAX_TAGS,
      additionalProperties: false,
    }),
    Type.Null(),
  ],
  { description: 'At most 10 tags; keys and values 1-64 of [A-Za-z0-9_:-].' },
);

/**
 * The connection fields shared by every submission. Types are strict: a value of the wrong JSON
 * type is rejected, never coerced. Host syntax and aliases are checked after the schema, in
 * `normalizeSubmission`, so that their messages can be precise.
 */
export const ConnectionFields = {
  commands: Type.Array(
    DeviceText('One command or configuration line: no line breaks or control characters.'),
    {
      minItems: 1,
      description:
        'Commands to run, in order. At least one; at most SVC_MAX_COMMANDS, each at most SVC_MAX_COMMAND_LENGTH characters.',
    },
  ),
  host: Type.Optional(NullableString('IPv4, IPv6 or RFC 1123 host name of the device.')),
  ip: Type.Optional(NullableString('Deprecated alias of host.')),
  platform: Type.Optional(
    Type.String({ description: 'Device platform identifier, or autodetect. Default cisco_ios.' }),
  ),
  device_type: Type.Optional(NullableString('Deprecated alias of platform.')),
  port: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 65535, description: 'SSH port. Default 22.' }),
  ),
  username: Type.Optional(
    NullableDeviceText('Device username; required with Bearer auth.', MAX_SECRET_LENGTH),
  ),
  password: Type.Optional(
    NullableDeviceText(
      'Device password; required with Bearer auth unless ssh.private_key is given.',
      MAX_SECRET_LENGTH,
    ),
  ),
  enable: Type.Optional(
    NullableDeviceText('Enable password; defaults to password.', MAX_SECRET_LENGTH),
  ),
  context: Type.Optional(Type.String({ description: 'Routing context. Default "default".' })),
  conn_timeout: Type.Optional(
    Type.Number({ minimum: 1, description: 'TCP connection timeout, seconds. Default 10.' }),
  ),
  read_timeout: Type.Optional(
    Type.Number({ minimum: 1, description: 'Wait for device output, seconds. Default 30.' }),
  ),
  expect_string: Type.Optional(
    NullableDeviceText(
      'Regex (RE2 syntax: no backreferences or lookaround) matched in device output; overrides prompt detection.',
      MAX_PATTERN_LENGTH,
    ),
  ),
  tags: Type.Optional(Tags),
  webhook_url: Type.Optional(NullableString('HTTPS URL notified on completion.')),
  webhook_secret: Type.Optional(NullableString('Secret for the HMAC-SHA256 webhook signature.')),
  ssh: Type.Optional(SshRequestOptions),
  transcript: Type.Optional(
    Type.Boolean({
      description:
        'Keep the device session transcript (GET /v2/jobs/{job_id}/transcript). Default false; failed jobs and contexts in TRANSCRIPT_CONTEXTS always keep one.',
    }),
  ),
};

/** Most entries of send-config `checks`. */
export const MAX_CHECKS = 16;

/** Most entries of send-config `error_patterns`. */
export const MAX_ERROR_PATTERNS = 16;

/** Most entries of `answers`. */
export const MAX_ANSWERS = 32;
/** Longest text of one answer, in characters. */
export const MAX_ANSWER_LENGTH = 1024;

/** One question a command may ask, and what to type when it does. */
export const CommandAnswer = Type.Object(
  {
    prompt: Type.String({
      minLength: 1,
      maxLength: MAX_PATTERN_LENGTH,
      pattern: DEVICE_TEXT_PATTERN,
      description:
        'Regex (RE2 syntax: no backreferences or lookaround) for the question, matched against the last, unfinished line of output (e.g. "\\[confirm\\]$").',
    }),
    answer: DeviceText(
      'Typed when the question appears, then Enter ("" answers with Enter alone, as [confirm] wants). No line breaks or control characters. Kept in the job record like the commands: not for secrets.',
      MAX_ANSWER_LENGTH,
    ),
    command: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'Index (0-based) in commands of the one command this answer is for. Omitted: every command.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CommandAnswer = Static<typeof CommandAnswer>;

/** Answers to interactive questions ([confirm], [yes/no]), for show and config jobs. */
const AnswerFields = {
  answers: Type.Optional(
    Type.Array(CommandAnswer, {
      maxItems: MAX_ANSWERS,
      description:
        'Questions commands may ask and their answers. Each is answered once per time it is asked; a question without an answer ends the job in READ_TIMEOUT naming the question. Default none.',
    }),
  ),
};

/** Show jobs only: config jobs always stop at the first rejected line. */
const ShowFields = {
  ...AnswerFields,
  stop_on_error: Type.Optional(
    Type.Boolean({
      description:
        'Stop at the first command the device rejects. Default false: every command runs, each output is kept and the rejected ones are marked in command_status.',
    }),
  ),
};

export const SendCommandRequest = Type.Object(
  { ...ConnectionFields, ...ShowFields },
  {
    $id: 'SendCommandRequest',
    description: 'POST /v2/send-command',
  },
);
export type SendCommandRequest = Static<typeof SendCommandRequest>;

export const SendConfigRequest = Type.Object(
  {
    ...ConnectionFields,
    commands: Type.Optional(ConnectionFields.commands),
    template: Type.Optional(ConfigTemplateRef),
    checks: Type.Optional(
      Type.Array(DeviceText('A show command run before and after the change.'), {
        minItems: 1,
        maxItems: MAX_CHECKS,
        uniqueItems: true,
        description:
          'Pre/post checks: show commands run before the change and after it, in the same session; the result has checks: {"<command>": {"pre", "post", "diff"}} (diff: unified, "" when equal; a dry run has only pre). A check the device rejects before the change fails the job with nothing changed. At most 16.',
      }),
    ),
    dry_run: Type.Optional(
      Type.Boolean({
        description:
          "Change nothing. Junos, IOS-XR and EOS: load the lines into a candidate (EOS: a configuration session), return the device's diff as `diff`, discard it. Other platforms: nothing enters configuration mode; the result has `rendered` and `diff: null`. commit and save_config have no effect. Default false.",
      }),
    ),
    error_patterns: Type.Optional(
      Type.Array(
        Type.String({
          minLength: 1,
          maxLength: MAX_PATTERN_LENGTH,
          pattern: DEVICE_TEXT_PATTERN,
          description: 'Regex (RE2 syntax: no backreferences or lookaround).',
        }),
        {
          maxItems: MAX_ERROR_PATTERNS,
          description:
            "Added to the platform's own error patterns when deciding that a configuration line (or the commit) failed: a line of its output that matches one fails the job COMMAND_ERROR, the driver aborts and leaves configuration mode. At most 16.",
        },
      ),
    ),
    save_config: Type.Optional(
      Type.Boolean({ description: 'Save the running configuration to startup. Default false.' }),
    ),
    commit: Type.Optional(
      Type.Union([Type.Boolean(), CommitOptions], {
        description:
          'Commit on platforms that need it (true). Or commit options on Junos, IOS-XR and EOS (a configuration session): {"comment", "confirmed_minutes" (1–60: a confirmed commit, confirmed with POST /v2/jobs/{job_id}/confirm), "check" (Junos commit check)}; an object on another platform is a 422. Default false.',
      }),
    ),
    ...AnswerFields,
  },
  {
    $id: 'SendConfigRequest',
    description:
      'POST /v2/send-config: `commands`, or a `template` rendered into them (one of the two). Unknown fields are refused (422 naming the field): a misspelt option (`dryrun`, `comit`) must never push a change as if it were absent.',
    additionalProperties: false,
  },
);
export type SendConfigRequest = Static<typeof SendConfigRequest>;

export const SendCommandStructuredRequest = Type.Object(
  {
    ...ConnectionFields,
    ...ShowFields,
    textfsm_template: Type.Optional(
      NullableString('TextFSM template text. Exclusive with ttp_template.'),
    ),
    ttp_template: Type.Optional(
      NullableString('TTP template text, or ttp://<path> under SVC_TTP_TEMPLATES_DIR.'),
    ),
  },
  { $id: 'SendCommandStructuredRequest', description: 'POST /v2/send-command-structured' },
);
export type SendCommandStructuredRequest = Static<typeof SendCommandStructuredRequest>;

/** v1 routes also accept the retired `delay_factor` (an integer, ignored beyond validation). */
export const V1SendCommandRequest = Type.Object(
  {
    ...ConnectionFields,
    delay_factor: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
  },
  { $id: 'V1SendCommandRequest', description: 'POST /v1/send_command (deprecated)' },
);
export type V1SendCommandRequest = Static<typeof V1SendCommandRequest>;

export const V1SendCommandStructuredRequest = Type.Object(
  {
    ...ConnectionFields,
    delay_factor: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
    textfsm_template: Type.Optional(NullableString('TextFSM template text.')),
    ttp_template: Type.Optional(NullableString('TTP template text or ttp:// reference.')),
  },
  { $id: 'V1SendCommandStructuredRequest' },
);
