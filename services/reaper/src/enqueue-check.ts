import type { JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import {
  Headers,
  JOBS_DUPLICATE_WINDOW_SECONDS,
  JOBS_DUPLICATE_WINDOW_MARGIN_MS,
  Subjects,
  SubjectParsers,
  MessageIds,
  Streams,
  MalformedMessage,
  RecordSummary,
  decodeOrDrop,
  type JobRecord,
} from '@svc/proto';
import { BurstFeed, retryTransient } from '@svc/nats';
import { type Logger } from '@svc/telemetry';
import type { Jobs } from '@svc/jobs';

/** How often every reaper reads its record feed (the sweep also reads it first). */
const FEED_READ_MS = 2000;

/**
 * A record whose last write left its job `queued`: its creation, or a drain's fence naming the
 * copy it handed back (`writtenAt`: when that write was stored).
 */
interface Fresh {
  revision: number;
  writtenAt: number;
}

/**
 * A job whose copy (0: the gateway's envelope; n: the n-th handed back) a check found waiting in
 * `SVC_JOBS` (at `seq`), and when last seen so.
 */
interface Waiting extends Fresh {
  copy: number;
  seq: number;
  seenAt: number;
}

/**
 * A job whose placement of copy `copy` a check found stored in `SVC_ACTOR` (at `seq`), and the
 * host whose subject it was on (null: gone already when first looked at).
 */
interface Placed extends Fresh {
  copy: number;
  seq: number;
  hostId: string | null;
  /** Its placement was found gone while its host beat (logged once). */
  goneSeen?: boolean;
  /** At the last look, its host answered that it does not hold the placement. */
  notHeldSeen?: boolean;
}

/** A batch job whose envelope its batch holds until its wave is released. */
interface Held extends Fresh {
  batchId: string;
}

/** Jobs of each list (waiting, placed, released) looked at again per sweep, at most. */
const LOOKED_AGAIN_PER_SWEEP = 500;

/**
 * Finds job records that were created but whose envelope never reached `SVC_JOBS` (a gateway
 * killed between its two writes, or whose publish failed and whose rollback did not reach the
 * store), and fails them with NOT_ENQUEUED. Likewise a job a drain handed back (its record fenced
 * to name copy n, sent as message id `<job>.h<n>`) whose copy is not in the queue nor placed.
 *
 * Candidates come from a headers-only ordered consumer of the `svc-jobs` bucket's stream: an
 * entry written with `Nats-Expected-Last-Subject-Sequence: 0` is a record's creation, one whose
 * summary header says `queued` a drain's fence, and any other entry of the key (start, end,
 * cancel, delete) takes it off the list. The feed is read in bursts (every FEED_READ_MS and
 * before each sweep: what is pending, fetched at once), not as each write is stored: a job's
 * three writes would wake the reaper three times.
 *
 * A candidate older than ENQUEUE_GRACE is probed by publishing an empty message with the job id
 * (a handed-back copy's: `<job>.h<n>`) as message id on its context's subject: JetStream answers
 * `duplicate` when the envelope was stored (even if it was consumed since) and stores nothing;
 * otherwise the probe is stored (the dispatcher drops it), which also makes the stream drop the
 * envelope should it still arrive. A job whose envelope still waits in the stream is left;
 * otherwise, unless its placement is stored in `SVC_ACTOR` (`#placed`: a restarted server
 * forgets the ids of consumed messages), it is failed by compare-and-set from `queued`: its
 * envelope never arrived, or was stored and left the stream unplaced (`#waiting`).
 *
 * A job found waiting is looked at again at each sweep until it leaves `queued`
 * (`#stillWaiting`): an envelope the stream loses later in the job's wait would leave it
 * `queued` for good. Likewise a job found placed (`#stillPlaced`): a placement the stream loses
 * while its host is gone would. A batch job whose envelope its batch holds for a later wave is
 * left until released (`#released`). A record first checked past the streams' duplicate window
 * (120 s), as after a reaper outage that long, is not checked.
 */
export class EnqueueCheck {
  readonly #fresh = new Map<string, Fresh>();
  /** Found waiting, and not written since: looked at again at each sweep (`#stillWaiting`). */
  readonly #waitingJobs = new Map<string, Waiting>();
  /** Found placed and not started: looked at again at each sweep (`#stillPlaced`). */
  readonly #placedJobs = new Map<string, Placed>();
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
    private readonly hostBeats: (hostId: string) => Promise<boolean>,
    private readonly heldInBatch: (batchId: string, jobId: string) => Promise<boolean>,
    private readonly hostHolds: (hostId: string, seq: number) => Promise<boolean | null>,
    private readonly liveHosts: () => string[],
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
       * Whether an actor host still beats (read from the bucket before a job is failed for its
       * absence: a watched copy that fell behind must not make a live host look gone).
       */
      hostBeats: (hostId: string) => Promise<boolean>;
      /**
       * Whether a batch still holds the job's envelope for a later wave (read from the bucket
       * before the job is probed: a watched copy behind would have the probe block the envelope).
       */
      heldInBatch: (batchId: string, jobId: string) => Promise<boolean>;
      /**
       * Whether a live actor host holds the placement stored at `seq` (delivered to it, not yet
       * settled); null when it did not answer (an earlier release, or stopping).
       */
      hostHolds: (hostId: string, seq: number) => Promise<boolean | null>;
      /** The actor hosts that beat now, as far as the watched copy knows. */
      liveHosts: () => string[];
    },
  ): EnqueueCheck {
    const check = new EnqueueCheck(
      js,
      jobs,
      options.graceMs,
      options.log,
      options.onFailed,
      options.hostBeats,
      options.heldInBatch,
      options.hostHolds,
      options.liveHosts,
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
    // A later write that leaves the job queued is a drain's fence: its copy is looked for next.
    if (created || summary?.status === 'queued') {
      this.#fresh.set(key, {
        revision: m.seq,
        writtenAt: Math.floor(m.info.timestampNanos / 1_000_000),
      });
    } else {
      this.#fresh.delete(key);
      this.#waitingJobs.delete(key);
      this.#placedJobs.delete(key);
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
   * `started` on `hostId`: what a reap of that host fails besides its queue's (docs/shards.md).
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
    await this.#lookAgain(this.#placedJobs, (id, p) => this.#stillPlaced(id, p), failed);
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
   * it goes to the back of the line). Gone, it was placed (the dispatcher acknowledges an envelope
   * only once its placement is stored) or lost by the stream after the first look, which would
   * leave the job `queued` for good: settled as at the first look (`#settleGone`). Only while its
   * placement, made since the last look, is still within the duplicate window, where its probe
   * can tell placed from lost (the check reads its jobs at least that often while it leads).
   * Returns true when the job was failed.
   */
  async #stillWaiting(jobId: string, waiting: Waiting, now: number): Promise<boolean> {
    const jsm = await this.#manager();
    if (await jsm.streams.getMessage(Streams.jobs, { seq: waiting.seq })) {
      this.#waitingJobs.set(jobId, { ...waiting, seenAt: now });
      return false;
    }
    const windowMs = JOBS_DUPLICATE_WINDOW_SECONDS * 1000 - JOBS_DUPLICATE_WINDOW_MARGIN_MS;
    if (now - waiting.seenAt > windowMs) return false;
    const stored = await this.jobs.get(jobId);
    if (!stored || stored.archived || stored.revision !== waiting.revision) return false;
    if (stored.record.status !== 'queued') return false;
    return this.#settleGone(jobId, waiting, waiting.copy, true, waiting.seq);
  }

  /**
   * Looks again at a job whose placement was found stored. Still stored, it waits on. Gone
   * while the job's record is unchanged since it was found so, its host did not start it (a start,
   * a cancel and a drain's fence each write the record before the placement leaves the stream):
   * the stream lost it. A host that still beats may hold it in a mailbox (delivered before the
   * loss) and start it yet: it is asked, and while it says so (or does not answer) the job is
   * looked at again, until it starts or the host is gone. A host that twice in a row holds no
   * such placement never received it. A placement gone before the first look names no host:
   * every live host is asked. Either way nothing can run the job any more: failed
   * NOT_ENQUEUED, by compare-and-set from `queued` (a host that was only frozen and starts it
   * after that has its start refused). Returns true when failed.
   */
  async #stillPlaced(jobId: string, placed: Placed): Promise<boolean> {
    const jsm = await this.#manager();
    const message = await jsm.streams.getMessage(Streams.actor, { seq: placed.seq });
    if (message) {
      const hostId = SubjectParsers.actorHost(message.subject);
      this.#placedJobs.set(jobId, { ...placed, hostId });
      return false;
    }
    const stored = await this.jobs.get(jobId);
    if (!stored || stored.archived || stored.revision !== placed.revision) return false;
    if (stored.record.status !== 'queued') return false;
    const why = await this.#whyNoHolder(jobId, placed);
    if (why === null) return false;
    const ended = await this.jobs.failNotEnqueued(jobId, why);
    if (!ended) return false;
    this.log.warn(
      { job_id: jobId, seq: placed.seq, host_id: placed.hostId },
      `failed a job: ${why}`,
    );
    await this.onFailed(ended);
    return true;
  }

  /**
   * Who may still hold a job whose placement is gone: the placement's host while it beats, or,
   * when the placement was gone before the first look (its host not known), every live host.
   * Each is asked; one that holds it, or the known host not answering (an earlier release, or
   * stopping), keeps the job on the list (asked from then on, logged once). Null then; else, at
   * the second look in a row that found no holder, why the job is to be failed.
   */
  async #whyNoHolder(jobId: string, placed: Placed): Promise<string | null> {
    const known = placed.hostId;
    if (known !== null && !(await this.hostBeats(known))) {
      return `its placement left ${known}'s queue before it started, and that host is gone`;
    }
    const hosts = known !== null ? [known] : this.liveHosts();
    const answers = await Promise.all(hosts.map((h) => this.hostHolds(h, placed.seq)));
    const holder =
      hosts.find((_, i) => answers[i] === true) ?? (answers[0] === null ? known : null);
    const where = { job_id: jobId, seq: placed.seq, host_id: holder ?? known };
    if (holder != null) {
      this.#placedJobs.set(jobId, {
        ...placed,
        hostId: holder,
        goneSeen: true,
        notHeldSeen: false,
      });
      if (!placed.goneSeen) {
        this.log.info(
          where,
          'enqueue check: placement gone, its host still beats (it may hold the job); looked at again',
        );
      }
      return null;
    }
    // Lost before any host received it, the job waits for nothing. A delivery still on its way
    // at the first answer is in its host's hands by the next look: only a second "no" ends it.
    if (!placed.notHeldSeen) {
      this.#placedJobs.set(jobId, { ...placed, notHeldSeen: true });
      this.log.info(
        { ...where, asked: hosts.length },
        known !== null
          ? 'enqueue check: placement gone, its host does not hold it; asked again'
          : 'enqueue check: placement gone, no live actor host holds it; asked again',
      );
      return null;
    }
    return known !== null
      ? `its placement left ${known}'s queue before that host received it, and the host holds no such job`
      : `its placement left its actor host's queue before it started, and no live actor host holds it`;
  }

  /**
   * Whether the placement of the job's copy `copy` (`<job>.p<copy>`) is stored in `SVC_ACTOR`:
   * it stays there until its job ends or a drain hands it back, so its id is remembered even by a server that restarted since, which forgets the ids
   * of the messages it no longer stores (the envelope, consumed by the dispatcher). A probe that
   * was stored instead is deleted (no host reads its subject). Returns the placement's sequence
   * (0 when the server had not stored it yet when it answered), or null when not placed.
   */
  async #placed(jobId: string, copy: number): Promise<number | null> {
    const ack = await this.js.publish(Subjects.actorProbe, new Uint8Array(), {
      msgID: MessageIds.placement(jobId, copy),
    });
    if (ack.duplicate) return ack.seq;
    const jsm = await this.#manager();
    await retryTransient(() => jsm.streams.deleteMessage(Streams.actor, ack.seq, false)).catch(
      (err: unknown) => this.log.warn({ err, seq: ack.seq }, 'enqueue check: probe not deleted'),
    );
    return null;
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

  /**
   * True when the job's copy that may start it (its envelope, or the copy a drain handed back)
   * is neither in the queue nor placed, and the job was failed.
   */
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
    const copy = record.placement ?? 0;
    const h = natsHeaders();
    h.set(Headers.enqueueProbe, '1');
    const ack = await this.js.publish(Subjects.jobs(record.spec.context), new Uint8Array(), {
      msgID: copy > 0 ? MessageIds.handBack(jobId, copy) : MessageIds.envelope(jobId),
      headers: h,
    });
    if (ack.duplicate && (await this.#waiting(ack.seq))) {
      this.#fresh.delete(jobId);
      // Looked at again at each sweep while it waits (a sequence of 0 names nothing to look at).
      if (ack.seq > 0) {
        this.#waitingJobs.set(jobId, { ...fresh, copy, seq: ack.seq, seenAt: now });
      }
      this.log.debug({ job_id: jobId, seq: ack.seq, copy }, 'enqueue check: envelope stored; left');
      return false;
    }
    this.#fresh.delete(jobId);
    return this.#settleGone(jobId, fresh, copy, ack.duplicate, ack.seq);
  }

  /**
   * A queued job whose copy `copy` is not in the queue: left when that copy's placement is
   * stored, else failed NOT_ENQUEUED by compare-and-set from `queued`. `stored`: the copy had
   * been stored (at `seq`). A placed job is looked at again at each sweep (`#stillPlaced`). Returns
   * true when the job was failed.
   */
  async #settleGone(
    jobId: string,
    fresh: Fresh,
    copy: number,
    stored: boolean,
    seq: number,
  ): Promise<boolean> {
    // The dispatcher acknowledges an envelope only once its placement is stored: an envelope
    // that was stored and is gone was placed, or lost by the stream.
    const placedAt = await this.#placed(jobId, copy);
    if (placedAt !== null) {
      if (placedAt > 0) {
        const jsm = await this.#manager();
        const message = await jsm.streams.getMessage(Streams.actor, { seq: placedAt });
        const hostId = message ? SubjectParsers.actorHost(message.subject) : null;
        this.#placedJobs.set(jobId, {
          revision: fresh.revision,
          writtenAt: fresh.writtenAt,
          copy,
          seq: placedAt,
          hostId,
        });
      }
      this.log.info(
        { job_id: jobId },
        'enqueue check: placed on an actor host, not started yet; left to run',
      );
      return false;
    }
    const why = stored
      ? 'its message left the queue without being placed'
      : 'its message never reached the queue';
    const ended = await this.jobs.failNotEnqueued(jobId, why);
    if (!ended) return false;
    this.log.warn({ job_id: jobId, seq }, `failed a job: ${why}`);
    await this.onFailed(ended);
    return true;
  }
}
