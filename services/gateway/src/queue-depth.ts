import type { ConsumerInfo, JetStreamManager } from '@nats-io/jetstream';
import { Consumers, Streams, Subjects, type WorkerHeartbeat } from '@svc/proto';
import { isConsumerNotFound } from '@svc/nats';

/** The actor hosts the gateway knows of (their heartbeats). */
export type HostsSource = () => Promise<readonly Pick<WorkerHeartbeat, 'host_id' | 'contexts'>[]>;

/**
 * How long one read of a context's backlog serves the queue positions of later submissions
 * (with this gateway's own submissions since the read added). Two stream-info requests per
 * submission were a fifth of a job's NATS round trips; at 200 submissions/s this makes them ~8.
 */
const POSITION_READ_MS = 250;

/** A context's backlog as last read, and this gateway's submission count at the read. */
interface Snapshot {
  depth: number;
  queuedAtRead: number;
  readAt: number;
}

/**
 * Backlog of a context: jobs of the context accepted but not yet placed (its dispatch consumer)
 * plus jobs placed on the actor hosts that serve the context and not yet finished (their
 * placement consumers). `forContext` reads it fresh (the MAX_QUEUE_DEPTH check, the
 * cluster view); `ahead` answers queue positions, approximate as SPEC allows, from a shared
 * recent read. A host serving several contexts counts its whole backlog for each of them (its
 * placement subject does not say which context a job came from).
 */
export class QueueDepth {
  /** Submissions this gateway queued, per context, since it started. */
  readonly #queued = new Map<string, number>();
  readonly #snapshots = new Map<string, Snapshot>();
  readonly #reads = new Map<string, Promise<Snapshot>>();

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly hosts: HostsSource,
    /** SVC_CONTEXTS: whose dispatch consumers `total` reads. */
    private readonly contexts: readonly string[],
  ) {}

  /**
   * Jobs ahead of a new submission: the backlog of a read at most POSITION_READ_MS old (one
   * read in flight serves every submission waiting for it) plus the submissions this gateway
   * queued since that read, so back-to-back submissions here see each other. A submission
   * queued while the read was in flight may count twice: the position errs high, never low.
   */
  async ahead(context: string): Promise<number> {
    const snapshot = this.#snapshots.get(context);
    const current =
      snapshot && performance.now() - snapshot.readAt < POSITION_READ_MS
        ? snapshot
        : await this.#read(context);
    return current.depth + this.#queuedIn(context) - current.queuedAtRead;
  }

  /** Counts a submission this gateway queued (its envelope is in the stream). */
  noteQueued(context: string): void {
    this.#queued.set(context, this.#queuedIn(context) + 1);
  }

  #queuedIn(context: string): number {
    return this.#queued.get(context) ?? 0;
  }

  #read(context: string): Promise<Snapshot> {
    let read = this.#reads.get(context);
    if (!read) {
      const queuedAtRead = this.#queuedIn(context);
      const readAt = performance.now();
      read = this.forContext(context)
        .then((depth) => {
          const snapshot = { depth, queuedAtRead, readAt };
          this.#snapshots.set(context, snapshot);
          return snapshot;
        })
        .finally(() => this.#reads.delete(context));
      this.#reads.set(context, read);
    }
    return read;
  }

  /**
   * The backlog read fresh now, from the consumers: the context's dispatch consumer (jobs not
   * yet placed: pending, or delivered and not yet acknowledged) plus the placement consumers of
   * the hosts serving the context (jobs placed and not yet finished). Not the streams' message
   * counts: a stream replica that rejoined after a crash may keep messages its leader removed
   * long ago (nats-server 2.9), and would report them for good once it leads.
   */
  async forContext(context: string): Promise<number> {
    const hosts = await this.hosts();
    const counts = await Promise.all([
      this.#dispatchBacklog(context),
      this.#shardBacklog(context),
      ...hosts.filter((h) => h.contexts.includes(context)).map((h) => this.#hostBacklog(h.host_id)),
    ]);
    return counts.reduce((a, b) => a + b, 0);
  }

  /** Every job not yet finished, all contexts (the same consumer counts). */
  async total(): Promise<number> {
    const hosts = await this.hosts();
    const counts = await Promise.all([
      ...this.contexts.map((c) => this.#dispatchBacklog(c)),
      ...this.contexts.map((c) => this.#shardBacklog(c)),
      ...hosts.map((h) => this.#hostBacklog(h.host_id)),
    ]);
    return counts.reduce((a, b) => a + b, 0);
  }

  async #dispatchBacklog(context: string): Promise<number> {
    const info = await this.#consumer(Streams.jobs, Consumers.dispatch(context));
    if (info) return info.num_pending + info.num_ack_pending;
    // No dispatcher ever ran: the consumer does not exist yet and every message waits.
    const subject = Subjects.jobs(context);
    const stream = await this.jsm.streams.info(Streams.jobs, { subjects_filter: subject });
    return stream.state.subjects?.[subject] ?? 0;
  }

  /**
   * Jobs on the context's shard subjects (docs/shards.md): each stays there until it ends, so
   * the subjects' message counts are the backlog, read in one request.
   */
  async #shardBacklog(context: string): Promise<number> {
    const stream = await this.jsm.streams.info(Streams.jobs, {
      subjects_filter: Subjects.jobShards(context),
    });
    return Object.values(stream.state.subjects ?? {}).reduce((a, b) => a + b, 0);
  }

  async #hostBacklog(hostId: string): Promise<number> {
    const info = await this.#consumer(Streams.actor, Consumers.actor(hostId));
    return info ? info.num_pending + info.num_ack_pending : 0;
  }

  /** A consumer's info, or null when it does not exist. */
  async #consumer(stream: string, name: string): Promise<ConsumerInfo | null> {
    try {
      return await this.jsm.consumers.info(stream, name);
    } catch (err) {
      if (isConsumerNotFound(err)) return null;
      throw err;
    }
  }
}
