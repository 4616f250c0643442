import { SvcError, ErrorCode } from '@svc/proto';

/**
 * Error classification of a connection and login: each failure of a hop becomes a SvcError
 * with the precise code and a text that names the hop (and never a secret).
 */

const UNREACHABLE_CODES = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EAI_NONAME',
  'EAI_FAIL',
]);

/** Why a private key could not be read, without any of its text. */
export function keyProblem(err: Error, passphrase: string | null | undefined): string {
  if (/passphrase/i.test(err.message)) {
    return passphrase ? 'wrong passphrase' : 'the key is encrypted and no passphrase was given';
  }
  return /unsupported/i.test(err.message)
    ? 'unsupported key format (PEM or OpenSSH RSA, ECDSA or Ed25519 keys are read)'
    : 'malformed key';
}

/** What the SSH library logs of one side's offer, and the kind its failure names. */
const OFFER_LINE =
  /^Handshake: \((local|remote)\) (KEX method|Host key format|C->S cipher|S->C cipher|C->S MAC|S->C MAC): (.*)$/;
const FAILURE_KIND: readonly [RegExp, string, string][] = [
  [/key exchange/i, 'KEX method', 'key exchange (kex)'],
  [/host key/i, 'Host key format', 'host key (serverHostKey)'],
  [/C->S cipher/, 'C->S cipher', 'cipher'],
  [/S->C cipher/, 'S->C cipher', 'cipher'],
  [/C->S MAC/, 'C->S MAC', 'MAC (hmac)'],
  [/S->C MAC/, 'S->C MAC', 'MAC (hmac)'],
];
/** Markers in the kex list that are not algorithms (extension and strict-kex signals). */
const NOT_ALGORITHMS = /^(?:ext-info-[cs]|kex-strict-[cs]-v00@openssh\.com)$/;

/**
 * The lists each side offered during one handshake, read from the SSH library's debug lines,
 * so that a failed negotiation says what the service and the device had to choose from.
 */
export class NegotiationLog {
  private readonly offers = new Map<string, string[]>();

  record(line: string): void {
    const m = OFFER_LINE.exec(line);
    if (m === null) return;
    const names = m[3]!.split(',').filter((a) => a !== '' && !NOT_ALGORITHMS.test(a));
    this.offers.set(`${m[1]!} ${m[2]!}`, names);
  }

  /** SSH_NEGOTIATION_FAILED for a handshake that found no common algorithm, else null. */
  failure(err: Error & { level?: string }, label: string): SvcError | null {
    if (err.level !== 'handshake' || !/no matching/i.test(err.message)) return null;
    const kind = FAILURE_KIND.find(([p]) => p.test(err.message));
    const ours = kind ? this.offers.get(`local ${kind[1]}`) : undefined;
    const theirs = kind ? this.offers.get(`remote ${kind[1]}`) : undefined;
    const side = label.startsWith('jump host') ? `the ${label}` : `the device ${label}`;
    const what = kind?.[2] ?? 'algorithm';
    const list = (names: string[] | undefined) => (names ? names.join(', ') : 'unknown');
    return new SvcError(
      ErrorCode.SSH_NEGOTIATION_FAILED,
      `SSH negotiation with ${side} failed: no common ${what} algorithm; the service offered: ${list(ours)}; ${side} offered: ${list(theirs)}. Old devices need ssh.profile "legacy" (or SSH_PROFILE) or ssh.algorithms.`,
    );
  }
}

export function connectError(
  err: Error & { level?: string; code?: string },
  where: string,
  username: string,
  authFailed: boolean,
): SvcError {
  if (authFailed || err.level === 'client-authentication') {
    return new SvcError(
      ErrorCode.AUTH_FAILED,
      `authentication failed for user ${username} on ${where}`,
    );
  }
  if (err.code === 'ECONNREFUSED') {
    return new SvcError(ErrorCode.CONNECTION_REFUSED, `connection refused by ${where}`, {
      cause: err,
    });
  }
  if (err.code !== undefined && UNREACHABLE_CODES.has(err.code)) {
    return new SvcError(ErrorCode.HOST_UNREACHABLE, `host unreachable: ${where} (${err.code})`, {
      cause: err,
    });
  }
  if (err.code === 'ETIMEDOUT' || err.level === 'client-timeout') {
    return new SvcError(ErrorCode.CONNECTION_TIMEOUT, `connection timeout to ${where}`, {
      cause: err,
    });
  }
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE') {
    return new SvcError(
      ErrorCode.SESSION_DROPPED,
      `${where.startsWith('jump host') ? 'the' : 'the device'} ${where} reset the connection during login`,
      { cause: err },
    );
  }
  if (err.level === 'handshake') {
    // A protocol failure is not a slow network: retrying the same job meets it again.
    return new SvcError(
      ErrorCode.SSH_NEGOTIATION_FAILED,
      `SSH handshake with ${where} failed: ${err.message}`,
      { cause: err },
    );
  }
  return new SvcError(
    ErrorCode.CONNECTION_TIMEOUT,
    `no SSH session with ${where}: ${err.message}`,
    { cause: err },
  );
}
