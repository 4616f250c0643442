import type { Consumer, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import {
  Headers,
  JOBS_DUPLICATE_WINDOW_SECONDS,
  JOBS_DUPLICATE_WINDOW_MARGIN_MS,
  Subjects,
  SubjectParsers,
  MessageIds,
  Streams,
  type JobRecord,
} from '@svc/proto';
import { retryTransient } from '@svc/nats';
import { type Logger } from '@svc/telemetry';
import type { Jobs } from '@svc/jobs';

/** How often every reaper reads its record feed (the sweep also reads it first). */
const FEED_READ_MS = 2000;
/** The most records fetched at once. */
const FETCH_BATCH = 1000;
/** The first read's wait for what there is (the least a fetch may wait). */
const FIRST_FETCH_MS = 1000;
/** A fetch of what is known pending ends once delivered; this only bounds a lost answer. */
const FETCH_EXPIRES_MS = 10_000;

/** A record never written again since its creation: the job is still `queued`. */
interface Fresh {
  revision: number;
  createdAt: number;
}

/**
 * Finds job records that were created but whose envelope never reached `SVC_JOBS` (a gateway
 * killed between its two writes, or whose publish failed and whose rollback did not reach the
 * store), and fails them with NOT_ENQUEUED.
 *
 * Candidates come from a headers-only ordered consumer of the `svc-jobs` bucket's stream: an
 * entry written with `Nats-Expected-Last-Subject-Sequence: 0` is a record's creation, and any
 * later entry of the key (start, end, cancel, delete) takes it off the list. The feed is read in
 * bursts (every FEED_READ_MS and before each sweep: what is pending, fetched at once), not as
 * each write is stored: a job's three writes would wake the reaper three times. A candidate older
 * than ENQUEUE_GRACE is probed by publishing an empty message with the job id as message id on
 * its context's subject: JetStream answers `duplicate` when the envelope was stored (even if it
 * was consumed since) and stores nothing; otherwise the probe is stored (the dispatcher drops
 * it), which also makes the stream drop the envelope should it still arrive, and the job is
 * failed by compare-and-set from `queued` — unless the job's first placement is stored in
 * `SVC_ACTOR` (`#placed`: a restarted server forgets the ids of consumed messages). This holds
 * only within the streams' duplicate window (120 s): records older than that are not checked.
 */
export class EnqueueCheck {
  readonly #fresh = new Map<string, Fresh>();
  #stopped = false;
  #stream = '';
  #bucket = '';
  /** The ordered consumer the feed is read through; null until made, or after it failed. */
  #feed: Consumer | null = null;
  /** Whether `#feed` has fetched yet (its server-side consumer exists only from then). */
  #fetched = false;
  /** Stream sequence of the last entry read: a feed made again starts after it. */
  #cursor: number | null = null;
  /** The read under way: a sweep waits for it instead of starting another. */
  #reading: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly js: JetStreamClient,
    private readonly jobs: Jobs,
    private readonly graceMs: number,
    private readonly log: Logger,
    private readonly onFailed: (record: JobRecord) => Promise<void>,
  ) {}

  static async start(
    js: JetStreamClient,
    jobs: Jobs,
    options: {
      graceMs: number;
      log: Logger;
      /** Told of each job failed here (its event is out already). */
      onFailed: (record: JobRecord) => Promise<void>;
    },
  ): Promise<EnqueueCheck> {
    const check = new EnqueueCheck(js, jobs, options.graceMs, options.log, options.onFailed);
    await check.#follow();
    return check;
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
  }

  async #follow(): Promise<void> {
    const { stream, bucket } = await this.jobs.recordStream();
    this.#stream = stream;
    this.#bucket = bucket;
    // Not awaited: a first read waits up to FIRST_FETCH_MS (a sweep waits for it instead).
    void this.#read();
    // Every reaper reads, not only the one whose cycle sweeps: the next to lead is current.
    this.#timer = setInterval(() => void this.#read(), FEED_READ_MS);
    this.#timer.unref();
  }

  /** Reads what the feed holds now (at most one read at a time; a failed one is logged). */
  #read(): Promise<void> {
    this.#reading ??= this.#readPending()
      .catch((err: unknown) => {
        if (!this.#stopped) this.log.warn({ err }, 'enqueue check: record feed not read');
      })
      .finally(() => {
        this.#reading = null;
      });
    return this.#reading;
  }

  /**
   * The feed's consumer: at first the keys written within the window (each key's last entry,
   * then every new one); made again after a failure, from the entry after the last one read.
   */
  async #openFeed(): Promise<Consumer> {
    if (this.#feed) return this.#feed;
    const start =
      this.#cursor !== null
        ? { opt_start_seq: this.#cursor + 1 }
        : {
            opt_start_time: new Date(
              Date.now() - JOBS_DUPLICATE_WINDOW_SECONDS * 1000,
            ).toISOString(),
          };
    this.#feed = await this.js.consumers.get(this.#stream, { headers_only: true, ...start });
    this.#fetched = false;
    return this.#feed;
  }

  /**
   * Fetches exactly what is pending, in batches: a fetch of no more than the stream holds past
   * the feed's position ends once they are delivered, without waiting for new writes. A feed
   * that never fetched has no server-side consumer to ask yet: its first fetch waits at most
   * FIRST_FETCH_MS for what there is. A failure drops the feed; the next read makes it again.
   */
  async #readPending(): Promise<void> {
    const feed = await this.#openFeed();
    try {
      let pending: number | null = null;
      try {
        pending = (await feed.info()).num_pending;
      } catch (err) {
        // Fetched before: its consumer is gone (the node holding it was lost).
        if (this.#fetched) throw err;
      }
      // What was pending when the read began, and no more: writes stored meanwhile wait for the
      // next read (chasing them would fetch a few at a time, a request each).
      while (!this.#stopped && pending !== 0) {
        const max = pending === null ? FETCH_BATCH : Math.min(pending, FETCH_BATCH);
        const batch = await feed.fetch({
          max_messages: max,
          expires: pending === null ? FIRST_FETCH_MS : FETCH_EXPIRES_MS,
        });
        this.#fetched = true;
        let delivered = 0;
        for await (const m of batch) {
          this.#note(m);
          delivered++;
        }
        // Fewer than asked (the first read, or entries removed meanwhile): nothing more now.
        pending = pending === null || delivered < max ? 0 : pending - delivered;
      }
    } catch (err) {
      this.#feed = null;
      throw err;
    }
  }

  #note(m: JsMsg): void {
    this.#cursor = m.seq;
    const key = SubjectParsers.kvKey(this.#bucket, m.subject);
    if (key === null) return;
    const created =
      !m.headers?.get('KV-Operation') &&
      m.headers?.get('Nats-Expected-Last-Subject-Sequence') === '0';
    if (created) {
      this.#fresh.set(key, {
        revision: m.seq,
        createdAt: Math.floor(m.info.timestampNanos / 1_000_000),
      });
    } else {
      this.#fresh.delete(key);
    }
  }

  /** Probes the records queued longer than the grace; returns the jobs failed. */
  async sweep(now = Date.now()): Promise<string[]> {
    // Every write stored before the sweep is known to it: a read already under way began earlier
    // and may have stopped short of the latest, so one more follows it.
    await this.#reading;
    await this.#read();
    const failed: string[] = [];
    const oldest = now - JOBS_DUPLICATE_WINDOW_SECONDS * 1000 + JOBS_DUPLICATE_WINDOW_MARGIN_MS;
    for (const [jobId, fresh] of [...this.#fresh]) {
      if (fresh.createdAt < oldest) {
        this.#fresh.delete(jobId);
        continue;
      }
      if (now - fresh.createdAt < this.graceMs) continue;
      try {
        if (await this.#check(jobId, fresh)) failed.push(jobId);
      } catch (err) {
        // The store did not answer: tried again next cycle while the window lasts.
        this.log.warn({ err, job_id: jobId }, 'enqueue check failed; retrying next cycle');
      }
    }
    return failed;
  }

  /**
   * Whether the job's first placement is stored in `SVC_ACTOR`: it stays there until its job
   * ends, so its id is remembered even by a server that restarted since, which forgets the ids
   * of the messages it no longer stores (the envelope, consumed by the dispatcher). A probe that
   * was stored instead is deleted (no host reads its subject).
   */
  async #placed(jobId: string): Promise<boolean> {
    const ack = await this.js.publish(Subjects.actorProbe, new Uint8Array(), {
      msgID: MessageIds.placement(jobId, 0),
    });
    if (ack.duplicate) return true;
    const jsm = await this.js.jetstreamManager(false);
    await retryTransient(() => jsm.streams.deleteMessage(Streams.actor, ack.seq, false)).catch(
      (err: unknown) => this.log.warn({ err, seq: ack.seq }, 'enqueue check: probe not deleted'),
    );
    return false;
  }

  /** True when the job's envelope was never stored and the job was failed. */
  async #check(jobId: string, fresh: Fresh): Promise<boolean> {
    const stored = await this.jobs.get(jobId);
    const record = stored?.record;
    if (!stored || stored.archived || stored.revision !== fresh.revision || !record) {
      this.#fresh.delete(jobId);
      return false;
    }
    // A batch job of a later wave is queued with its envelope held in `svc-batches` until the
    // wave is released: no envelope yet is its normal state.
    if (record.status !== 'queued' || record.batch_id != null) {
      this.#fresh.delete(jobId);
      return false;
    }
    const h = natsHeaders();
    h.set(Headers.enqueueProbe, '1');
    const ack = await this.js.publish(Subjects.jobs(record.spec.context), new Uint8Array(), {
      msgID: MessageIds.envelope(jobId),
      headers: h,
    });
    if (!ack.duplicate && (await this.#placed(jobId))) {
      this.#fresh.delete(jobId);
      this.log.info(
        { job_id: jobId },
        'enqueue check: placed on an actor host, not started yet; left to run',
      );
      return false;
    }
    this.#fresh.delete(jobId);
    if (ack.duplicate) return false;
    const ended = await this.jobs.failNotEnqueued(jobId, 'its message never reached the queue');
    if (!ended) return false;
    this.log.warn({ job_id: jobId }, 'failed a job whose message never reached the queue');
    await this.onFailed(ended);
    return true;
  }
}
