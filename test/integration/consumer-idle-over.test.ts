// `idleOverMessages`: how an actor host's intake tells that its consumer ran past jobs on its
// subject (fault run 305, `frozen-leader`: after the frozen node resumed, 68 jobs stayed on a live
// host's subject for minutes while its consumer said "0 pending, 0 unacknowledged" and the host
// beat and pulled). The state is made here with a real nats-server: a consumer of the same name
// and filter made to start after the messages, as a consumer whose state ran past them. A
// work-queue stream takes only consumers that deliver all, so the stream here keeps its messages
// (limits), which for what the check reads (its subject's count, the consumer's two counts) is
// the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AckPolicy,
  DeliverPolicy,
  RetentionPolicy,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import { IdleOverWatch, connectNats, idleOverMessages } from '@svc/nats';
import { NatsServerProcess } from '../harness/mod.js';

test('when a work consumer has nothing pending while its subject holds messages, then idleOverMessages says at which delivered sequence, and null otherwise', async (t) => {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, 'idle-over-test');
  t.after(async () => {
    await nc.close();
    await nats.stop();
  });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  await jsm.streams.add({ name: 'W', subjects: ['w.>'], retention: RetentionPolicy.Limits });
  const consumer = async (subject: string, from?: number) => {
    const name = subject.replace('.', '_');
    await jsm.consumers.delete('W', name).catch(() => undefined);
    await jsm.consumers.add('W', {
      durable_name: name,
      filter_subject: subject,
      ack_policy: AckPolicy.Explicit,
      ...(from === undefined
        ? { deliver_policy: DeliverPolicy.All }
        : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from }),
    });
    return js.consumers.get('W', name);
  };
  for (let i = 0; i < 3; i++) await js.publish('w.a', `job ${i}`);

  // Nothing on its subject: not idle over anything.
  assert.equal(await idleOverMessages(jsm, 'W', 'w.b', await consumer('w.b')), null);
  // Messages it will deliver: pending.
  const delivering = await consumer('w.a');
  assert.equal(await idleOverMessages(jsm, 'W', 'w.a', delivering), null);
  // One delivered and not acknowledged, the rest pending: still not.
  const held = await delivering.next({ expires: 2000 });
  assert.ok(held, 'a message delivered');
  assert.equal(await idleOverMessages(jsm, 'W', 'w.a', delivering), null);
  // A consumer whose state is past the three messages still on its subject: idle over them, at
  // the sequence it would have delivered last (the same on every read while it stays so).
  const past = await consumer('w.a', 4);
  assert.equal((await past.info()).num_pending, 0);
  assert.equal(await idleOverMessages(jsm, 'W', 'w.a', past), 3);
  assert.equal(await idleOverMessages(jsm, 'W', 'w.a', past), 3);
  // Its owner replaces it on the second read that finds it so, never on a first.
  const watch = new IdleOverWatch(jsm, 'W', 'w.a');
  assert.equal(await watch.check(past), false);
  assert.equal(await watch.check(past), true);
  assert.equal(await watch.check(past), false, 'after a replacement it starts over');
});
