import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
} from '@nats-io/jetstream';
import {
  headers as natsHeaders,
  nanos,
  type MsgHdrs,
  type NatsConnection,
} from '@nats-io/transport-node';
import {
  Consumers,
  Headers,
  JobEnvelope,
  MessageIds,
  Streams,
  Subjects,
  decodeOrDrop,
  encodeJson,
  type JobRecord,
} from '@svc/proto';
import { isConsumerNotFound, retryTransient } from '@svc/nats';
import type { Jobs } from './jobs.js';
import { placementMayStart } from './store.js';

export interface DrainOutcome {
  /** Jobs placed on the host but never started, sent back for placement elsewhere. */
  handedBack: string[];
  /** Jobs the host had started and never finished, now failed with WORKER_LOST. */
  orphaned: JobRecord[];
  /** Jobs the host had started, left on its subject (`failStarted` false) for a later drain. */
  left: string[];
}

export interface DrainOptions {
  failStarted: boolean;
  reason: string;
  /** Where a malformed message on the host's subject is logged (then dropped). */
  log?: { warn(obj: object, msg: string): void };
  /** Called as soon as a started job has been failed (and its event sent): audit. */
  onOrphaned?: (record: JobRecord) => Promise<void>;
  /**
   * With `failStarted`: the jobs the host started that are on no subject of its own (from a
   * shard it owned, docs/shards.md), read once its subject is empty; each is failed as a started
   * job found there is.
   */
  startedElsewhere?: () => Promise<readonly string[]>;
  /**
   * Filled as the drain goes, so that a caller knows what a drain that failed half way had
   * handed back (a fenced job is listed before its copy is sent: its copy comes from the next
   * drain or from the host itself if this send fails).
   */
  into?: DrainOutcome;
  /**
   * How long the drain's consumer outlives the drain's last pull (ms; default
   * DRAIN_CONSUMER_IDLE_MS): the server removes it then if the drain could not.
   */
  consumerIdleMs?: number;
}

/**
 * A drain's consumer holds the host's subject (a work-queue stream takes one consumer per
 * subject): if the drain cannot remove it (the store did not answer), the host could never take
 * its mailbox back and the jobs placed on it would wait for good. The server removes a consumer
 * nobody pulled from for this long (nats-server 2.9 applies this to durables); a drain pulls
 * every second or so, and one slowed past it only fails (its jobs stay on the host's subject).
 */
export const DRAIN_CONSUMER_IDLE_MS = 30_000;

/**
 * Sends a job back for placement as its copy `placement` (the placement its record names once
 * fenced). Deduplicated by job and placement: the drain that fenced it and a host that finds
 * its older copy fenced may both send it, and the copy is stored once (within the stream's
 * duplicate window; a later second copy cannot start the job twice: starting is a
 * compare-and-set from `queued`).
 */
export async function publishHandBack(
  js: JetStreamClient,
  envelope: JobEnvelope,
  placement: number,
  placed?: MsgHdrs,
): Promise<void> {
  // The copy keeps the trace and the device's earlier job (`Headers.after`) of its placement.
  const h = natsHeaders();
  for (const name of [Headers.traceparent, Headers.after]) {
    const value = placed?.get(name);
    if (value) h.set(name, value);
  }
  const handedBack: JobEnvelope = { ...envelope, placement };
  await js.publish(Subjects.jobs(envelope.spec.context), encodeJson(handedBack), {
    msgID: MessageIds.handBack(envelope.job_id, placement),
    headers: h,
  });
}

/** The consumer of a drain of `hostId`, removed by the server once idle for `idleMs`. */
export function drainConsumerConfig(hostId: string, idleMs: number) {
  return {
    durable_name: Consumers.drain(hostId),
    filter_subject: Subjects.actor(hostId),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(60_000),
    inactive_threshold: nanos(idleMs),
  };
}

