// One way for a test to wait for a condition: poll it until it holds, or fail at a deadline
// naming what did not happen. A negative assertion waits this way for the positive event that
// proves the thing would have happened by then, never for a length of time.
import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitOptions {
  /** Fail after this long (ms). Default 30 s. */
  timeoutMs?: number;
  /** Between two checks (ms). Default 25. */
  everyMs?: number;
}

/**
 * Resolves with the first value of `check` that is neither `undefined`, `null` nor `false`;
 * rejects with `what` once `timeoutMs` has passed.
 */
export async function waitUntil<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  what: string,
  options: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() >= deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(options.everyMs ?? 25);
  }
}
