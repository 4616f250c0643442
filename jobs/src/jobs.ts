import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  Buckets,
  Streams,
  ErrorCode,
  SvcError,
  FUNC_NAMES,
  Subjects,
  encodeJson,
  type FailedJob,
  type JobEnvelope,
  type JobRecord,
} from '@svc/proto';
import { retryTransient, type Stores } from '@svc/nats';
import { DEFAULT_MAX_RESULT_BYTES, JobResults, type StoredResults } from './results.js';
import type { FromOf } from './states.js';
import {
  JobStore,
  placementMayStart,
  queuedRecordOf,
  type RecordFollower,
  type StoredRecord,
} from './store.js';

export interface JobsOptions {
  /**
   * How long a state change keeps retrying through store outages (a cluster electing a new
   * leader answers nothing for seconds): long for actors, whose job would otherwise stay
   * `started` forever; short for the gateway, which answers 503 instead.
   */
  transientRetryMs?: number;
  /** SVC_MAX_RESULT_BYTES: the largest results a job may keep (actor hosts write them). */
  maxResultBytes?: number;
  /** Told of every job this process moved to failed (the failure counter by error_code). */
  onFailed?: (record: JobRecord) => void;
}

/** A job just recorded as `queued`. */
export interface Enqueued {
  record: JobRecord;
  /** The record's revision (carried in the envelope: `record_revision`). */
  revision: number;
  /**
   * Publishes the `queued` event of a job enqueued with `announce: false`: a held job, or one
   * whose envelope the caller publishes in the same turn (both leave in one socket write).
   */
  announce(): void;
}

/** What a finished job keeps besides its status and end time (results as `keepResults` kept them). */
export type FinishedFields = StoredResults & Partial<JobRecord>;

/**
 * Everything that happens to a job, and nothing else writes a job's status: each operation is
 * one compare-and-set on the record (`queued → started | cancelled | failed`, `started →
 * finished | failed | cancelled`, nothing out of a terminal status: `states.ts`), then what
 * follows from it — its event on `svc.events.job.<id>.<status>` (and the batch's subject), the
 * failed-job registry entry, the release of the dedup key, results too large for a record kept
 * in the object store. One per process, built by `Jobs.open`.
 */
export class Jobs {
  private constructor(
    private readonly store: JobStore,
    private readonly nc: NatsConnection,
    private readonly failed: KV,
    private readonly dedup: KV,
    private readonly results: JobResults,
    private readonly onFailed: (record: JobRecord) => void,
  ) {}

  /** The one constructor every service uses (on the buckets `ensureTopology` made). */
  static async open(nc: NatsConnection, stores: Stores, options: JobsOptions = {}): Promise<Jobs> {
    const results = await JobResults.open(nc, options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES);
    const store = new JobStore(
      stores[Buckets.jobs],
      nc,
      options.transientRetryMs,
      stores[Buckets.failed],
      results,
    );
    return new Jobs(
      store,
      nc,
      stores[Buckets.failed],
      stores[Buckets.dedup],
      results,
      options.onFailed ?? (() => undefined),
    );
  }

  /** The job's record (or, once it has expired from `svc-jobs`, the failed registry's copy). */
  get(jobId: string): Promise<StoredRecord | null> {
    return this.store.get(jobId);
  }

  /** The record with its results in place (also those kept in the object store). */
  withResults(record: JobRecord): Promise<JobRecord> {
    return this.store.withResults(record);
  }

  /**
   * Follows the job's record as it changes (its current value first): what a job's SSE stream
   * reads, since a job's events are not stored per state (docs/events.md).
   */
  follow(
    jobId: string,
    onMalformed: (err: unknown, revision: number) => void,
  ): Promise<RecordFollower> {
    return this.store.follow(jobId, onMalformed);
  }

  /** The stream and bucket names of the records' KV (for a follower of record writes). */
  recordStream(): { stream: string; bucket: string } {
    return { stream: Streams.kv(Buckets.jobs), bucket: Buckets.jobs };
  }

  /**
   * Records the job of `envelope` as `queued` (creation: fails when the id exists). Its event
   * goes out at once, or, with `announce: false`, when the caller calls `announce()`: once the
   * job is queued for certain (an envelope held back), or just before it publishes the envelope.
   */
  async enqueue(envelope: JobEnvelope, options: { announce?: boolean } = {}): Promise<Enqueued> {
    const record = queuedRecordOf(envelope);
    const revision = await this.store.create(record);
    const announce = () => void this.store.publishEvent(record).catch(() => undefined);
    if (options.announce !== false) announce();
    return { record, revision, announce };
  }

