/**
 * Exit codes of `svc`, stable for scripts (docs/cli.md lists them). One code per kind of
 * outcome, so a script can tell "the device said no" from "the service is down".
 */
export const ExitCode = {
  /** Everything asked for succeeded. */
  ok: 0,
  /** The work ran and failed: a job failed, a batch had failed jobs, health is not healthy. */
  failed: 1,
  /** Bad flags, arguments, inventory or config file: nothing was sent. */
  usage: 2,
  /** 401 or 403: missing, wrong or insufficient credentials, or another caller's job. */
  auth: 3,
  /** 404: no such job, batch or key. */
  notFound: 4,
  /** The service could not be reached (connection, TLS, timeout) or answered 503. */
  unreachable: 5,
  /** The service refused the request: 409, 422, 429 (the message says why). */
  rejected: 6,
  /** `--timeout` passed while waiting for a job or batch (it keeps running). */
  timeout: 7,
  /** The job or batch ended cancelled (by a caller or a rollout stop). */
  cancelled: 8,
  /** A bug in svc itself. */
  internal: 70,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** A failure that ends the command with its exit code and a one-line message on stderr. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The exit code for an HTTP status the service answered with (non-2xx). */
export function exitCodeForStatus(status: number): ExitCode {
  if (status === 401 || status === 403) return ExitCode.auth;
  if (status === 404) return ExitCode.notFound;
  if (status === 409 || status === 422 || status === 429 || status === 400)
    return ExitCode.rejected;
  if (status === 502 || status === 503 || status === 504) return ExitCode.unreachable;
  return ExitCode.internal;
}
