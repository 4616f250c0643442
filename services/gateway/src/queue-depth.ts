import type { JetStreamManager } from '@nats-io/jetstream';
import { Streams, Subjects, type WorkerHeartbeat } from '@svc/proto';

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
 * Backlog of a context: jobs of the context accepted but not yet placed (its subject in
 * SVC_JOBS) plus jobs placed on the actor hosts that serve the context and not yet finished
 * (their subjects in SVC_ACTOR). `forContext` reads it fresh (the MAX_QUEUE_DEPTH check, the
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

  /** The backlog read fresh now (two stream-info requests). */
  async forContext(context: string): Promise<number> {
    const subject = Subjects.jobs(context);
    const [jobs, actor, hosts] = await Promise.all([
      this.jsm.streams.info(Streams.jobs, { subjects_filter: subject }),
      this.jsm.streams.info(Streams.actor, { subjects_filter: Subjects.actorAll }),
      this.hosts(),
    ]);
    const waiting = jobs.state.subjects?.[subject] ?? 0;
    const placed = actor.state.subjects ?? {};
    let running = 0;
    for (const h of hosts) {
      if (h.contexts.includes(context)) running += placed[Subjects.actor(h.host_id)] ?? 0;
    }
    return waiting + running;
  }

  /** Every job not yet finished, all contexts. */
  async total(): Promise<number> {
    const [jobs, actor] = await Promise.all([
      this.jsm.streams.info(Streams.jobs),
      this.jsm.streams.info(Streams.actor),
    ]);
    return jobs.state.messages + actor.state.messages;
  }
}
