import type { ConsumerInfo, JetStreamManager } from '@nats-io/jetstream';
import { Consumers, JOB_SHARDS, Streams, Subjects } from '@svc/proto';

/**
 * How long one read of a context's backlog serves the queue positions of later submissions
 * (with this gateway's own submissions since the read added). Two stream-info requests per
 * submission were a fifth of a job's NATS round trips; at 200 submissions/s this makes them ~8.
 */
const POSITION_READ_MS = 250;

/** Every context's backlog as last read, and this gateway's submission counts at the read. */
interface Snapshot {
  depths: Map<string, number>;
  queuedAtRead: Map<string, number>;
  readAt: number;
}

/**
 * Backlog of a context: its jobs accepted and not yet ended. A job's envelope stays on its shard
 * subject until the job ends (docs/architecture.md, job path), so the backlog is what the shard
 * consumers have not acknowledged, plus what waits on the context's own subject for the
 * dispatcher to forward (gateways of an earlier release). `forContext` reads it fresh (the
 * MAX_QUEUE_DEPTH check, the cluster view); `ahead` answers queue positions, approximate as SPEC
 * allows, from a shared recent read.
 */
export class QueueDepth {
  /** Submissions this gateway queued, per context, since it started. */
  readonly #queued = new Map<string, number>();
  #snapshot: Snapshot | null = null;
  /** The fresh read under way, and the one that follows it for callers that came meanwhile. */
  #freshRead: Promise<Map<string, number>> | null = null;
  #nextFreshRead: Promise<Map<string, number>> | null = null;

  constructor(
    private readonly jsm: JetStreamManager,
    /** SVC_CONTEXTS: whose consumers `total` reads. */
    private readonly contexts: readonly string[],
  ) {}

  /**
   * Jobs ahead of a new submission: the backlog of a read at most POSITION_READ_MS old (of every
   * context's consumers at once; submissions waiting for one share it, `#fresh`) plus the
   * submissions this gateway queued since that read was asked for, so back-to-back submissions
   * here see each other. A submission queued while the read was waited for may count twice:
   * the position errs high, never low.
   */
  async ahead(context: string): Promise<number> {
    const snapshot = this.#snapshot;
    const current =
      snapshot && performance.now() - snapshot.readAt < POSITION_READ_MS
        ? snapshot
        : await this.#readAll();
    const atRead = current.queuedAtRead.get(context) ?? 0;
    return (current.depths.get(context) ?? 0) + this.#queuedIn(context) - atRead;
  }

  /** Counts a submission this gateway queued (its envelope is in the stream). */
  noteQueued(context: string): void {
    this.#queued.set(context, this.#queuedIn(context) + 1);
  }

  #queuedIn(context: string): number {
    return this.#queued.get(context) ?? 0;
  }

  async #readAll(): Promise<Snapshot> {
    const queuedAtRead = new Map(this.#queued);
    const readAt = performance.now();
    const depths = await this.#fresh();
    return (this.#snapshot = { depths, queuedAtRead, readAt });
  }

  /**
   * The backlog read fresh now, from the consumers of `SVC_JOBS` (one listing for all): each
   * consumer's jobs not yet delivered plus those delivered and not yet acknowledged. Not the
   * stream's message counts: a stream replica that rejoined after a crash may keep messages its
   * leader removed long ago (nats-server 2.9), and would report them for good once it leads. A
   * subject with no consumer yet (a shard no host took, a context no dispatcher led) counts what
   * it stores, read only then.
   */
  async forContext(context: string): Promise<number> {
    return (await this.#fresh()).get(context) ?? 0;
  }

  /**
   * Every context's backlog from a read that began after the call. Callers share reads: one
   * that comes while a read is under way waits for the next, which every caller that came
   * meanwhile shares (a MAX_QUEUE_DEPTH check per submission at 64 in flight read ~1 per job).
   */
  #fresh(): Promise<Map<string, number>> {
    if (this.#freshRead === null) {
      const read = this.byContext(this.contexts).finally(() => {
        if (this.#freshRead === read) this.#freshRead = null;
      });
      this.#freshRead = read;
      return read;
    }
    this.#nextFreshRead ??= this.#freshRead.then(
      () => this.#afterFreshRead(),
      () => this.#afterFreshRead(),
    );
    return this.#nextFreshRead;
  }

  #afterFreshRead(): Promise<Map<string, number>> {
    this.#nextFreshRead = null;
    return this.#fresh();
  }

  /** Every job not yet ended, all contexts (the same reads). */
  async total(): Promise<number> {
    let sum = 0;
    for (const depth of (await this.byContext(this.contexts)).values()) sum += depth;
    return sum;
  }

  /** The backlogs of several contexts, read fresh at once (one listing). */
  async byContext(contexts: readonly string[]): Promise<Map<string, number>> {
    const infos = new Map<string, ConsumerInfo>();
    for await (const info of this.jsm.consumers.list(Streams.jobs)) infos.set(info.name, info);
    const depths = new Map<string, number>();
    const unconsumed: [string, string][] = [];
    for (const context of contexts) {
      const subjects: [string, string][] = [[Consumers.dispatch(context), Subjects.jobs(context)]];
      for (let shard = 0; shard < JOB_SHARDS; shard++) {
        subjects.push([Consumers.shard(context, shard), Subjects.jobShard(context, shard)]);
      }
      let depth = 0;
      for (const [durable, subject] of subjects) {
        const info = infos.get(durable);
        if (info) depth += info.num_pending + info.num_ack_pending;
        else unconsumed.push([context, subject]);
      }
      depths.set(context, depth);
    }
    if (unconsumed.length === 0) return depths;
    const stream = await this.jsm.streams.info(Streams.jobs, { subjects_filter: Subjects.jobsAll });
    const stored = stream.state.subjects ?? {};
    for (const [context, subject] of unconsumed) {
      depths.set(context, (depths.get(context) ?? 0) + (stored[subject] ?? 0));
    }
    return depths;
  }
}
