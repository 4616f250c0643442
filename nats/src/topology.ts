import {
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  jetstream,
  jetstreamManager,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  Buckets,
  JOBS_DUPLICATE_WINDOW_SECONDS,
  ObjectBuckets,
  Streams,
  Subjects,
  TEMPLATE_HISTORY,
  type Bucket,
  type TopologyOptions,
} from '@svc/proto';

const NS_PER_S = 1_000_000_000;

/** The KV buckets of the service, opened once per process. */
export type Stores = Record<Bucket, KV>;

/**
 * Creates the streams and buckets when missing (idempotent; every service calls it at start so
 * that any of them may come up first) and opens every bucket.
 */
export async function ensureTopology(
  nc: NatsConnection,
  opts: TopologyOptions,
  retryForMs = 30_000,
): Promise<Stores> {
  // A cluster that just started (or lost a node) has no JetStream leader for a few seconds.
  const deadline = Date.now() + retryForMs;
  for (;;) {
    try {
      return await createTopology(nc, opts);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

async function createTopology(nc: NatsConnection, opts: TopologyOptions): Promise<Stores> {
  const jsm = await jetstreamManager(nc);
  const replicas = opts.replicas;
  const workQueue = (
    name: string,
    subjects: string[],
  ): Partial<StreamConfig> & { name: string } => ({
    name,
    subjects,
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    num_replicas: replicas,
    duplicate_window: JOBS_DUPLICATE_WINDOW_SECONDS * NS_PER_S,
  });
  await ensureStream(jsm, workQueue(Streams.jobs, [Subjects.jobsAll]));
  await ensureStream(jsm, {
    name: Streams.events,
    // A job's status events are core messages unless kept for replay (JOB_EVENTS_REPLAY): the
    // job's record already stores each state, and an SSE stream follows the record.
    subjects: opts.jobEventsKept
      ? [Subjects.eventsAll, Subjects.batchEventsAll]
      : [Subjects.batchEventsAll],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    num_replicas: replicas,
    max_age: opts.eventsMaxAgeSeconds * NS_PER_S,
    discard: DiscardPolicy.Old,
  });

  const kvm = new Kvm(jetstream(nc));
  const ttl = (seconds: number) => seconds * 1000;
  const make = (name: Bucket, seconds = 0, history = 1, leaderReads = false) =>
    kvm.create(name, {
      replicas,
      history,
      ttl: ttl(seconds),
      storage: StorageType.File,
      // Direct gets are answered by any replica, one behind its leader included (a node back
      // from a freeze or a crash): it may not have a record yet, or still have a deleted one.
      // Where a read decides (a job's record, its keys), it goes to the leader; on a bucket an
      // earlier release made with direct gets on, this client still reads from the leader.
      ...(leaderReads ? { allow_direct: false } : {}),
    });
  const stores: Stores = {
    [Buckets.jobs]: await make(Buckets.jobs, opts.jobTtlSeconds, 1, true),
    [Buckets.failed]: await make(Buckets.failed, opts.failedTtlSeconds, 1, true),
    [Buckets.dedup]: await make(Buckets.dedup, opts.dedupTtlSeconds, 1, true),
    [Buckets.idempotency]: await make(Buckets.idempotency, opts.idempotencyTtlSeconds, 1, true),
    [Buckets.workers]: await make(Buckets.workers, 86_400),
    [Buckets.breakers]: await make(Buckets.breakers, 86_400),
    [Buckets.lockout]: await make(Buckets.lockout, 86_400),
    [Buckets.apiKeys]: await make(Buckets.apiKeys),
    [Buckets.revoked]: await make(Buckets.revoked),
    [Buckets.rateLimit]: await make(Buckets.rateLimit, 3600),
    [Buckets.locks]: await make(Buckets.locks),
    [Buckets.batches]: await make(Buckets.batches, opts.jobTtlSeconds),
    [Buckets.hostKeys]: await make(Buckets.hostKeys),
    [Buckets.transcripts]: await make(Buckets.transcripts, opts.jobTtlSeconds),
    [Buckets.templates]: await make(Buckets.templates, 0, TEMPLATE_HISTORY),
  };
  // Results too large for a record (jobs/src/results.ts) live as long as records do.
  await new Objm(jetstream(nc)).create(ObjectBuckets.results, {
    replicas,
    ttl: opts.jobTtlSeconds * NS_PER_S,
    storage: StorageType.File,
  });
  // A KV bucket has no entry cap of its own; its stream's max_msgs keeps the newest entries.
  const failedStream = Streams.kv(Buckets.failed);
  const info = await jsm.streams.info(failedStream);
  if (info.config.max_msgs !== opts.failedMaxRetain) {
    await jsm.streams.update(failedStream, { ...info.config, max_msgs: opts.failedMaxRetain });
  }
  return stores;
}

async function ensureStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig> & { name: string },
): Promise<void> {
  const name = config.name;
  let existing;
  try {
    existing = await jsm.streams.info(name);
  } catch {
    existing = null;
  }
  if (existing) {
    // A stream made by an older release gains the subjects added since (never loses any).
    const have = existing.config.subjects ?? [];
    const missing = (config.subjects ?? []).filter((s) => !have.includes(s));
    if (missing.length > 0) {
      await jsm.streams.update(name, { ...existing.config, subjects: [...have, ...missing] });
    }
  } else {
    try {
      await jsm.streams.add(config);
    } catch (err) {
      // Another service may have created it between our info and add.
      await jsm.streams.info(name).catch(() => {
        throw err;
      });
    }
  }
}
