// `ranPastMessage`: how an actor host's intake and a leading dispatcher tell that their consumer
// ran past jobs on its subject (fault run 305, `frozen-leader`: after the frozen node resumed, 68
// jobs stayed on a live host's subject for minutes while its consumer said "0 pending, 0
// unacknowledged" and the host beat and pulled). The state is made here with a real nats-server:
// a consumer of the same name and filter made to start after the messages, as a consumer whose
// state ran past them. A work-queue stream takes only consumers that deliver all, so the stream
// here keeps its messages (limits); the check reads the first message stored on the subject and
// the consumer's ack floor, which a work-queue stream keeps the same way (the last test).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import {
  AckPolicy,
  DeliverPolicy,
  RetentionPolicy,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import { RanPastWatch, connectNats, ranPastMessage } from '@svc/nats';
import { NatsServerProcess } from '../harness/mod.js';

/** A fresh nats-server with one stream on `<name lowercased>.>`, stopped after the test. */
async function streamFor(t: TestContext, name: string, retention: RetentionPolicy) {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, `ran-past-${name}`);
  t.after(async () => {
    await nc.close();
    await nats.stop();
  });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name, subjects: [`${name.toLowerCase()}.>`], retention });
  return { jsm, js: jetstream(nc) };
}

test("when a work consumer's ack floor is past messages still on its subject, then ranPastMessage names the first, and null otherwise", async (t) => {
  const { jsm, js } = await streamFor(t, 'W', RetentionPolicy.Limits);
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

  // Nothing on its subject: past nothing.
  assert.equal(await ranPastMessage(jsm, 'W', 'w.b', await consumer('w.b')), null);
  // Messages it will deliver: pending.
  const delivering = await consumer('w.a');
  assert.equal(await ranPastMessage(jsm, 'W', 'w.a', delivering), null);
  // One delivered and not acknowledged, the rest pending: still not.
  const held = await delivering.next({ expires: 2000 });
  assert.ok(held, 'a message delivered');
  assert.equal(await ranPastMessage(jsm, 'W', 'w.a', delivering), null);
  // A consumer whose state is past the three messages still on its subject: past them, the first
  // named (the same on every read while it stays so).
  const past = await consumer('w.a', 4);
  assert.equal((await past.info()).num_pending, 0);
  assert.equal(await ranPastMessage(jsm, 'W', 'w.a', past), 1);
  assert.equal(await ranPastMessage(jsm, 'W', 'w.a', past), 1);
  // Its owner replaces it on the second read that finds it so, never on a first.
  const watch = new RanPastWatch(jsm, 'W', 'w.a');
  assert.equal(await watch.check(past), false);
  assert.equal(await watch.check(past), true);
  assert.equal(await watch.check(past), false, 'after a replacement it starts over');
});

test('when a consumer that ran past messages on its subject keeps delivering newer ones, then its watch replaces it all the same', async (t) => {
  const { jsm, js } = await streamFor(t, 'W', RetentionPolicy.Limits);
  for (let i = 0; i < 3; i++) await js.publish('w.a', `skipped ${i}`);
  // Its state is past the three (it starts at the fourth) and it is busy: a newer message
  // delivered and acknowledged, the next one delivered and held, more pending. Under steady load
  // a consumer is never idle.
  await jsm.consumers.add('W', {
    durable_name: 'busy',
    filter_subject: 'w.a',
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: 4,
  });
  for (let i = 0; i < 3; i++) await js.publish('w.a', `newer ${i}`);
  const busy = await js.consumers.get('W', 'busy');
  const done = await busy.next({ expires: 2000 });
  assert.equal(done?.seq, 4, 'a newer message delivered');
  await done.ackAck();
  const held = await busy.next({ expires: 2000 });
  assert.equal(held?.seq, 5, 'the next one delivered and held');
  const state = await busy.info();
  assert.ok(state.num_pending > 0 && state.num_ack_pending > 0, 'busy');
  const watch = new RanPastWatch(jsm, 'W', 'w.a');
  assert.equal(await watch.check(busy), false, 'never on a first read');
  assert.equal(await watch.check(busy), true, 'the skipped messages wait: replaced');
});

test('when a work-queue consumer delivers, holds and acknowledges as usual, then its watch never replaces it', async (t) => {
  const { jsm, js } = await streamFor(t, 'Q', RetentionPolicy.Workqueue);
  await jsm.consumers.add('Q', {
    durable_name: 'work',
    filter_subject: 'q.a',
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
  });
  const work = await js.consumers.get('Q', 'work');
  const watch = new RanPastWatch(jsm, 'Q', 'q.a');
  // Each round: more published, the oldest held one acknowledged, one terminated, one newly
  // held; the subject always holds messages, delivered and not.
  const holding = [];
  for (let round = 0; round < 4; round++) {
    for (let i = 0; i < 4; i++) await js.publish('q.a', `round ${round} job ${i}`);
    await js.publish('q.b', 'another subject');
    const batch = await work.fetch({ max_messages: 3, expires: 2000 });
    for await (const m of batch) holding.push(m);
    await holding.shift()?.ackAck();
    holding.shift()?.term();
    assert.equal(await watch.check(work), false, `round ${round}`);
  }
  const state = await work.info();
  assert.ok(state.num_pending > 0 && state.num_ack_pending > 0, 'busy throughout');
  // Once all is acknowledged it is idle with nothing left: not either.
  for (;;) {
    const m = await work.next({ expires: 1000 });
    if (!m) break;
    holding.push(m);
  }
  for (const m of holding.splice(0)) await m.ackAck();
  assert.equal(await watch.check(work), false);
  assert.equal(await watch.check(work), false);
});
