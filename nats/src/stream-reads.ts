import type { JetStreamManager, MsgRequest, StoredMsg } from '@nats-io/jetstream';

/**
 * The first message stored on `subject` in `stream` at or after sequence `from`, or null. One
 * STREAM.MSG.GET, which takes `next_by_subj` since nats-server 2.9 (the client types the field
 * for direct gets only, which a stream must allow).
 */
export function nextMessageOn(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  from = 0,
): Promise<StoredMsg | null> {
  return jsm.streams.getMessage(stream, { seq: from, next_by_subj: subject } as MsgRequest);
}
