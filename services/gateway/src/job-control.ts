import type { NatsConnection } from '@nats-io/transport-node';
import { Subjects, encodeJson, isTerminal, type JobRecord, type JobStore } from '@svc/proto';
import { mayAccessJob, type Caller } from './caller.js';
import { HttpError } from './http-errors.js';

/** Reading and cancelling jobs on behalf of a caller. */
export class JobControl {
  constructor(
    private readonly nc: NatsConnection,
    private readonly jobs: JobStore,
  ) {}

  /** The caller's job, or 404 (unknown) / 403 (someone else's). */
  async read(caller: Caller, jobId: string): Promise<JobRecord> {
    const stored = await this.jobs.get(jobId);
    if (!stored) throw new HttpError(404, `job ${jobId} not found`);
    if (!mayAccessJob(caller, stored.record.owner)) {
      throw new HttpError(403, 'this job belongs to another caller');
    }
    return stored.record;
  }

  /**
   * Cancels a queued or started job: the record becomes `cancelled` at once (so an actor that
   * has not started it never will), and a running session is told to abort, best effort.
   * Returns false when the job had already ended.
   */
  async cancel(caller: Caller, jobId: string): Promise<boolean> {
    const record = await this.read(caller, jobId);
    if (isTerminal(record.status)) return false;
    let wasRunning = false;
    const updated = await this.jobs.transition(jobId, (current) => {
      if (isTerminal(current.status)) return null;
      wasRunning = current.status === 'started';
      return {
        ...current,
        status: 'cancelled',
        ended_at: new Date().toISOString(),
        error: 'job cancelled by its submitter',
        error_code: 'CANCELLED',
        error_retryable: false,
      };
    });
    if (!updated) return false;
    if (wasRunning) this.nc.publish(Subjects.cancel(jobId), encodeJson({ job_id: jobId }));
    await this.jobs.publishEvent(updated).catch(() => undefined);
    return true;
  }
}
