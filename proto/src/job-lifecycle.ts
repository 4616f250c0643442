import type { KV } from '@nats-io/kv';
import { SvcError, type ErrorCode } from './errors.js';
import { FUNC_NAMES, type FailedJob, type JobRecord } from './messages/job.js';
import { encodeJson, type JobStore } from './job-store.js';
import type { FromOf } from './job-states.js';

/**
 * The end of a job, shared by the actor (device failures) and the reaper (lost hosts): the
 * record's terminal transition, the failed-job registry entry and the release of its dedup key.
 */
export class JobLifecycle {
  constructor(
    readonly jobs: JobStore,
    private readonly failed: KV,
    private readonly dedup: KV,
    /** Told of every job this lifecycle moved to failed (the failure counter by error_code). */
    private readonly onFailed: (record: JobRecord) => void = () => undefined,
  ) {}

  /**
   * Moves a job from `from` to failed. Returns the record written, or null when the job was no
   * longer in `from` (cancelled, or already ended elsewhere).
   */
  async fail(
    jobId: string,
    from: FromOf<'failed'>,
    error: SvcError,
    patch: Partial<JobRecord> = {},
  ): Promise<JobRecord | null> {
    // The end time marks this attempt, so a retry after a lost answer recognises its own write.
    const endedAt = new Date().toISOString();
    const written = await this.jobs.transition(jobId, (current) =>
      current.status !== from
        ? current.status === 'failed' && current.ended_at === endedAt
          ? current
          : null
        : {
            ...current,
            ...patch,
            status: 'failed',
            ended_at: endedAt,
            error: error.message,
            error_code: error.code,
            error_retryable: error.retryable,
          },
    );
    if (written) {
      this.onFailed(written);
      // Secondary records: a store outage must not turn an ended job into a lost one.
      await retryTransient(() => this.recordFailure(written)).catch(() => undefined);
      await retryTransient(() => this.releaseDedup(written)).catch(() => undefined);
    }
    return written;
  }

  async recordFailure(record: JobRecord): Promise<void> {
    const entry: FailedJob = {
      job_id: record.job_id,
      error: record.error,
      error_code: record.error_code,
      error_retryable: record.error_retryable,
      failed_at: record.ended_at,
      func: FUNC_NAMES[record.spec.kind],
      host: record.spec.host,
      platform: record.spec.platform,
      port: record.spec.port,
      owner: record.owner,
      context: record.spec.context,
      tags: record.spec.tags,
      record,
    };
    await this.failed.put(record.job_id, encodeJson(entry));
  }

  /** Deletes the job's dedup key if it still points at this job. */
  async releaseDedup(record: JobRecord): Promise<void> {
    if (!record.dedup_key) return;
    const entry = await this.dedup.get(record.dedup_key);
    if (entry?.operation === 'PUT' && new TextDecoder().decode(entry.value) === record.job_id) {
      await this.dedup.delete(record.dedup_key).catch(() => undefined);
    }
  }
}

/** Runs `fn` again through store outages (a cluster electing a leader) for up to `forMs`. */
export async function retryTransient<T>(fn: () => Promise<T>, forMs = 30_000): Promise<T> {
  const deadline = Date.now() + forMs;
  for (let pause = 100; ; pause = Math.min(pause * 2, 2000)) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

export function failure(code: ErrorCode, message: string): SvcError {
  return new SvcError(code, message);
}
