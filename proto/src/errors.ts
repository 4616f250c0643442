/**
 * Error codes of the service: the machine-parseable `error_code` of a failed job and the codes
 * that reach HTTP. One table decides retryability and, where it applies, the HTTP status.
 * Never rename a code: clients branch on them. `docs/errors.md` documents each one.
 */
export const ErrorCode = {
  CONNECTION_TIMEOUT: 'CONNECTION_TIMEOUT',
  CONNECTION_REFUSED: 'CONNECTION_REFUSED',
  HOST_UNREACHABLE: 'HOST_UNREACHABLE',
  AUTH_FAILED: 'AUTH_FAILED',
  ENABLE_REFUSED: 'ENABLE_REFUSED',
  READ_TIMEOUT: 'READ_TIMEOUT',
  SESSION_DROPPED: 'SESSION_DROPPED',
  COMMAND_ERROR: 'COMMAND_ERROR',
  PLATFORM_AUTODETECT_FAILED: 'PLATFORM_AUTODETECT_FAILED',
  CIRCUIT_OPEN: 'CIRCUIT_OPEN',
  DEVICE_LOCKED_OUT: 'DEVICE_LOCKED_OUT',
  JOB_TIMEOUT: 'JOB_TIMEOUT',
  WORKER_LOST: 'WORKER_LOST',
  NOT_ENQUEUED: 'NOT_ENQUEUED',
  CANCELLED: 'CANCELLED',
  TEMPLATE_ERROR: 'TEMPLATE_ERROR',
  ADDRESS_NOT_ALLOWED: 'ADDRESS_NOT_ALLOWED',
  HOST_KEY_MISMATCH: 'HOST_KEY_MISMATCH',
  HOST_KEY_UNKNOWN: 'HOST_KEY_UNKNOWN',
  SSH_NEGOTIATION_FAILED: 'SSH_NEGOTIATION_FAILED',
  SSH_KEY_INVALID: 'SSH_KEY_INVALID',
  RESULT_TOO_LARGE: 'RESULT_TOO_LARGE',
  CONFIRM_EXPIRED: 'CONFIRM_EXPIRED',
  ACTOR_OUTDATED: 'ACTOR_OUTDATED',
  INTERNAL: 'INTERNAL',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface ErrorCodeInfo {
  /** Whether submitting the same job again may succeed without a change on the caller's side. */
  readonly retryable: boolean;
  /** What the code means, for documentation and error texts. */
  readonly meaning: string;
}

export const ERROR_CODES: Readonly<Record<ErrorCode, ErrorCodeInfo>> = {
  CONNECTION_TIMEOUT: { retryable: true, meaning: 'TCP connection or SSH handshake timed out' },
  CONNECTION_REFUSED: { retryable: true, meaning: 'the device refused the TCP connection' },
  HOST_UNREACHABLE: { retryable: true, meaning: 'the host name did not resolve or no route' },
  AUTH_FAILED: { retryable: false, meaning: 'the device rejected the credentials' },
  ENABLE_REFUSED: {
    retryable: false,
    meaning:
      "the device refused every enable command of the platform without asking for a password (the form does not exist on this image, or the user may not use it); the error holds the device's answers",
  },
  READ_TIMEOUT: { retryable: true, meaning: 'the device did not answer within read_timeout' },
  SESSION_DROPPED: { retryable: true, meaning: 'the device closed the session mid-command' },
  COMMAND_ERROR: { retryable: false, meaning: 'the device rejected a command' },
  PLATFORM_AUTODETECT_FAILED: { retryable: false, meaning: 'platform autodetect failed' },
  CIRCUIT_OPEN: { retryable: true, meaning: 'too many recent connection failures to the device' },
  DEVICE_LOCKED_OUT: { retryable: false, meaning: 'too many failed logins for this user' },
  JOB_TIMEOUT: { retryable: true, meaning: 'the job ran longer than JOB_TIMEOUT' },
  WORKER_LOST: {
    retryable: false,
    meaning:
      'the actor host running the job stopped, or went silent past WORKER_STALE_THRESHOLD (outputs its device gave after that are added to the record)',
  },
  NOT_ENQUEUED: {
    retryable: true,
    meaning:
      'the job was recorded but its message never reached the queue (the gateway stopped or the store failed while accepting it), or the store lost it from the queue before an actor host started it (or received it); it never ran',
  },
  CANCELLED: { retryable: false, meaning: 'the job was cancelled by its submitter' },
  TEMPLATE_ERROR: {
    retryable: false,
    meaning:
      "the parsing template is invalid or failed on the device's output; each output is kept as the device gave it",
  },
  ADDRESS_NOT_ALLOWED: {
    retryable: false,
    meaning: "the device's resolved address is outside the context's reachability policy",
  },
  HOST_KEY_MISMATCH: {
    retryable: false,
    meaning: 'the device presented a host key other than the pinned one (possible interception)',
  },
  HOST_KEY_UNKNOWN: {
    retryable: false,
    meaning: 'no host key is loaded for the device and its context trusts only loaded keys',
  },
  SSH_NEGOTIATION_FAILED: {
    retryable: false,
    meaning:
      'the service and the device (or a jump host) share no SSH algorithm of one kind; the error names what each side offered',
  },
  SSH_KEY_INVALID: {
    retryable: false,
    meaning: 'a private key of the job cannot be read (unsupported format or wrong passphrase)',
  },
  RESULT_TOO_LARGE: {
    retryable: false,
    meaning:
      'the results of the job are larger than SVC_MAX_RESULT_BYTES; the error names both sizes',
  },
  CONFIRM_EXPIRED: {
    retryable: false,
    meaning:
      'a confirm job found no confirmed commit waiting on the device: its window passed and the device rolled the change back by itself',
  },
  ACTOR_OUTDATED: {
    retryable: true,
    meaning:
      'the actor host given the job lacks a capability the job needs (an earlier release, placed there by a dispatcher of an earlier release): nothing was sent to the device; upgrade actor hosts, then dispatchers, then gateways (docs/operations.md)',
  },
  INTERNAL: { retryable: true, meaning: 'an internal error of the service' },
};

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

/** A failure with a code. Retryability is data taken from the table, not the class. */
export class SvcError extends Error {
  override readonly name = 'SvcError';
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.retryable = ERROR_CODES[code].retryable;
  }

  /** The form that crosses NATS and lands in job records. */
  toWire(): WireError {
    return { code: this.code, message: this.message, retryable: this.retryable };
  }

  static fromWire(wire: WireError): SvcError {
    return new SvcError(isErrorCode(wire.code) ? wire.code : ErrorCode.INTERNAL, wire.message);
  }

  /** Wraps anything thrown into a SvcError; unknown failures become INTERNAL. */
  static from(err: unknown): SvcError {
    if (err instanceof SvcError) return err;
    const message = err instanceof Error ? err.message : String(err);
    return new SvcError(ErrorCode.INTERNAL, message, { cause: err });
  }
}

export interface WireError {
  code: string;
  message: string;
  retryable: boolean;
}

/** Settings that cannot be used: every problem at once, each naming its variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
  }
}
