import type { JetStreamManager } from '@nats-io/jetstream';
import { Headers } from '@svc/proto';
import { nextMessageOn } from '@svc/nats';

/**
 * The sequence of the message stored on `subject` of `stream` under message id `msgId` (not the
 * reaper's probe of that id), or null when none is stored.
 */
async function storedSeq(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  msgId: string,
): Promise<number | null> {
  for (let from = 0; ;) {
    const m = await nextMessageOn(jsm, stream, subject, from);
    if (!m) return null;
    if (m.header.get(Headers.msgId) === msgId && !m.header.get(Headers.enqueueProbe)) return m.seq;
    from = m.seq + 1;
  }
}

/**
 * Deletes the message stored on `subject` of `stream` under message id `msgId` (not the reaper's
 * probe of that id), as a stream that loses a stored message does. False when none is stored.
 */
export async function loseMessage(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  msgId: string,
): Promise<boolean> {
  const seq = await storedSeq(jsm, stream, subject, msgId);
  return seq !== null && jsm.streams.deleteMessage(stream, seq);
}
