import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { headers as natsHeaders, nanos, type NatsConnection } from '@nats-io/transport-node';
import { SvcError } from './errors.js';
import { decodeOrDrop } from './codec.js';
import { encodeJson } from './job-store.js';
import type { JobLifecycle } from './job-lifecycle.js';
import { JobEnvelope, type JobRecord } from './messages/job.js';
import { Consumers, MessageIds, Streams, Subjects, encodeToken } from './subjects.js';

export interface DrainOutcome {
  /** Jobs placed on the host but never started, sent back for placement elsewhere. */
  handedBack: string[];
  /** Jobs the host had started and never finished, now failed with WORKER_LOST. */
  orphaned: JobRecord[];
}

/**
 * Empties an actor host's placement subject: jobs it never started go back to their context's
 * subject (the dispatcher places them again, on a live host); jobs it started are failed with
 * WORKER_LOST and never run again. Used by the reaper for a silent host and by a host itself on
 * a graceful stop (then `failStarted` is false: its own running jobs were already settled).
 */
export async function drainHost(
  nc: NatsConnection,
  lifecycle: JobLifecycle,
  hostId: string,
  options: {
    failStarted: boolean;
    reason: string;
    /** Where a malformed message on the host's subject is logged (then dropped). */
    log?: { warn(obj: object, msg: string): void };
    /** Called as soon as a started job has been failed (events, audit). */
    onOrphaned?: (record: JobRecord) => Promise<void>;
  },
): Promise<DrainOutcome> {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  // A work-queue stream allows one consumer per subject: the host's own must go first.
  await jsm.consumers.delete(Streams.actor, Consumers.actor(hostId)).catch(() => undefined);
  const durable = `drain_${encodeToken(hostId)}`;
  await jsm.consumers.delete(Streams.actor, durable).catch(() => undefined);
  await jsm.consumers.add(Streams.actor, {
    durable_name: durable,
    filter_subject: Subjects.actor(hostId),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(60_000),
  });
  const outcome: DrainOutcome = { handedBack: [], orphaned: [] };
  try {
    const consumer = await js.consumers.get(Streams.actor, durable);
    for (;;) {
      const info = await consumer.info();
      if (info.num_pending === 0 && info.num_ack_pending === 0) break;
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
        const stored = await lifecycle.jobs.get(envelope.job_id);
        const status = stored?.record.status;
        if (status === 'queued') {
          const next: JobEnvelope = { ...envelope, placement: envelope.placement + 1 };
          const h = natsHeaders();
          const traceparent = m.headers?.get('traceparent');
          if (traceparent) h.set('traceparent', traceparent);
          await js.publish(Subjects.jobs(envelope.spec.context), encodeJson(next), {
            msgID: MessageIds.handBack(envelope.job_id, next.placement),
            headers: h,
          });
          outcome.handedBack.push(envelope.job_id);
        } else if (status === 'started' && options.failStarted) {
          const failed = await lifecycle.fail(
            envelope.job_id,
            'started',
            new SvcError('WORKER_LOST', options.reason),
          );
          if (failed) {
            outcome.orphaned.push(failed);
            await options.onOrphaned?.(failed);
          }
        }
        await m.ackAck();
      }
      if (seen === 0) break;
    }
  } finally {
    await jsm.consumers.delete(Streams.actor, durable).catch(() => undefined);
  }
  return outcome;
}