/**
 * Empties an actor host's placement subject: jobs it never started go back to their context's
 * subject (the dispatcher places them again, on a live host); jobs it started are failed with
 * WORKER_LOST and never run again (`failStarted`), or left where they are for a later drain.
 * Used by the reaper for a silent host (first early, leaving its started jobs their margin;
 * then after WORKER_STALE_THRESHOLD) and by a host itself on a graceful stop.
 *
 * A handed-back job is fenced first: its record is changed by compare-and-set to name the new
 * placement (`JobRecord.placement`), and only a copy of that placement may start it
 * (`placementMayStart`). A host that was only slow and still holds the old copy in its mailbox
 * cannot start it; and if it started it first, the compare-and-set fails and the job is not
 * handed back.
 */
export async function drainHost(
  nc: NatsConnection,
  jobs: Jobs,
  hostId: string,
  options: DrainOptions,
): Promise<DrainOutcome> {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  // A work-queue stream allows one consumer per subject: the host's own must go first.
  await jsm.consumers.delete(Streams.actor, Consumers.actor(hostId)).catch(() => undefined);
  const durable = Consumers.drain(hostId);
  // An earlier drain's consumer (that drain died, its own delete failed) goes too. If it cannot,
  // and still holds jobs delivered to that drain, those would be handed back after the host's
  // later ones: this drain waits (a later one runs once the server has removed it, idle).
  await jsm.consumers.delete(Streams.actor, durable).catch(async (err: unknown) => {
    if (isConsumerNotFound(err)) return;
    const earlier = await jsm.consumers.info(Streams.actor, durable).catch((e: unknown) => {
      if (isConsumerNotFound(e)) return null;
      throw e;
    });
    if (earlier && earlier.num_ack_pending > 0) {
      throw new Error(
        `an earlier drain of ${hostId} still holds ${earlier.num_ack_pending} of its jobs`,
      );
    }
  });
  await jsm.consumers.add(
    Streams.actor,
    drainConsumerConfig(hostId, options.consumerIdleMs ?? DRAIN_CONSUMER_IDLE_MS),
  );
  const outcome: DrainOutcome = options.into ?? { handedBack: [], orphaned: [], left: [] };
  /** Fails a job the host started (by compare-and-set on that host), counted and audited. */
  const orphan = async (jobId: string): Promise<void> => {
    const failed = await jobs.failLost(jobId, hostId, options.reason);
    if (failed) {
      outcome.orphaned.push(failed);
      await options.onOrphaned?.(failed);
    }
  };
  try {
    const consumer = await js.consumers.get(Streams.actor, durable);
    for (;;) {
      const info = await consumer.info();
      // Messages left unacknowledged on purpose stay pending: done once only they remain.
      if (info.num_pending === 0 && info.num_ack_pending <= outcome.left.length) break;
      const batch = await consumer.fetch({ max_messages: 256, expires: 1000 });
      let seen = 0;
      for await (const m of batch) {
        seen++;
        const envelope = decodeOrDrop(JobEnvelope, m.data, {
          consumer: 'host_drain',
          log: options.log ?? { warn: () => undefined },
          where: { subject: m.subject, seq: m.seq },
        });
        if (!envelope) {
          m.term();
          continue;
        }
        const jobId = envelope.job_id;
        const next = envelope.placement + 1;
        const stored = await jobs.get(jobId);
        let record = stored?.record;
        if (record?.status === 'queued' && record.placement !== next) {
          if (placementMayStart(record, envelope)) {
            record = await jobs.fence(envelope, next, stored!);
          }
        }
        if (record?.status === 'queued' && record.placement === next) {
          // Fenced (now, or by an earlier drain whose publish or ack did not complete).
          outcome.handedBack.push(jobId);
          await publishHandBack(js, envelope, next, m.headers);
        } else if (record?.status === 'started' && record.actor_host === hostId) {
          if (!options.failStarted) {
            outcome.left.push(jobId);
            continue;
          }
          await orphan(jobId);
        }
        // Anything else (ended, started by another host, a copy of an older placement): done.
        await m.ackAck();
      }
      if (seen === 0) break;
    }
    if (options.failStarted && options.startedElsewhere) {
      for (const jobId of await options.startedElsewhere()) await orphan(jobId);
    }
  } finally {
    // Retried briefly (a node's election); past that, the idle threshold removes it.
    await retryTransient(() => jsm.consumers.delete(Streams.actor, durable), 5000).catch(
      () => undefined,
    );
  }
  return outcome;
}
