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
  if (opts.basic) issues.push(...basicCredentialIssues(opts.basic));
  if (opts.basic) {
    // With Basic auth the caller's own credentials are the device credentials.
    username = opts.basic.username;
    password = opts.basic.password;
  } else {
    if (!username) issue('username', 'field required with Bearer authentication', 'missing');
    if (!password) issue('password', 'field required with Bearer authentication', 'missing');
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
      commit: opts.kind === 'config' ? (body.commit ?? false) : false,
      textfsm_template: opts.kind === 'structured' ? textfsm : null,
      ttp_template: opts.kind === 'structured' ? ttp : null,
      stop_on_error: opts.kind === 'config' ? false : (body.stop_on_error ?? false),
    },
    secrets: {
      username,
      password,
      enable: body.enable ?? null,
      webhook_secret: body.webhook_secret ?? null,
    },
  };
}