  /**
   * Drops the record of a job whose envelope was never queued: a compare-and-delete on the
   * revision created (a job that started meanwhile keeps its record). False when not dropped.
   */
  discard(jobId: string, revision: number): Promise<boolean> {
    return this.store.discard(jobId, revision);
  }

  /**
   * `queued → started` on `hostId` for this copy of the job (`placementMayStart`), then its
   * event. Null when the job must not run here (cancelled, started elsewhere, taken over).
   * The first write uses the record as the gateway created it (`record_revision`): no read.
   */
  async start(envelope: JobEnvelope, hostId: string): Promise<StoredRecord | null> {
    // The timestamp marks this attempt: if a write of ours went through but its answer was lost
    // (a cluster electing a leader), the retry recognises its own record instead of refusing.
    const startedAt = new Date().toISOString();
    const known =
      envelope.record_revision !== undefined
        ? { record: queuedRecordOf(envelope), revision: envelope.record_revision }
        : undefined;
    const started = await this.store.move(
      envelope.job_id,
      ['queued'],
      'started',
      // A copy of an earlier owner of its shard (taken over since) never starts: the record
      // names the epoch that may.
      (current) =>
        placementMayStart(current, envelope) ? { started_at: startedAt, actor_host: hostId } : null,
      { known, mine: (current) => current.started_at === startedAt },
    );
    if (started) await this.store.publishEvent(started.record).catch(() => undefined);
    return started;
  }

  /**
   * `started → finished` with the job's outputs (`fields`, its results as `keepResults` kept
   * them), then the release of its dedup key and its event. `started` is the record as this
   * process started it: no read unless a cancel came between. Null when the job was no longer
   * started (cancelled). `withEvent` runs in the turn the event is published (once the end is
   * stored): what it publishes leaves in the event's socket write (a write costs more than the
   * bytes in it).
   */
  async finish(
    started: StoredRecord,
    fields: FinishedFields,
    options: { withEvent?: () => void } = {},
  ): Promise<JobRecord | null> {
    const jobId = started.record.job_id;
    const endedAt = new Date().toISOString();
    const finished = await this.store.move(
      jobId,
      ['started'],
      'finished',
      () => ({ ended_at: endedAt, ...fields }),
      { known: started, mine: (current) => current.ended_at === endedAt },
    );
    if (!finished) return null;
    await retryTransient(() => this.releaseDedup(finished.record)).catch(() => undefined);
    // Its failure handled before `withEvent` runs: a throw there must not leave it unhandled.
    const published = this.store.publishEvent(finished.record).catch(() => undefined);
    options.withEvent?.();
    await published;
    return finished.record;
  }

  /** Why a job `failLost` ends was lost: its host's heartbeats stopped. */
  static lostHostReason(hostId: string): string {
    return `actor host ${hostId} stopped sending heartbeats`;
  }

  /**
   * `started → failed` WORKER_LOST, only while the record says `hostId` started it (by the
   * compare-and-set: no read before): the host stopped beating and was reaped, or gone when a
   * shard's next owner took the job over. `why` says which.
   */
  failLost(jobId: string, hostId: string, why: string): Promise<JobRecord | null> {
    return this.fail(
      jobId,
      'started',
      new SvcError(ErrorCode.WORKER_LOST, why),
      {},
      { startedOn: hostId },
    );
  }

  /**
   * `started → failed` INTERNAL, only while the record says `hostId` started it: the host ran
   * the job but could not store its outcome, which it no longer holds. The job must not run
   * again, and its record must not claim an outcome the device did not give.
   */
  failOutcomeLost(jobId: string, hostId: string): Promise<JobRecord | null> {
    return this.fail(
      jobId,
      'started',
      new SvcError(ErrorCode.INTERNAL, 'the outcome of this job could not be stored'),
      {},
      { startedOn: hostId },
    );
  }

  /**
   * `queued → failed` NOT_ENQUEUED: a job recorded whose message is not (known to be) in the
   * queue, so it never ran. Null when it was not queued any more (its message was stored after
   * all and it started, or it ended). Said by the gateway whose admission failed and by the
   * reaper's check for records left without their message.
   */
  failNotEnqueued(jobId: string, why: string): Promise<JobRecord | null> {
    return this.fail(
      jobId,
      'queued',
      new SvcError(ErrorCode.NOT_ENQUEUED, `the job was recorded but ${why}; it did not run`),
    );
  }

