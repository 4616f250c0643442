import {
  Headers,
  JobEnvelope,
  MalformedMessage,
  Subjects,
  decodeOrDrop,
  isJobId,
  jobShardOf,
  noteDropped,
  type DropContext,
} from '@svc/proto';
import { deviceKeyOf } from './device-guards.js';

/**
 * The shard subject a job's envelope is queued on (docs/shards.md): its device's, by the key its
 * actor keys the device's mailbox by, so a device's jobs are on one subject in stored order.
 */
export function envelopeSubjectOf(envelope: {
  address?: string | undefined;
  spec: { context: string; host: string; port: number };
}): string {
  const { context, host, port } = envelope.spec;
  return Subjects.jobShard(
    context,
    jobShardOf(deviceKeyOf(context, envelope.address ?? host, port)),
  );
}

/** What `envelopeOfMessage` reads and settles: a JetStream message of `SVC_JOBS`. */
export interface QueuedMessage {
  readonly subject: string;
  readonly seq: number;
  readonly data: Uint8Array;
  readonly headers?: { get(key: string): string } | undefined;
  ack(): void;
  term(): void;
}

/**
 * The job envelope a consumer of `SVC_JOBS` was delivered, or null once the message is settled
 * here: the reaper's enqueue probe (it only holds the job's id in the stream's duplicate window)
 * is acknowledged; a message that is not an envelope, whose id is not a job id, or whose job
 * routes to another subject than the one it arrived on (`routeOf`), is terminated and counted
 * malformed. The subject is a boundary: a writer allowed on one context's subject must not
 * reach another context's shards or hosts, nor a device's jobs arrive on two shards.
 */
export function envelopeOfMessage(
  msg: QueuedMessage,
  routeOf: (envelope: JobEnvelope) => string,
  drop: Omit<DropContext, 'where' | 'log'> & {
    log: DropContext['log'] & { debug(obj: object, msg: string): void };
  },
): JobEnvelope | null {
  if (msg.headers?.get(Headers.enqueueProbe)) {
    drop.log.debug({ seq: msg.seq, subject: msg.subject }, 'enqueue probe dropped');
    msg.ack();
    return null;
  }
  const where = { subject: msg.subject, seq: msg.seq };
  const envelope = decodeOrDrop(JobEnvelope, msg.data, { ...drop, where });
  if (envelope === null) {
    msg.term();
    return null;
  }
  // The id becomes a key in the store, a log field, a subject token: a job id or nothing.
  const issue = !isJobId(envelope.job_id)
    ? { loc: ['message', 'job_id'], msg: 'not a job id', type: 'pattern' }
    : routeOf(envelope) !== msg.subject
      ? { loc: ['message', 'subject'], msg: 'not its job subject', type: 'misrouted' }
      : null;
  if (issue === null) return envelope;
  const at = issue.type === 'misrouted' ? { ...where, job_id: envelope.job_id } : where;
  noteDropped(new MalformedMessage('JobEnvelope', [issue]), { ...drop, where: at });
  msg.term();
  return null;
}
