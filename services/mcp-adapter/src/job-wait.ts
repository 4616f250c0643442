import { setTimeout as sleep } from 'node:timers/promises';
import { isRecord, type ApiClient } from './api-client.js';
import { AdapterError, AdapterErrorCode } from './errors.js';

/** A job record as GET /v2/send-command/{job_id} returns it; other fields pass through. */
export interface JobRecord extends Record<string, unknown> {
  job_id: string;
  status: string;
}

/** Statuses after which a job never changes. `cancelled` is the v2 cancel outcome (DESIGN.md). */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['finished', 'failed', 'cancelled']);

export interface JobWaitOptions {
  pollIntervalMs: number;
  jobTimeoutMs: number;
  /** Aborted when the MCP client cancels the tool call: polling stops at once. */
  signal?: AbortSignal;
  /** Called on each status change, for progress notifications. */
  onStatus?: (status: string) => void;
}

export function asJobRecord(body: unknown, what: string): JobRecord {
  if (isRecord(body) && typeof body['job_id'] === 'string' && typeof body['status'] === 'string') {
    return body as JobRecord;
  }
  throw AdapterError.of(AdapterErrorCode.BAD_RESPONSE, `${what}: the answer is not a job record`);
}

/**
 * Polls `{resultPath}/{jobId}` every poll interval until the job reaches a terminal status or
 * the wait deadline passes. Retryable API errors (429, 503, a request timeout) do not end the
 * wait: a short store outage must not lose track of a job that is running. Anything else does.
 */
export async function waitForJob(
  api: ApiClient,
  resultPath: string,
  jobId: string,
  options: JobWaitOptions,
): Promise<JobRecord> {
  const deadline = Date.now() + options.jobTimeoutMs;
  const path = `${resultPath}/${encodeURIComponent(jobId)}`;
  let lastStatus = 'queued';
  for (;;) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      throw AdapterError.of(
        AdapterErrorCode.JOB_WAIT_TIMEOUT,
        `job ${jobId} still ${lastStatus} after ${options.jobTimeoutMs / 1000} s; it keeps running: ` +
          'call get_job_result with this job_id later, or cancel_job',
        { jobId, jobStatus: lastStatus },
      );
    }
    await sleep(Math.min(options.pollIntervalMs, remaining), undefined, { signal: options.signal });
    let record: JobRecord;
    try {
      record = asJobRecord(
        (await api.get(path, { signal: options.signal })).body,
        `GET ${resultPath}`,
      );
    } catch (err) {
      if (err instanceof AdapterError && err.retryable === true) continue;
      if (err instanceof AdapterError) {
        throw new AdapterError(err.code, err.message, err.retryable, {
          ...err.details,
          jobId,
          jobStatus: lastStatus,
        });
      }
      throw err;
    }
    if (record.status !== lastStatus) {
      lastStatus = record.status;
      options.onStatus?.(lastStatus);
    }
    if (TERMINAL_STATUSES.has(record.status)) return record;
  }
}