  /**
   * `from → failed` with `error`, then the failed-job registry entry, the release of its dedup
   * key and its event. Returns the record written, or null when the job was no longer in
   * `from` (cancelled, or already ended elsewhere), or not started on `startedOn` when given.
   */
  async fail(
    jobId: string,
    from: FromOf<'failed'>,
    error: SvcError,
    patch: Partial<JobRecord> = {},
    options: { startedOn?: string } = {},
  ): Promise<JobRecord | null> {
    // The end time marks this attempt, so a retry after a lost answer recognises its own write.
    const endedAt = new Date().toISOString();
    const { startedOn } = options;
    const written = await this.store.move(
      jobId,
      [from],
      'failed',
      (current) =>
        startedOn !== undefined && current.actor_host !== startedOn
          ? null
          : {
              ...patch,
              ended_at: endedAt,
              error: error.message,
              error_code: error.code,
              error_retryable: error.retryable,
            },
      { mine: (current) => current.ended_at === endedAt },
    );
    if (!written) return null;
    const record = written.record;
    this.onFailed(record);
    // Secondary records: a store outage must not turn an ended job into a lost one.
    await retryTransient(() => this.recordFailure(record)).catch(() => undefined);
    await retryTransient(() => this.releaseDedup(record)).catch(() => undefined);
    await this.store.publishEvent(record).catch(() => undefined);
    return record;
  }

  /**
   * `from → cancelled` (by default from either, `queued` only for a batch's queued jobs), then
   * a running session is told to abort (best effort) and the event goes out. Returns the record
   * written and whether the job was running, or null when it had ended meanwhile.
   */
  async cancel(
    jobId: string,
    reason: string,
    from: readonly FromOf<'cancelled'>[] = ['queued', 'started'],
  ): Promise<{ record: JobRecord; wasRunning: boolean } | null> {
    let wasRunning = false;
    const written = await this.store.move(jobId, from, 'cancelled', (current) => {
      wasRunning = current.status === 'started';
      return {
        ended_at: new Date().toISOString(),
        error: reason,
        error_code: 'CANCELLED',
        error_retryable: false,
      };
    });
    if (!written) return null;
    if (wasRunning) this.nc.publish(Subjects.cancel(jobId), encodeJson({ job_id: jobId }));
    await this.store.publishEvent(written.record).catch(() => undefined);
    return { record: written.record, wasRunning };
  }

  /**
   * Adds to a job that ended elsewhere while its device ran it the outputs the device gave (once:
   * only while it has none): cancelled by its submitter, or failed WORKER_LOST by a reaper that
   * took its host for dead while the host ran it on. Its end stays as it is: no event.
   */
  async keepOutputsOfEnded(jobId: string, kept: Partial<JobRecord>): Promise<void> {
    await this.store.transition(jobId, (current) =>
      (current.status === 'cancelled' ||
        (current.status === 'failed' && current.error_code === ErrorCode.WORKER_LOST)) &&
      current.command_status == null
        ? { ...current, ...kept, status: current.status }
        : null,
    );
  }

  /**
   * Keeps results inline, or in the object store with a pointer (a record is one message):
   * RESULT_TOO_LARGE past SVC_MAX_RESULT_BYTES. Written before the job's end.
   */
  keepResults(jobId: string, results: JobRecord['results']): Promise<StoredResults> {
    return this.results.keep(jobId, results);
  }

  /**
   * Names `epoch` as the placement of a queued job that may start it: the owner of the job's
   * shard at that epoch took the shard over, and only its copy may start the job (an earlier
   * owner's start is refused, `placementMayStart`). By compare-and-set from `stored`, only while
   * the job is queued and fenced to no later epoch. Returns the record as it is afterwards.
   */
  async fence(jobId: string, epoch: number, stored: StoredRecord): Promise<JobRecord | undefined> {
    const fenced = await this.store.transitionStored(
      jobId,
      (current) =>
        current.status === 'queued' && (current.placement ?? 0) < epoch
          ? { ...current, placement: epoch }
          : null,
      stored,
    );
    // Refused: an earlier owner (only slow) started it meanwhile, or it was cancelled.
    return fenced?.record ?? (await this.store.get(jobId))?.record;
  }

  /**
   * Settles once the batch events of this process's lifecycle operations are stored in
   * SVC_EVENTS (or given up after an outage of 30 s): a service stopping waits for them before
   * its connection closes.
   */
  batchEventsStored(): Promise<void> {
    return this.store.batchEventsStored();
  }

  private async recordFailure(record: JobRecord): Promise<void> {
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
  private async releaseDedup(record: JobRecord): Promise<void> {
    if (!record.dedup_key) return;
    const entry = await this.dedup.get(record.dedup_key);
    if (entry?.operation === 'PUT' && new TextDecoder().decode(entry.value) === record.job_id) {
      await this.dedup.delete(record.dedup_key).catch(() => undefined);
    }
  }
}
