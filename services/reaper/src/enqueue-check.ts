import type { JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import {
  Headers,
  JOBS_DUPLICATE_WINDOW_SECONDS,
  JOBS_DUPLICATE_WINDOW_MARGIN_MS,
  SubjectParsers,
  Subjects,
  MessageIds,
  Streams,
  MalformedMessage,
  RecordSummary,
  decodeOrDrop,
  type JobRecord,
} from '@svc/proto';
import { BurstFeed } from '@svc/nats';
import { type Logger } from '@svc/telemetry';
import type { Jobs } from '@svc/jobs';

/** How often every reaper reads its record feed (the sweep also reads it first). */
const FEED_READ_MS = 2000;

/**
 * A record whose last write left its job `queued`: its creation, or a takeover's fence
 * (`writtenAt`: when that write was stored).
 */
interface Fresh {
  revision: number;
  writtenAt: number;
}

/** A job whose envelope a check found waiting in `SVC_JOBS` (at `seq`), and when last seen so. */
interface Waiting extends Fresh {
  seq: number;
  seenAt: number;
}

/** A batch job whose envelope its batch holds until its wave is released. */
interface Held extends Fresh {
  batchId: string;
}

/** Jobs of each list (waiting, released) looked at again per sweep, at most. */
const LOOKED_AGAIN_PER_SWEEP = 500;

/**
 * Finds job records that were created but whose envelope never reached `SVC_JOBS` (a gateway
 * killed between its two writes, or whose publish failed and whose rollback did not reach the
 * store), or left it before the job started (a work-queue stream of nats-server 2.9 can lose a
 * stored message across a leader change), and fails them with NOT_ENQUEUED.
 *
 * Candidates come from a headers-only ordered consumer of the `svc-jobs` bucket's stream: an
 * entry written with `Nats-Expected-Last-Subject-Sequence: 0` is a record's creation, one whose
 * summary header says `queued` a takeover's fence, and any other entry of the key (start, end,
 * cancel, delete) takes it off the list. The feed is read in bursts (every FEED_READ_MS and
 * before each sweep: what is pending, fetched at once), not as each write is stored: a job's
 * three writes would wake the reaper three times.
 *
 * A candidate older than ENQUEUE_GRACE is probed by publishing an empty message with the job id
 * as message id on its context's subject in `SVC_JOBS`: JetStream answers `duplicate` when the
 * envelope was stored (on its shard subject) and stores nothing; otherwise the probe is stored
 * (the dispatcher drops it), which also
 * makes the stream drop the envelope should it still arrive. An envelope stays in the stream
 * until its job ends (its owner acknowledges it then), so the server keeps its id even across a
 * restart. A job whose envelope still waits there is left; otherwise it is failed by
 * compare-and-set from `queued`: its envelope never arrived, or was stored and lost.
 *
 * A job found waiting is looked at again at each sweep until it leaves `queued`
 * (`#stillWaiting`): an envelope the stream loses later in the job's wait would leave it
 * `queued` for good. A batch job whose envelope its batch holds for a later wave is left until
 * released (`#released`). A record first checked past the streams' duplicate window (120 s), as
 * after a reaper outage that long, is not checked.
 */
export class EnqueueCheck {
  readonly #fresh = new Map<string, Fresh>();
  /** Found waiting, and not written since: looked at again at each sweep (`#stillWaiting`). */
  readonly #waitingJobs = new Map<string, Waiting>();
  /** Batch jobs found held: checked once released (`#released`). */
  readonly #heldJobs = new Map<string, Held>();
  /** Jobs whose last write left them `started`, and the host that started them. */
  readonly #startedOn = new Map<string, string>();
  #bucket = '';
  #feed: BurstFeed | null = null;
  /** Made at its first use (no request: the API is not checked). */
  #jsm: Promise<JetStreamManager> | null = null;

  private constructor(
    private readonly js: JetStreamClient,
    private readonly jobs: Jobs,
    private readonly graceMs: number,
    private readonly log: Logger,
    private readonly onFailed: (record: JobRecord) => Promise<void>,
    private readonly heldInBatch: (batchId: string, jobId: string) => Promise<boolean>,
  ) {}

  static start(
    js: JetStreamClient,
    jobs: Jobs,
    options: {
      graceMs: number;
      log: Logger;
      /** Told of each job failed here (its event is out already). */
      onFailed: (record: JobRecord) => Promise<void>;
      /**
       * Whether a batch still holds the job's envelope for a later wave (read from the bucket
       * before the job is probed: a watched copy behind would have the probe block the envelope).
       */
      heldInBatch: (batchId: string, jobId: string) => Promise<boolean>;
    },
  ): EnqueueCheck {
    const check = new EnqueueCheck(
      js,
      jobs,
      options.graceMs,
      options.log,
      options.onFailed,
      options.heldInBatch,
    );
    const { stream, bucket } = jobs.recordStream();
    check.#bucket = bucket;
    // Every reaper reads, not only the one whose cycle sweeps: the next to lead is current. At
    // first the keys written within the duplicate window (each key's last entry, then every new one).
    check.#feed = new BurstFeed(js, {
      stream,
      from: new Date(Date.now() - JOBS_DUPLICATE_WINDOW_SECONDS * 1000),
      everyMs: FEED_READ_MS,
      onMessage: (m) => check.#note(m),
      log: options.log,
      label: 'enqueue check: record',
    });
    return check;
  }

  stop(): void {
    this.#feed?.stop();
  }

  #manager(): Promise<JetStreamManager> {
    return (this.#jsm ??= this.js.jetstreamManager(false));
  }

  #note(m: JsMsg): void {
    const key = SubjectParsers.kvKey(this.#bucket, m.subject);
    if (key === null) return;
    const put = !m.headers?.get(Headers.kvOperation);
    const created = put && m.headers?.get(Headers.expectedLastSubjectSequence) === '0';
    const summary = put && !created ? this.#summary(m, key) : null;
    if (summary?.status === 'started' && summary.actor_host) {
      this.#startedOn.set(key, summary.actor_host);
    } else {
      this.#startedOn.delete(key);
    }
    // A later write that leaves the job queued is a takeover's fence: looked at again.
    if (created || summary?.status === 'queued') {
      this.#fresh.set(key, {
        revision: m.seq,
        writtenAt: Math.floor(m.info.timestampNanos / 1_000_000),
      });
    } else {
      this.#fresh.delete(key);
      this.#waitingJobs.delete(key);
      this.#heldJobs.delete(key);
    }
  }

  /**
   * Checks the held batch jobs whose batch no longer holds their envelope: released (published
   * first, then the hold removed) or cancelled with their batch (their record written first, so
   * the check drops them). Returns the jobs failed.
   */
  async #released(): Promise<string[]> {
    const failed: string[] = [];
    let checked = 0;
    for (const [jobId, held] of [...this.#heldJobs]) {
      if (checked >= LOOKED_AGAIN_PER_SWEEP) break;
      try {
        if (await this.heldInBatch(held.batchId, jobId)) continue;
        checked++;
        this.#heldJobs.delete(jobId);
        if (await this.#check(jobId, held, Date.now())) failed.push(jobId);
      } catch (err) {
        // Looked at again next sweep (the store did not answer), unless the record is not one.
        if (!(err instanceof MalformedMessage) && !this.#heldJobs.has(jobId)) {
          this.#heldJobs.set(jobId, held);
        }
        this.log.warn({ err, job_id: jobId }, 'enqueue check failed; retrying next cycle');
      }
    }
    return failed;
  }

  /** A record write's summary header, or null (none, or not one). */
  #summary(m: JsMsg, key: string): RecordSummary | null {
    const raw = m.headers?.get(Headers.recordSummary);
    if (!raw) return null;
    return decodeOrDrop(RecordSummary, raw, {
      consumer: 'reaper',
      log: this.log,
      where: { key, seq: m.seq },
    });
  }

  /**
   * The jobs the record writes read so far (every write stored before this call) leave
   * `started` on `hostId`: what a reap of that host fails.
   */
  async startedOn(hostId: string): Promise<string[]> {
    await this.#feed?.catchUp();
    return [...this.#startedOn].filter(([, host]) => host === hostId).map(([jobId]) => jobId);
  }

  /** Probes the records queued longer than the grace; returns the jobs failed. */
  async sweep(now = Date.now()): Promise<string[]> {
    // Every write stored before the sweep is known to it.
    await this.#feed?.catchUp();
    const failed: string[] = [];
    // First: a job released since the last sweep is checked in this one (its envelope was
    // published before its hold was removed), before any record created after the release.
    failed.push(...(await this.#released()));
    const oldest = now - JOBS_DUPLICATE_WINDOW_SECONDS * 1000 + JOBS_DUPLICATE_WINDOW_MARGIN_MS;
    for (const [jobId, fresh] of [...this.#fresh]) {
      if (fresh.writtenAt < oldest) {
        this.#fresh.delete(jobId);
        continue;
      }
      if (now - fresh.writtenAt < this.graceMs) continue;
      try {
        if (await this.#check(jobId, fresh, now)) failed.push(jobId);
      } catch (err) {
        // The store did not answer: tried again next cycle while the window lasts.
        this.log.warn({ err, job_id: jobId }, 'enqueue check failed; retrying next cycle');
      }
    }
    await this.#lookAgain(this.#waitingJobs, (id, w) => this.#stillWaiting(id, w, now), failed);
    return failed;
  }

  /**
   * Looks again at the jobs of one list, at most LOOKED_AGAIN_PER_SWEEP (the longest unseen
   * first). Each leaves the list for its look, which puts it back when it is to be looked at
   * again; failed ones go to `failed`. A look the store did not answer puts it back as it was (a
   * failed look must not end the job's watch); a record that is not one ends it (no later look
   * reads it better).
   */
  async #lookAgain<T>(
    list: Map<string, T>,
    look: (jobId: string, entry: T) => Promise<boolean>,
    failed: string[],
  ): Promise<void> {
    for (const [jobId, entry] of [...list].slice(0, LOOKED_AGAIN_PER_SWEEP)) {
      list.delete(jobId);
      try {
        if (await look(jobId, entry)) failed.push(jobId);
      } catch (err) {
        if (!(err instanceof MalformedMessage) && !list.has(jobId)) list.set(jobId, entry);
        this.log.warn({ err, job_id: jobId }, 'enqueue check failed; retrying next cycle');
      }
    }
  }

  /**
   * Looks again at a job whose envelope was found waiting: still stored, it waits on (seen again,
   * it goes to the back of the line). Gone while the job's record is unchanged since it was
   * found so (its owner acknowledges an envelope only once the job has ended, which writes the
   * record first): the stream lost it, which would leave the job `queued` for good. Failed
   * NOT_ENQUEUED by compare-and-set from `queued`: an owner that still holds the job in a
   * mailbox has its start refused. Returns true when the job was failed.
   */
  async #stillWaiting(jobId: string, waiting: Waiting, now: number): Promise<boolean> {
    if (await this.#waiting(waiting.seq)) {
      this.#waitingJobs.set(jobId, { ...waiting, seenAt: now });
      return false;
    }
    const stored = await this.jobs.get(jobId);
    if (!stored || stored.archived || stored.revision !== waiting.revision) return false;
    if (stored.record.status !== 'queued') return false;
    return this.#fail(jobId, 'its message left the queue before the job started', waiting.seq);
  }

  /**
   * Whether the envelope the probe found stored (`seq`, from its `duplicate` answer) still waits
   * in `SVC_JOBS`. A work-queue stream of nats-server 2.9 can lose a stored message across a
   * leader change while its id stays in the duplicate window. What is stored under the id may be
   * this check's own probe (a cycle whose check failed after it): not an envelope. A sequence of
   * 0 (a server that had not stored it yet when it answered) tells nothing: taken as waiting.
   */
  async #waiting(seq: number): Promise<boolean> {
    if (seq <= 0) return true;
    const jsm = await this.#manager();
    const stored = await jsm.streams.getMessage(Streams.jobs, { seq });
    return stored !== null && !stored.header.get(Headers.enqueueProbe);
  }

  /** True when the job's envelope is not in the queue, and the job was failed. */
  async #check(jobId: string, fresh: Fresh, now: number): Promise<boolean> {
    const stored = await this.jobs.get(jobId);
    const record = stored?.record;
    if (!stored || stored.archived || stored.revision !== fresh.revision || !record) {
      this.#fresh.delete(jobId);
      return false;
    }
    if (record.status !== 'queued') {
      this.#fresh.delete(jobId);
      return false;
    }
    // A batch job of a later wave is queued with its envelope held in `svc-batches` until the
    // wave is released: no envelope yet is its normal state. Checked once released.
    if (record.batch_id != null && (await this.heldInBatch(record.batch_id, jobId))) {
      this.#fresh.delete(jobId);
      this.#heldJobs.set(jobId, {
        revision: fresh.revision,
        writtenAt: fresh.writtenAt,
        batchId: record.batch_id,
      });
      return false;
    }
    const h = natsHeaders();
    h.set(Headers.enqueueProbe, '1');
    // A stream's duplicate window spans its subjects: the context's own subject (its shard
    // depends on the address resolved at submission, not in the record) answers for the
    // envelope's, and a probe stored there is dropped by the dispatcher that forwards it.
    const ack = await this.js.publish(Subjects.jobs(record.spec.context), new Uint8Array(), {
      msgID: MessageIds.envelope(jobId),
      headers: h,
    });
    this.#fresh.delete(jobId);
    if (ack.duplicate && (await this.#waiting(ack.seq))) {
      // Looked at again at each sweep while it waits (a sequence of 0 names nothing to look at).
      if (ack.seq > 0) this.#waitingJobs.set(jobId, { ...fresh, seq: ack.seq, seenAt: now });
      this.log.debug({ job_id: jobId, seq: ack.seq }, 'enqueue check: envelope stored; left');
      return false;
    }
    const why = ack.duplicate
      ? 'its message left the queue before the job started'
      : 'its message never reached the queue';
    return this.#fail(jobId, why, ack.seq);
  }

  /** Fails a queued job NOT_ENQUEUED (by compare-and-set from `queued`); true when it was. */
  async #fail(jobId: string, why: string, seq: number): Promise<boolean> {
    const ended = await this.jobs.failNotEnqueued(jobId, why);
    if (!ended) return false;
    this.log.warn({ job_id: jobId, seq }, `failed a job: ${why}`);
    await this.onFailed(ended);
    return true;
  }
}
