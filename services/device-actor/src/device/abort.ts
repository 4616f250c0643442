import { SvcError, ErrorCode } from '@svc/proto';

/** What an aborted job (cancelled, timed out) means for the device layer's waits. */

export function cancelled(): SvcError {
  return new SvcError(ErrorCode.CANCELLED, 'the job was cancelled');
}

/** The error an aborted signal stands for: its SvcError reason, or CANCELLED. */
export function abortError(signal: AbortSignal): SvcError {
  const reason: unknown = signal.reason;
  return reason instanceof SvcError ? reason : cancelled();
}

/** `work`, unless `signal` aborts first (then its SvcError reason). */
export function untilStopped<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(abortError(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
