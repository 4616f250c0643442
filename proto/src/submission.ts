import { isIP } from 'node:net';
import type { ValidationIssue } from './messages/http.js';
import type { DeviceSecrets, JobKind, JobSpec } from './messages/job.js';
import type {
  SendCommandRequest,
  SendCommandStructuredRequest,
  SendConfigRequest,
} from './messages/send-command.js';
import { AUTODETECT, DEFAULT_PLATFORM, PLATFORMS, isPlatform } from './platforms.js';
import {
  DEFAULT_DEVICE_INPUT_LIMITS,
  deviceTextMessage,
  forbiddenCharIn,
  type DeviceInputLimits,
} from './device-input.js';
import { UserPattern } from './user-pattern.js';
import type { BuiltinDriverFacts } from './driver-description.js';
import { dryRunProblem } from './dry-run.js';
import { commitOptionIssues } from './commit-options.js';
import {
  SSH_ALGORITHM_KINDS,
  SSH_ALGORITHM_NAMES,
  type JumpHostSecrets,
  type SshRequestOptions,
  type SshSpec,
} from './ssh-options.js';

/** Defaults of the submission fields the specification gives. */
export const SubmissionDefaults = {
  port: 22,
  platform: DEFAULT_PLATFORM,
  context: 'default',
  /** seconds */
  connTimeout: 10,
  /** seconds */
  readTimeout: 30,
} as const;

const LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;

/** IPv4, IPv6, or an RFC 1123 host name (labels of letters, digits and inner hyphens). */
export function isDeviceHost(value: string): boolean {
  if (isIP(value) !== 0) return true;
  if (value.length === 0 || value.length > 253) return false;
  const labels = value.endsWith('.') ? value.slice(0, -1).split('.') : value.split('.');
  // An all-numeric dotted name is a malformed IPv4 address, not a host name.
  if (labels.every((l) => /^\d+$/.test(l))) return false;
  return labels.every((l) => LABEL.test(l));
}

/** Device credentials that come with the request when the caller used Basic auth. */
export interface CallerCredentials {
  username: string;
  password: string;
}

type AnySubmission = SendConfigRequest & SendCommandStructuredRequest & SendCommandRequest;

export interface NormalizeOptions {
  kind: JobKind;
  /** Basic callers' credentials go to the device; Bearer callers must give them in the body. */
  basic: CallerCredentials | null;
  /** Valid routing contexts (SVC_CONTEXTS). */
  contexts: readonly string[];
  /** Command limits (SVC_MAX_COMMANDS, SVC_MAX_COMMAND_LENGTH). Default the documented ones. */
  limits?: DeviceInputLimits;
  /** Platform ids of the user drivers (SVC_DRIVERS_DIR), valid besides the built-in ones. */
  userPlatforms?: readonly string[];
  /** The built-in drivers' commit and save steps (`BUILTIN_DRIVERS` of `@svc/drivers`). */
  builtinDrivers: BuiltinDriverFacts;
}

/**
 * Problems of Basic credentials that would reach a device: the Basic pair is the device login,
 * so it obeys the rules of every device-bound field (no line breaks or control characters).
 * The location is the header; the message never holds the value.
 */
export function basicCredentialIssues(basic: CallerCredentials): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const part of ['username', 'password'] as const) {
    const found = forbiddenCharIn(basic[part]);
    if (found !== null) {
      issues.push({
        loc: ['header', 'Authorization'],
        msg: `Basic ${part}: ${deviceTextMessage(found)}`,
        type: 'control_character',
      });
    }
  }
  return issues;
}

export type Normalized =
  { ok: true; spec: JobSpec; secrets: DeviceSecrets } | { ok: false; issues: ValidationIssue[] };

/**
 * Applies aliases, defaults and the rules a schema cannot say well, on a body that already passed
 * its schema. Returns the non-secret job spec and the secrets to seal.
 */
