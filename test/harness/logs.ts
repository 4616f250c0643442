import { Writable } from 'node:stream';
import { waitUntil, type WaitOptions } from './wait.js';

/** Every line written to `sink`: a `logSink` of startInProcessStack, or any pino destination. */
export interface LogCapture {
  sink: Writable;
  /** The lines as written (to look for text anywhere, a secret say). */
  lines: string[];
  /** The same lines as JSON records. */
  records: Record<string, unknown>[];
}

/** A log destination that keeps every line it is given, for tests that read logs. */
export function captureLogs(): LogCapture {
  const lines: string[] = [];
  const records: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line) continue;
        lines.push(line);
        records.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { sink, lines, records };
}

/** Resolves once `logs` holds a line of job `jobId` saying `message` (waits as `waitUntil`). */
export async function waitForJobLine(
  logs: LogCapture,
  jobId: string,
  message: string,
  what: string,
  options: WaitOptions = {},
): Promise<void> {
  await waitUntil(
    () => logs.records.some((r) => r['job_id'] === jobId && r['message'] === message) || null,
    what,
    options,
  );
}
