/**
 * How the service logs in: a private key first when the job has one (it costs no password
 * failure), then exactly one attempt that carries the password per connection, so a wrong
 * password costs the account one failure on the device's AAA server (not two, as password
 * followed by keyboard-interactive with the same password would), and the password is typed only
 * into a prompt that asks for it.
 */

/** ssh2's `authHandler` in its simple form: the next method name, or false to give up. */
export type AuthStep = 'none' | 'publickey' | 'password' | 'keyboard-interactive' | false;

/** What a login has to offer, and what it already tried. */
export interface AuthMeans {
  /** Default true. */
  hasPassword?: boolean;
  hasKey?: boolean;
  keyTried?: boolean;
}

/**
 * Picks the next method from what the server still accepts (`null` before the first answer: ask
 * with `none` to learn the list). `publickey` first when there is a key; then `password`, or
 * `keyboard-interactive` only when the server does not take `password`. After one
 * password-bearing attempt (`attempted`), stop.
 */
export function nextAuthStep(
  methodsLeft: readonly string[] | null,
  attempted: boolean,
  means: AuthMeans = {},
): AuthStep {
  if (methodsLeft === null) return 'none';
  if (means.hasKey === true && means.keyTried !== true && methodsLeft.includes('publickey'))
    return 'publickey';
  if (attempted || means.hasPassword === false) return false;
  if (methodsLeft.includes('password')) return 'password';
  if (methodsLeft.includes('keyboard-interactive')) return 'keyboard-interactive';
  return false;
}

/**
 * Whether a keyboard-interactive prompt asks for the account's password (`Password:`,
 * `user@host's password:`, `Passcode`), and not for a one-time code, a new password, a user
 * name or a yes/no question.
 */
export function isPasswordPrompt(prompt: string): boolean {
  const p = prompt.trim().toLowerCase();
  if (p.length === 0 || p.length > 200) return false;
  if (/\b(new|again|retype|re-enter|confirm|one[- ]time|otp|token|verification)\b/.test(p))
    return false;
  return /\b(password|passcode|passphrase)\b\s*(for [^:]*)?:?\s*$/.test(p) || /password:/.test(p);
}

/** Answers to one keyboard-interactive round: the password where asked for it, else empty. */
export function keyboardAnswers(
  prompts: readonly { prompt: string }[],
  password: string,
): string[] {
  return prompts.map((p) => (isPasswordPrompt(p.prompt) ? password : ''));
}