export function normalizeSubmission(body: AnySubmission, opts: NormalizeOptions): Normalized {
  const issues: ValidationIssue[] = [];
  const issue = (field: string, msg: string, type = 'value_error') =>
    issues.push({ loc: ['body', field], msg, type });

  const host = body.host ?? body.ip ?? null;
  if (opts.kind === 'config' && body.stop_on_error !== undefined) {
    issue('stop_on_error', 'config jobs always stop at the first rejected line');
  }
  if (host === null) issue('host', 'field required: host (or its deprecated alias ip)', 'missing');
  else if (!isDeviceHost(host)) {
    issue(
      body.host != null ? 'host' : 'ip',
      'value is not a valid IPv4, IPv6 or RFC 1123 host name',
    );
  }

  const platform = body.platform ?? body.device_type ?? SubmissionDefaults.platform;
  const userPlatforms = opts.userPlatforms ?? [];
  if (platform !== AUTODETECT && !isPlatform(platform) && !userPlatforms.includes(platform)) {
    issue(
      body.platform !== undefined ? 'platform' : 'device_type',
      `unknown platform ${JSON.stringify(platform)}; supported: ${[...PLATFORMS, ...userPlatforms, AUTODETECT].join(', ')}`,
    );
  }

  const context = body.context ?? SubmissionDefaults.context;
  if (!opts.contexts.includes(context)) {
    issue(
      'context',
      `unknown context ${JSON.stringify(context)}; valid: ${opts.contexts.join(', ')}`,
    );
  }

  let username = body.username ?? null;
  let password = body.password ?? null;
  const ssh = normalizeSsh(body.ssh, issues);
  if (opts.basic) issues.push(...basicCredentialIssues(opts.basic));
  if (opts.basic) {
    // With Basic auth the caller's own credentials are the device credentials.
    username = opts.basic.username;
    password = opts.basic.password;
  } else {
    if (!username) issue('username', 'field required with Bearer authentication', 'missing');
    // A private key logs in without a password.
    if (!password && ssh?.secrets.private_key != null) password = '';
    if (password === null || (password === '' && ssh?.secrets.private_key == null)) {
      issue(
        'password',
        'field required with Bearer authentication (or ssh.private_key for key login)',
        'missing',
      );
    }
  }

  const textfsm = body.textfsm_template ?? null;
  const ttp = body.ttp_template ?? null;
  if (opts.kind === 'structured' && textfsm !== null && ttp !== null) {
    issue('ttp_template', 'textfsm_template and ttp_template are mutually exclusive');
  }
  if (body.webhook_secret != null && body.webhook_url == null) {
    issue('webhook_secret', 'webhook_secret needs webhook_url');
  }
  if (body.expect_string != null) {
    const problem = UserPattern.problem(body.expect_string);
    if (problem !== null) issue('expect_string', problem);
  }
  for (const [n, a] of (body.answers ?? []).entries()) {
    // The schema already refused line breaks and control characters in prompt and answer.
    const problem = UserPattern.problem(a.prompt);
    if (problem !== null) {
      issues.push({ loc: ['body', 'answers', n, 'prompt'], msg: problem, type: 'value_error' });
    }
    if (a.command !== undefined && a.command >= body.commands.length) {
      issues.push({
        loc: ['body', 'answers', n, 'command'],
        msg: `no command with index ${a.command}: commands has ${body.commands.length} (indexes start at 0)`,
        type: 'value_error',
      });
    }
  }
  for (const [n, p] of (body.error_patterns ?? []).entries()) {
    const problem = UserPattern.problem(p);
    if (problem !== null) {
      issues.push({ loc: ['body', 'error_patterns', n], msg: problem, type: 'value_error' });
    }
  }
  const commitOptions =
    opts.kind === 'config' && typeof body.commit === 'object' ? body.commit : null;
  if (commitOptions !== null)
    issues.push(
      ...commitOptionIssues(
        platform,
        commitOptions,
        opts.builtinDrivers,
        body.save_config === true,
      ),
    );
  if (opts.kind === 'config' && body.dry_run === true) {
    const problem = dryRunProblem(platform, opts.builtinDrivers);
    if (problem !== null) issue('dry_run', problem);
  }
  const limits = opts.limits ?? DEFAULT_DEVICE_INPUT_LIMITS;
  if (body.commands.length > limits.maxCommands) {
    issues.push({
      loc: ['body', 'commands'],
      msg: `ensure this list has at most ${limits.maxCommands} items (SVC_MAX_COMMANDS)`,
      type: 'too_long',
    });
  } else {
    for (const [n, c] of body.commands.entries()) {
      // The schema already refused line breaks and control characters in every command.
      if (c.length > limits.maxCommandLength) {
        issues.push({
          loc: ['body', 'commands', n],
          msg: `ensure this value has at most ${limits.maxCommandLength} characters (SVC_MAX_COMMAND_LENGTH)`,
          type: 'string_too_long',
        });
      }
    }
  }

  if (issues.length > 0 || host === null || username === null || password === null) {
    return { ok: false, issues };
  }
  return {
    ok: true,
    spec: {
      kind: opts.kind,
      context,
      host,
      port: body.port ?? SubmissionDefaults.port,
      platform,
      commands: body.commands,
      conn_timeout: body.conn_timeout ?? SubmissionDefaults.connTimeout,
      read_timeout: body.read_timeout ?? SubmissionDefaults.readTimeout,
      expect_string: body.expect_string ?? null,
      tags: body.tags ?? null,
      webhook_url: body.webhook_url ?? null,
      save_config: opts.kind === 'config' ? (body.save_config ?? false) : false,
      commit: opts.kind === 'config' ? body.commit !== undefined && body.commit !== false : false,
      ...(commitOptions !== null ? { commit_options: commitOptions } : {}),
      textfsm_template: opts.kind === 'structured' ? textfsm : null,
      ttp_template: opts.kind === 'structured' ? ttp : null,
      stop_on_error: opts.kind === 'config' ? false : (body.stop_on_error ?? false),
      ...(ssh !== null ? { ssh: ssh.spec } : {}),
      transcript: body.transcript ?? false,
      ...(opts.kind === 'config' && body.dry_run === true ? { dry_run: true } : {}),
      ...(opts.kind === 'config' && body.checks !== undefined ? { checks: body.checks } : {}),
      ...(opts.kind === 'config' &&
      body.error_patterns !== undefined &&
      body.error_patterns.length > 0
        ? { error_patterns: body.error_patterns }
        : {}),
      ...(body.answers !== undefined && body.answers.length > 0
        ? {
            answers: body.answers.map((a) => ({
              prompt: a.prompt,
              answer: a.answer,
              ...(a.command !== undefined ? { command: a.command } : {}),
            })),
          }
        : {}),
    },
    secrets: {
      username,
      password,
      enable: body.enable ?? null,
      webhook_secret: body.webhook_secret ?? null,
      ...(ssh !== null ? ssh.secrets : {}),
    },
  };
}

