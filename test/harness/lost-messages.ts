import type { JetStreamManager } from '@nats-io/jetstream';
import { Headers } from '@svc/proto';
import { nextMessageOn } from '@svc/nats';

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
  for (let from = 0; ;) {
    const m = await nextMessageOn(jsm, stream, subject, from);
    if (!m) return false;
    if (m.header.get(Headers.msgId) === msgId && !m.header.get(Headers.enqueueProbe)) {
      return jsm.streams.deleteMessage(stream, m.seq);
    }
    from = m.seq + 1;
  }
}
