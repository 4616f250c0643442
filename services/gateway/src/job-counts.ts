import { jetstream, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  Headers,
  MalformedMessage,
  RecordSummary,
  SubjectParsers,
  decodeOrDrop,
  isTerminal,
  noteDropped,
  recordSummaryOf,
  type JobStatus,
} from '@svc/proto';
import { BurstFeed } from '@svc/nats';
import type { Jobs } from '@svc/jobs';
import type { Logger } from '@svc/telemetry';

/** What the counts are told, once per state a job reached (the gateway's job metrics). */
export interface JobCountSink {
  /** A job reached `status` (`svc_queue_jobs_total`). */
  status(status: JobStatus): void;
  /** A job started after waiting this long, seconds. */
  queueTime(seconds: number): void;
  /** A job ended; `ranSeconds` null when it never started. */
  ended(platform: string, status: JobStatus, ranSeconds: number | null): void;
}

const QUEUED = 1;
const STARTED = 2;

/**
 * How long an ended job is remembered: a write after its end (the outputs a cancelled job's
 * actor adds once its session stopped, seconds later) is not a new end.
 */
const ENDED_MEMORY_MS = 2 * 60_000;
/**
 * Bounds of what is remembered (≈ 100 bytes a job): jobs waiting or running, and ended jobs
 * (at 500 jobs/s two minutes are 60 000). A job forgotten early is at worst counted twice.
 */
const MAX_RUNNING = 200_000;
const MAX_ENDED = 100_000;

/**
 * Turns record summaries into counts, each state of a job once. The bucket keeps one entry per
 * key, so a reader in bursts sees a job that went through several states between two reads
 * only in the last: its summary says which it passed (`started_at` set, a terminal status). What
 * happened before `since` (this process's start) is not counted, as a live event feed would not.
 */
export class JobCountLedger {
  /** Jobs not ended yet: the states already counted. */
  readonly #running = new Map<string, number>();
  /** Ended jobs, oldest first, with when they were seen ending. */
  readonly #ended = new Map<string, number>();

  constructor(
    private readonly since: number,
    private readonly sink: JobCountSink,
  ) {}

  note(jobId: string, summary: RecordSummary, now = Date.now()): void {
    this.#prune(now);
    if (this.#ended.has(jobId)) return;
    const at = (time: string | null) => time !== null && Date.parse(time) >= this.since;
    let counted = this.#running.get(jobId) ?? 0;
    if (!(counted & QUEUED)) {
      counted |= QUEUED;
      if (at(summary.enqueued_at)) this.sink.status('queued');
    }
    if (summary.started_at !== null && !(counted & STARTED)) {
      counted |= STARTED;
      if (at(summary.started_at)) {
        this.sink.status('started');
        const waited = secondsBetween(summary.enqueued_at, summary.started_at);
        if (waited !== null) this.sink.queueTime(waited);
      }
    }
    if (isTerminal(summary.status)) {
      this.#running.delete(jobId);
      this.#ended.set(jobId, now);
      if (summary.ended_at === null || at(summary.ended_at)) {
        this.sink.status(summary.status);
        const ran =
          summary.started_at !== null && summary.ended_at !== null
            ? secondsBetween(summary.started_at, summary.ended_at)
            : null;
        this.sink.ended(summary.platform, summary.status, ran);
      }
      return;
    }
    this.#running.delete(jobId); // kept in write order: the oldest is the first to go
    this.#running.set(jobId, counted);
    if (this.#running.size > MAX_RUNNING) this.#running.delete(this.#running.keys().next().value!);
  }

  /** The job's record is gone (deleted or purged) before it ended. */
  forget(jobId: string): void {
    this.#running.delete(jobId);
  }

  #prune(now: number): void {
    for (const [jobId, seen] of this.#ended) {
      if (now - seen < ENDED_MEMORY_MS && this.#ended.size <= MAX_ENDED) break;
      this.#ended.delete(jobId);
    }
  }
}

/** Seconds from one time to the other; null when either is not a time (a record's are text). */
function secondsBetween(from: string, to: string): number | null {
  const seconds = (Date.parse(to) - Date.parse(from)) / 1000;
  return Number.isFinite(seconds) ? Math.max(0, seconds) : null;
}

/** How often each gateway reads the record writes by itself (a scrape reads them first). */
const COUNTS_READ_MS = 2000;

/**
 * The gateway's job counts, from the job records' writes: each write carries its record's
 * summary in a header, read in bursts (`BurstFeed`, headers only: results never travel to the
 * gateways), not from the jobs' events, which would wake every gateway three times per job. A
 * scrape catches up first, so it counts every state stored before it. A write without a summary
 * (by a release before the header) is counted from a read of its record.
 */
export class JobCounts {
  readonly #ledger: JobCountLedger;
  readonly #lookups = new Set<Promise<void>>();
  #feed: BurstFeed | null = null;

  private constructor(
    since: number,
    sink: JobCountSink,
    private readonly jobs: Jobs,
    private readonly log: Logger,
  ) {
    this.#ledger = new JobCountLedger(since, sink);
  }

  static start(
    ctx: { nc: NatsConnection; jobs: Jobs; log: Logger },
    sink: JobCountSink,
  ): JobCounts {
    const since = Date.now();
    const counts = new JobCounts(since, sink, ctx.jobs, ctx.log);
    const { stream, bucket } = ctx.jobs.recordStream();
    counts.#feed = new BurstFeed(jetstream(ctx.nc), {
      stream,
      from: new Date(since),
      everyMs: COUNTS_READ_MS,
      onMessage: (m) => counts.#note(bucket, m),
      log: ctx.log,
      label: 'metrics: job record',
    });
    return counts;
  }

  /** Resolves once every record write stored before the call is counted. */
  async catchUp(): Promise<void> {
    await this.#feed?.catchUp();
    await Promise.all(this.#lookups);
  }

  stop(): void {
    this.#feed?.stop();
  }

  #note(bucket: string, m: JsMsg): void {
    const jobId = SubjectParsers.kvKey(bucket, m.subject);
    if (jobId === null) return;
    if (m.headers?.get(Headers.kvOperation)) {
      this.#ledger.forget(jobId);
      return;
    }
    const where = { key: jobId, seq: m.seq };
    const raw = m.headers?.get(Headers.recordSummary);
    if (!raw) {
      const lookup = this.#lookUp(jobId, where).finally(() => this.#lookups.delete(lookup));
      this.#lookups.add(lookup);
      return;
    }
    const summary = decodeOrDrop(RecordSummary, raw, {
      consumer: 'gateway_metrics',
      log: this.log,
      where,
    });
    if (summary) this.#ledger.note(jobId, summary);
  }

  async #lookUp(jobId: string, where: Record<string, unknown>): Promise<void> {
    try {
      const stored = await this.jobs.get(jobId);
      // Gone since (deleted, or expired into the failed registry): nothing left to count from.
      if (stored && !stored.archived) this.#ledger.note(jobId, recordSummaryOf(stored.record));
    } catch (err) {
      if (err instanceof MalformedMessage) {
        noteDropped(err, { consumer: 'gateway_metrics', log: this.log, where });
      } else {
        this.log.warn({ err, ...where }, 'metrics: job record not read');
      }
    }
  }
}
