import {
  ErrorCode,
  SvcError,
  type CommandStatus,
  type PrePostCheck,
  type CommitOptions,
  type ConfirmOf,
  type JobKind,
} from '@svc/proto';
import type { VerifyHostKey } from './ssh/host-key-trust.js';
import type { SshAlgorithms, SshHop } from './ssh/ssh-connect.js';
import type { SshSessionOptions } from './ssh/ssh-session.js';
import type { SessionTap } from './transcript.js';
import type { ShownWhole } from './redaction.js';

/**
 * One job as the device layer sees it: where to connect, with what, and what to run.
 * Built by the actor from a job envelope after opening its sealed secrets.
 */
export interface DeviceJob {
  jobId: string;
  kind: JobKind;
  /** The device as the job names it (error texts, pool exclusions). */
  host: string;
  /** The canonical address resolved once for this job: what the session connects to. */
  address: string;
  port: number;
  /** A platform identifier from `PLATFORMS`, or `autodetect`. */
  platform: string;
  username: string;
  password: string;
  /** Enable password; null means "use the password". */
  enable: string | null;
  commands: readonly string[];
  /** TCP connect + SSH handshake budget. */
  connTimeoutMs: number;
  /** Longest wait for device output between prompts. */
  readTimeoutMs: number;
  /** Regex (source text) that ends a command's output instead of the prompt. */
  expectString: string | null;
  /** send-config only. */
  saveConfig: boolean;
  commit: boolean;
  /**
   * Questions the commands may ask and what to type (send-command `answers`): `command` is the
   * index of the one command an answer is for, absent for every command. The gateway checked
   * each prompt (RE2) and answer (device text).
   */
  answers?: readonly { prompt: string; answer: string; command?: number }[];
  /** Config jobs: show commands run before and after the change (pre/post checks). */
  checks?: readonly string[];
  /** Config jobs: load, diff and discard (or nothing where there is no candidate). */
  dryRun?: boolean;
  /** Config jobs: commit options (Junos, IOS-XR, EOS); `commit` is true with them. */
  commitOptions?: CommitOptions;
  /** Confirm jobs: the confirmed commit to confirm. */
  confirmOf?: ConfirmOf;
  /** Config jobs: RE2 patterns (checked by the gateway) added to the driver's error patterns. */
  errorPatterns?: readonly string[];
  /** Show jobs: stop at the first rejected command (default: run them all, keep every output). */
  stopOnError?: boolean;
  /** structured only: exactly one or neither. */
  textfsmTemplate: string | null;
  ttpTemplate: string | null;
  /** Aborted on cancellation and on JOB_TIMEOUT: the session is closed at once. */
  signal: AbortSignal;
  /**
   * Called once the device was reached (SSH handshake done, or a warm session taken): failures
   * after that do not say the device is unreachable and must not trip its breaker.
   */
  onReached?: () => void;
  /** Called when jump host `index` logged in and forwarded to the next hop. */
  onJumpPassed?: (index: number) => void;
  /**
   * The job's hold on its device's key (pinned host key): warm sessions are kept and closed by
   * it, so that a device reached at several addresses holds one session. `keepWhileOpen` keeps
   * the device's claim (cluster-wide) while a session to it is open, after the job too.
   */
  claim?: { readonly held: string | null; keepWhileOpen?(closed: Promise<void>): void };
  /** The host-key check of this job's context (absent: any key is accepted). */
  verifyHostKey?: VerifyHostKey;
  /** Private key for public-key login to the device (tried before the password). */
  privateKey?: string | null;
  passphrase?: string | null;
  /** Algorithms offered on every hop (the job's SSH profile); absent: the library defaults. */
  algorithms?: SshAlgorithms;
  /** Jump hosts in order, each resolved, checked and with its own credentials and host-key check. */
  jumpHosts?: readonly SshHop[];
  /** Sees the command session's bytes (the job's transcript). */
  recorder?: SessionTap;
}

