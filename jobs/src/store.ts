import type { KV } from '@nats-io/kv';
import { jetstream, JetStreamApiError, type JetStreamClient } from '@nats-io/jetstream';
import { headers as natsHeaders, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import {
  Buckets,
  FailedJob,
  Headers,
  JobRecord,
  MalformedMessage,
  MessageIds,
  Subjects,
  decodeMessage,
  encodeJson,
  isWrongRevision,
  recordSummaryOf,
  type JobEnvelope,
  type JobEvent,
  type JobStatus,
} from '@svc/proto';
import { injectTraceContext } from '@svc/telemetry';
import { retryTransient, watchBucket } from '@svc/nats';
import { IllegalTransition, hasLeft, mayMove, type FromOf } from './states.js';
import type { JobResults } from './results.js';

/**
 * Writes a record's bytes under the job's key if the key is still at `revision` (0: it has none)
 * and returns the new revision; `summary` is its `RecordSummary` as JSON, for the header.
 */
export type RecordWrite = (
  jobId: string,
  data: Uint8Array,
  summary: string,
  revision: number,
) => Promise<number>;

/**
 * The KV client's put (a publish to the key's subject expecting its last sequence) with the
 * record's summary in `Headers.recordSummary`, which the KV client cannot add.
 */
function publishedRecordWrite(nc: NatsConnection): RecordWrite {
  let js: JetStreamClient | null = null;
  return async (jobId, data, summary, revision) => {
    // What the KV client checked before its put: a key with wildcards or empty tokens would
    // write some other subject.
    if (!VALID_KEY.test(jobId))
      throw new Error(`not a valid job record key: ${JSON.stringify(jobId)}`);
    js ??= jetstream(nc);
    const h = natsHeaders();
    h.set(Headers.recordSummary, summary);
    const ack = await js.publish(Subjects.kvEntry(Buckets.jobs, jobId), data, {
      headers: h,
      expect: { lastSubjectSequence: revision },
    });
    return ack.seq;
  };
}

/** How long one try to store a batch event waits for its acknowledgement. */
const BATCH_EVENT_TRY_MS = 1000;
/** How long a batch event is published again while not stored: an election takes seconds. */
const BATCH_EVENT_RETRY_MS = 30_000;

/** What the KV client accepts as a key (it throws on anything else). */
const VALID_KEY = /^[-/=\w]+(\.[-/=\w]+)*$/;

export interface StoredRecord {
  record: JobRecord;
  revision: number;
  /** Read from the failed-job registry: `svc-jobs` no longer holds it; it never changes again. */
  archived?: boolean;
}

/** A job's record as it is written (`JobStore.follow`, `Jobs.follow`). */
export interface RecordFollower {
  records: AsyncIterable<StoredRecord>;
  stop(): void;
}

/**
 * Job records in the `svc-jobs` bucket: the low-level store under `Jobs` (not exported from the
 * package). Every status change goes through `transition`, a compare-and-set on the record's
 * revision, so two processes can never both move a job out of the same state (this is what
 * stops a job from starting twice).
 */
export class JobStore {
  /**
   * @param transientRetryMs how long a state change keeps retrying through store outages (a
   * cluster electing a new leader answers nothing for seconds): long for actors, whose job
   * would otherwise stay `started` forever; short for the gateway, which answers 503 instead.
   * @param failed the failed-job registry (`svc-failed`): where `get` finds a failed job whose
   * record has expired from `svc-jobs` while the registry still lists it (JOB_TTL_FAILED).
   * @param results where results too large for a record live: `withResults` reads them there.
   */
  constructor(
    readonly kv: KV,
    private readonly nc: NatsConnection,
    private readonly transientRetryMs = 60_000,
    private readonly failed?: KV,
    readonly results?: JobResults,
    private readonly write: RecordWrite = publishedRecordWrite(nc),
  ) {}

  /**
   * Creates a job's record; returns its revision (carried in the envelope: `record_revision`).
   * Fails when the id exists; a deleted record's id is written over, as the KV client's `create`.
   */
  async create(record: JobRecord): Promise<number> {
    const data = encodeJson(record);
    const summary = JSON.stringify(recordSummaryOf(record));
    try {
      return await this.write(record.job_id, data, summary, 0);
    } catch (err) {
      if (!isWrongRevision(err) && err instanceof JetStreamApiError) throw err;
      const entry = await this.kv.get(record.job_id);
      if (entry && entry.operation !== 'PUT') {
        return await this.write(record.job_id, data, summary, entry.revision);
      }
      throw err;
    }
  }

  async get(jobId: string): Promise<StoredRecord | null> {
    // Ids come from URL paths: one that is no valid KV key names no job (and must not be a 503).
    if (!VALID_KEY.test(jobId)) return null;
    const entry = await this.kv.get(jobId);
    if (entry?.operation === 'PUT') {
      return { record: decodeMessage(JobRecord, entry.value), revision: entry.revision };
    }
    if (!this.failed) return null;
    const archived = await this.failed.get(jobId);
    if (archived?.operation !== 'PUT') return null;
    const record = decodeMessage(FailedJob, archived.value).record;
    return record ? { record, revision: archived.revision, archived: true } : null;
  }

  /**
   * The record as a reader of results sees it: results kept in the object store are put in
   * place of the record's pointer. Every path that answers results goes through here;
   * `get` (and `transition`) keep the pointer, so no write ever carries the large results.
   */
  async withResults(record: JobRecord): Promise<JobRecord> {
    if (!record.results_ref) return record;
    if (!this.results) throw new Error(`job ${record.job_id}: results store not opened`);
    return this.results.resolve(record);
  }

  /**
   * Applies `change` to the current record and writes it back if nobody wrote in between,
   * retrying on conflict. `change` returns null to leave the record as it is. A change that
   * moves the status against the state machine (`states.ts`) throws `IllegalTransition`
   * and writes nothing.
   * Returns the record written, or null when the job is unknown or `change` declined.
   */
  async transition(
    jobId: string,
    change: (current: JobRecord) => JobRecord | null,
    known?: StoredRecord,
  ): Promise<JobRecord | null> {
    return (await this.transitionStored(jobId, change, known))?.record ?? null;
  }

  /**
   * `transition`, returning the revision written as well. With `known` (the record as this
   * process last wrote or created it), the first attempt writes without reading: one round trip
   * instead of two when nobody changed the record since; a conflict falls back to a fresh read.
   */
  async transitionStored(
    jobId: string,
    change: (current: JobRecord) => JobRecord | null,
    known?: StoredRecord,
  ): Promise<StoredRecord | null> {
    const deadline = Date.now() + this.transientRetryMs;
    let conflicts = 0;
    let assumed = known?.archived ? undefined : known;
    for (let pause = 100; ; pause = Math.min(pause * 2, 2000)) {
      try {
        const stored = assumed ?? (await this.get(jobId));
        assumed = undefined;
        // An archived record is a failed job: it has no state left to change.
        if (!stored || stored.archived) return null;
        const next = change(stored.record);
        if (!next) return null;
        const from = stored.record.status;
        if (next.status !== from && !mayMove(from, next.status)) {
          throw new IllegalTransition(jobId, from, next.status);
        }
        const revision = await this.write(
          jobId,
          encodeJson(next),
          JSON.stringify(recordSummaryOf(next)),
          stored.revision,
        );
        return { record: next, revision };
      } catch (err) {
        // A record that is not one stays so, and an illegal move stays illegal: no retry.
        if (err instanceof MalformedMessage || err instanceof IllegalTransition) throw err;
        if (isWrongRevision(err)) {
          if (++conflicts > 20) {
            throw new Error(`job record ${jobId} kept changing; gave up`, { cause: err });
          }
          pause = 50;
          continue;
        }
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, pause));
      }
    }
  }

  /**
   * `from → to`, typed so that a move against the state machine (`states.ts`) does not
   * compile: the record changes only while it is in one of `from` (null otherwise, or when
   * `patch` declines with null). `mine` recognises a record that already holds this attempt's
   * own write (a write that went through but whose answer was lost): it is written as it is.
   */
  async move<To extends JobStatus>(
    jobId: string,
    from: readonly FromOf<To>[],
    to: To,
    patch: (current: JobRecord) => Partial<JobRecord> | null = () => ({}),
    options: { known?: StoredRecord; mine?: (current: JobRecord) => boolean } = {},
  ): Promise<StoredRecord | null> {
    const froms: readonly JobStatus[] = from;
    return this.transitionStored(
      jobId,
      (current) => {
        if (!froms.includes(current.status)) {
          return current.status === to && options.mine?.(current) ? current : null;
        }
        const changes = patch(current);
        return changes ? { ...current, ...changes, status: to } : null;
      },
      options.known,
    );
  }

  /**
   * Follows one job's record: its current value, then every write, as they are stored (a KV
   * watch: an ordered consumer of the job's key, so nothing is skipped and nothing polled).
   * Deletes and records that fail their schema are left out (`onMalformed` is told of the
   * latter). The follower calls `stop()` when done; the iteration then ends.
   */
  async follow(
    jobId: string,
    onMalformed: (err: unknown, revision: number) => void,
  ): Promise<RecordFollower> {
    const watch = await watchBucket(this.kv, { key: jobId });
    async function* records(): AsyncGenerator<StoredRecord> {
      for await (const entry of watch) {
        if (entry.operation !== 'PUT') continue;
        try {
          yield { record: decodeMessage(JobRecord, entry.value), revision: entry.revision };
        } catch (err) {
          onMalformed(err, entry.revision);
        }
      }
    }
    return { records: records(), stop: () => watch.stop() };
  }

  /** Deletes a record still at `revision` (one that never left `queued`); false otherwise. */
  async discard(jobId: string, revision: number): Promise<boolean> {
    return this.kv
      .delete(jobId, { previousSeq: revision })
      .then(() => true)
      .catch(() => false);
  }

  /**
   * Publishes the event of a status change for SSE, webhooks and outside subscribers. With
   * tracing on, the message carries the W3C `traceparent` (and `tracestate`) of the span that
   * made the change (gateway route, actor job run), so a subscriber can continue the trace.
   */
  publishEvent(
    record: JobRecord,
    status: JobStatus = record.status,
    extra: Partial<JobEvent> = {},
  ): Promise<void> {
    const event: JobEvent = {
      ...extra,
      job_id: record.job_id,
      status,
      at: new Date().toISOString(),
      context: record.spec.context,
      host: record.spec.host,
      port: record.spec.port,
      ...(record.device_name !== undefined ? { name: record.device_name } : {}),
      platform: record.spec.platform,
      error_code: record.error_code,
      error: record.error,
      kind: record.spec.kind,
      enqueued_at: record.enqueued_at,
      started_at: record.started_at,
      ended_at: record.ended_at,
    };
    const headersOf = (msgId: string) => {
      const h = natsHeaders();
      injectTraceContext(h);
      h.set(Headers.msgId, msgId);
      return h;
    };
    try {
      // Published without waiting for JetStream's acknowledgement: events are for followers
      // (the record holds the state; a publish fails only on a closed or draining connection,
      // and `Jobs` goes on without it), and an acknowledged publish costs a round trip and a
      // reply per event. A stream that keeps them drops a repeat by the message id.
      this.nc.publish(Subjects.jobEvent(record.job_id, status), encodeJson(event), {
        headers: headersOf(MessageIds.jobEvent(record.job_id, status)),
      });
    } catch (err) {
      // A closed or draining connection: callers decide, as they did for a failed publish.
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    if (record.batch_id) {
      this.storeBatchEvent(
        record.job_id,
        status,
        Subjects.batchJobEvent(record.batch_id, status),
        encodeJson({ ...event, batch_id: record.batch_id }),
        headersOf(MessageIds.batchJobEvent(record.batch_id, record.job_id, status)),
      );
    }
    return Promise.resolve();
  }

  /**
   * Stores one batch event in SVC_EVENTS, in the background: the batch stream replays them from
   * there, so one published while the stream has no leader (an election after a node loss,
   * when a publish is dropped) is published again until stored, and no caller (an HTTP cancel
   * with its deadline, a device's next job) waits on an election for it. A job's events are
   * stored in the order they were published; a repeat reaches core subscribers again with the
   * same message id, and the stream keeps one.
   *
   * A job's events come from two processes (`queued` from a gateway, the rest from an actor
   * host, a cancel from a gateway again), whose tries are not ordered with each other: a try
   * after a failed one is given up once the job's record has left the event's state, unless
   * this process has a later event of the job behind it (those keep their order here). An
   * event of a state the job has left would be stored after the later ones.
   */
  private storeBatchEvent(
    jobId: string,
    status: JobStatus,
    subject: string,
    data: Uint8Array,
    h: MsgHdrs,
  ): void {
    this.js ??= jetstream(this.nc);
    const js = this.js;
    let tries = 0;
    // Each try waits a second at most (one sent to a leader that died is never answered); a
    // connection closed meanwhile ends the tries.
    const publish = async () => {
      if (this.nc.isClosed()) return null;
      // Asked only on a try after a failed one with no later event of the job behind it here.
      const askRecord = tries++ > 0 && this.eventTails.get(jobId) === stored;
      if (askRecord && (await this.#left(jobId, status))) return null;
      return js.publish(subject, data, { headers: h, timeout: BATCH_EVENT_TRY_MS });
    };
    const before = this.eventTails.get(jobId) ?? Promise.resolve();
    const stored = before
      .then(() => retryTransient(publish, BATCH_EVENT_RETRY_MS))
      .then(
        () => undefined,
        () => undefined,
      );
    this.eventTails.set(jobId, stored);
    void stored.then(() => {
      if (this.eventTails.get(jobId) === stored) this.eventTails.delete(jobId);
    });
  }

  /** Whether the job's stored record has left `status` (unknown when it cannot be read: no). */
  async #left(jobId: string, status: JobStatus): Promise<boolean> {
    const stored = await this.get(jobId).catch(() => null);
    return stored !== null && hasLeft(stored.record.status, status);
  }

  /**
   * Settles once the batch events this process published are stored (or given up): a job's
   * last one pending settles after its earlier ones.
   */
  async batchEventsStored(): Promise<void> {
    await Promise.all(this.eventTails.values());
  }

  private js: JetStreamClient | null = null;
  /** Per job, its last batch event being stored: the next waits for it (their order kept). */
  private readonly eventTails = new Map<string, Promise<void>>();
}

/**
 * Whether this copy of a job (its envelope's placement) may start it: the record names the
 * placement that may (`placement`, the epoch of the shard owner that fenced it on a takeover,
 * `Jobs.fence`), or none when no owner took its shard over while it waited (then any copy may;
 * starting stays one compare-and-set from `queued`, so it still starts once).
 */
export function placementMayStart(record: JobRecord, envelope: JobEnvelope): boolean {
  return record.placement === undefined || record.placement === envelope.placement;
}

/**
 * The record of a job as the gateway creates it (`queued`), from the job's envelope: one
 * definition for the gateway, which writes it, and the actor, which starts the job from it
 * without reading it back (`record_revision`).
 */
export function queuedRecordOf(envelope: JobEnvelope): JobRecord {
  return {
    job_id: envelope.job_id,
    status: 'queued',
    owner: envelope.owner,
    username: envelope.username,
    spec: envelope.spec,
    enqueued_at: envelope.enqueued_at,
    started_at: null,
    ended_at: null,
    results: null,
    error: null,
    error_code: null,
    error_retryable: null,
    detected_platform: null,
    actor_host: null,
    dedup_key: envelope.dedup_key ?? null,
    ...(envelope.batch_id != null ? { batch_id: envelope.batch_id } : {}),
    ...(envelope.device_name !== undefined ? { device_name: envelope.device_name } : {}),
  };
}