const PRIVATE_KEY_BEGIN = /^\s*-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\r?\n/;

/**
 * The `ssh` field split into what the record keeps (profile, algorithms, jump hosts as host,
 * port and user) and what is sealed (keys, passphrases, jump-host passwords). Null when absent.
 */
function normalizeSsh(
  ssh: SshRequestOptions | undefined,
  issues: ValidationIssue[],
): {
  spec: SshSpec;
  secrets: Pick<DeviceSecrets, 'private_key' | 'passphrase' | 'jump_hosts'>;
} | null {
  if (ssh === undefined) return null;
  const issue = (loc: (string | number)[], msg: string) =>
    issues.push({ loc: ['body', 'ssh', ...loc], msg, type: 'value_error' });
  for (const kind of SSH_ALGORITHM_KINDS) {
    const known = SSH_ALGORITHM_NAMES[kind];
    for (const [i, name] of (ssh.algorithms?.[kind] ?? []).entries()) {
      if (!known.includes(name)) {
        issue(
          ['algorithms', kind, i],
          `unsupported ${kind} algorithm ${JSON.stringify(name)}; supported: ${known.join(', ')}`,
        );
      }
    }
  }
  // Never echo key text: the message says what is wrong, not what was sent.
  const keyIssues = (
    at: (string | number)[],
    key: string | null | undefined,
    passphrase: string | null | undefined,
  ) => {
    if (key != null && !PRIVATE_KEY_BEGIN.test(key)) {
      issue(
        [...at, 'private_key'],
        'not a private key: expected PEM or OpenSSH text starting with "-----BEGIN … PRIVATE KEY-----"',
      );
    }
    if (passphrase != null && key == null)
      issue([...at, 'passphrase'], 'passphrase needs private_key');
  };
  keyIssues([], ssh.private_key, ssh.passphrase);
  const jumps = ssh.jump_hosts ?? [];
  const jumpSecrets: JumpHostSecrets[] = [];
  for (const [i, j] of jumps.entries()) {
    if (!isDeviceHost(j.host)) {
      issue(['jump_hosts', i, 'host'], 'value is not a valid IPv4, IPv6 or RFC 1123 host name');
    }
    if (j.password == null && j.private_key == null) {
      issue(['jump_hosts', i], 'a jump host needs password or private_key');
    }
    keyIssues(['jump_hosts', i], j.private_key, j.passphrase);
    jumpSecrets.push({
      password: j.password ?? null,
      private_key: j.private_key ?? null,
      passphrase: j.passphrase ?? null,
    });
  }
  const algorithms =
    ssh.algorithms && Object.keys(ssh.algorithms).length > 0 ? ssh.algorithms : null;
  return {
    spec: {
      profile: ssh.profile ?? null,
      algorithms,
      jump_hosts: jumps.map((j) => ({
        host: j.host,
        port: j.port ?? SubmissionDefaults.port,
        username: j.username,
      })),
    },
    secrets: {
      private_key: ssh.private_key ?? null,
      passphrase: ssh.passphrase ?? null,
      ...(jumps.length > 0 ? { jump_hosts: jumpSecrets } : {}),
    },
  };
}