/** How to open a session for `job`: the device, its login, algorithms and jump hosts. */
export function sessionOptionsOf(job: DeviceJob): SshSessionOptions & { readTimeoutMs: number } {
  return {
    host: job.host,
    address: job.address,
    port: job.port,
    username: job.username,
    password: job.password,
    connTimeoutMs: job.connTimeoutMs,
    readTimeoutMs: job.readTimeoutMs,
    ...(job.onReached ? { onHandshake: job.onReached } : {}),
    ...(job.onJumpPassed ? { onJumpPassed: job.onJumpPassed } : {}),
    ...(job.verifyHostKey ? { verifyHostKey: job.verifyHostKey } : {}),
    ...(job.claim?.keepWhileOpen
      ? { onOpen: (closed: Promise<void>) => job.claim?.keepWhileOpen?.(closed) }
      : {}),
    ...(job.privateKey != null ? { privateKey: job.privateKey } : {}),
    ...(job.passphrase != null ? { passphrase: job.passphrase } : {}),
    ...(job.algorithms !== undefined ? { algorithms: job.algorithms } : {}),
    ...(job.jumpHosts !== undefined && job.jumpHosts.length > 0
      ? { jumpHosts: job.jumpHosts }
      : {}),
  };
}

/**
 * The secrets of a job besides the password and enable secret (key, passphrase, jump-host
 * credentials): hashed into warm-session keys and removed from error texts.
 */
export function transportSecretsOf(job: DeviceJob): string[] {
  const out: string[] = [];
  for (const s of [job.privateKey, job.passphrase]) if (s) out.push(s);
  for (const hop of job.jumpHosts ?? []) {
    for (const s of [hop.password, hop.privateKey, hop.passphrase]) if (s) out.push(s);
  }
  return out;
}

/** The non-secret route of a job's session (algorithms, jump hosts): part of warm-session keys. */
export function transportRouteOf(job: DeviceJob): string {
  const jumps = (job.jumpHosts ?? []).map((h) => [h.address ?? h.host, h.port, h.username]);
  return JSON.stringify([job.algorithms ?? null, jumps]);
}

export interface DeviceOutcome {
  /** Command → output text (or parsed records for structured jobs), in command order. */
  results: Record<string, unknown>;
  /** Set when the job asked for `autodetect`. */
  detectedPlatform: string | null;
  /** Whether a warm (pooled) session served the job. */
  pooled: boolean;
  /** How each command of the job fared, in order (config: then the commit and save steps). */
  commandStatus: CommandStatus[] | null;
  /** Config workflow fields of the job record (a dry run's `diff`). */
  workflow?: {
    diff?: string | null;
    checks?: Record<string, PrePostCheck>;
    /** Confirmed commits: when the device rolls back unless confirmed (ISO time). */
    confirm_by?: string;
  };
}

/**
 * A job that failed once it reached the device: its code and text, and what the record keeps
 * whatever ended it: every output the device gave, each command's status, and the platform
 * autodetect found (null when it did not run or did not finish).
 */
export class DeviceJobFailure extends SvcError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly results: Record<string, unknown>,
    readonly commandStatus: CommandStatus[] | null,
    readonly detectedPlatform: string | null = null,
  ) {
    super(code, message);
  }

  /** The same failure with another text (secrets removed) and outputs (parsed). */
  with(message: string, results: Record<string, unknown>): DeviceJobFailure {
    return new DeviceJobFailure(
      this.code,
      message,
      results,
      this.commandStatus,
      this.detectedPlatform,
    );
  }
}

/**
 * A job in which the device rejected commands (or a configuration line, commit or save):
 * COMMAND_ERROR, carrying every output the device gave and each command's status.
 */
export class CommandsRejected extends DeviceJobFailure {
  declare readonly commandStatus: CommandStatus[];

  constructor(
    message: string,
    results: Record<string, unknown>,
    commandStatus: CommandStatus[],
    detectedPlatform: string | null = null,
  ) {
    super(ErrorCode.COMMAND_ERROR, message, results, commandStatus, detectedPlatform);
  }

  override with(message: string, results: Record<string, unknown>): CommandsRejected {
    return new CommandsRejected(message, results, this.commandStatus, this.detectedPlatform);
  }
}

/**
 * Runs one job against its device. Resolves with the outcome or rejects with an `SvcError`
 * whose code says exactly what failed (CONNECTION_REFUSED, AUTH_FAILED, READ_TIMEOUT, ...).
 * Error texts never contain the password or enable secret.
 */
export type RunDeviceJob = (job: DeviceJob) => Promise<DeviceOutcome>;

/**
 * Where a job's error texts say it connected: host, address and port of the device and of each
 * jump host, shown whole whatever its secrets are. Commands and user names are not kept: a
 * secret typed as a whole token of a command is masked there too.
 */
export function shownWholeOf(job: DeviceJob): ShownWhole {
  return {
    host: job.host,
    address: job.address,
    port: job.port,
    more: (job.jumpHosts ?? []).flatMap((h) => [
      `${h.host}:${h.port}`,
      h.host,
      ...(h.address !== undefined ? [h.address] : []),
    ]),
  };
}
