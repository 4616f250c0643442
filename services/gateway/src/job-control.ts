import { isTerminal, type JobRecord } from '@svc/proto';
import { AuditEvent, type AuditLog } from '@svc/telemetry';
import type { Jobs } from '@svc/jobs';
import { mayAccessJob, type Caller } from './caller.js';
import { HttpError } from './http-errors.js';

/** Reading and cancelling jobs on behalf of a caller. */
export class JobControl {
  constructor(
    private readonly jobs: Jobs,
    private readonly audit: AuditLog,
  ) {}

  /** The caller's job (or, for admin keys, one of their contexts), or 404 / 403. */
  async read(caller: Caller, jobId: string): Promise<JobRecord> {
    const stored = await this.jobs.get(jobId);
    if (!stored) throw new HttpError(404, `job ${jobId} not found`);
    if (!mayAccessJob(caller, stored.record.owner, stored.record.spec.context)) {
      throw HttpError.foreignJob();
    }
    return stored.record;
  }

  /** `read`, with the results in place (also those kept in the object store). */
  async readWithResults(caller: Caller, jobId: string): Promise<JobRecord> {
    return this.jobs.withResults(await this.read(caller, jobId));
  }

  /**
   * Cancels a queued or started job: the record becomes `cancelled` at once (so an actor that
   * has not started it never will), and a running session is told to abort, best effort.
   * Returns false when the job had already ended.
   */
  async cancel(
    caller: Caller,
    jobId: string,
    origin: { source: string; requestId: string },
  ): Promise<boolean> {
    const started = performance.now();
    const record = await this.read(caller, jobId);
    if (isTerminal(record.status)) return false;
    // The running session (if any) is told to abort, and the event goes out, by `cancel`.
    const cancelled = await this.jobs.cancel(jobId, 'job cancelled by its submitter');
    if (!cancelled) return false;
    const updated = cancelled.record;
    this.audit.emit(AuditEvent.jobCancelled, {
      request_id: origin.requestId,
      job_id: jobId,
      username: updated.username,
      device_ip: updated.spec.host,
      platform: updated.spec.platform,
      status: 'cancelled',
      duration_ms: performance.now() - started,
      caller: caller.id,
      owner: updated.owner,
      source_ip: origin.source,
      context: updated.spec.context,
    });
    return true;
  }
}
