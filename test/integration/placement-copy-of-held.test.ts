// A replaced placement consumer (stalled, or ran past its jobs) delivers again every job the
// host holds. With DEVICE_MAX_SESSIONS above 1 the second copy of a running job took the
// device's other slot at once: its start was refused (the job runs here) and the copy was
// acknowledged, which removes the job's message from the host's subject while the job still
// runs. Had the host died then, its drain would not have found the job, and the record would
// have said `started` for good.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstreamManager } from '@nats-io/jetstream';
import { Consumers, Headers, MessageIds, Streams, Subjects } from '@svc/proto';
import { connectNats, nextMessageOn } from '@svc/nats';
import { deviceStackForTest, http, submitCommand, waitForJob, waitUntil } from '../harness/mod.js';

test('when the placement consumer is replaced while a job runs, then the copy it delivers again neither runs nor settles the running job’s message', async (t) => {
  const { nats, device, stack, auth } = await deviceStackForTest(
    t,
    { platform: 'cisco_ios', enable: 'svc-demo' },
    { actors: 1, env: { DEVICE_MAX_SESSIONS: '2' } },
  );
  const nc = await connectNats(nats.url, 'test');
  t.after(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const host = stack.actors[0]!.hostId;
  const submit = (command: string) => submitCommand(stack.url, auth, device, command);
  await device.setFaults({ hold: 'show ip interface brief' });
  const running = await submit('show ip interface brief');
  await waitUntil(
    () => device.stats.commands.some((c) => c.command === 'show ip interface brief'),
    'the held command to reach the device',
  );
  const placed = await nextMessageOn(jsm, Streams.actor, Subjects.actor(host));
  assert.equal(placed?.header.get(Headers.msgId), MessageIds.placement(running, 0));

  // The consumer goes (as a stalled one is replaced); the host makes it again, and the new one
  // delivers the running job's message a second time.
  await jsm.consumers.delete(Streams.actor, Consumers.actor(host));
  await waitUntil(async () => {
    const info = await jsm.consumers.info(Streams.actor, Consumers.actor(host)).catch(() => null);
    return (info?.delivered.stream_seq ?? 0) >= placed.seq;
  }, 'the running job delivered again by the new consumer');
  // The device's next job comes behind that copy in the device's mailbox: once it has ended,
  // the copy has been dealt with.
  const next = await waitForJob(stack.url, await submit('show version'), auth);
  assert.equal(next.json.status, 'finished', next.text);

  const still = await http('GET', `${stack.url}/v2/send-command/${running}`, auth);
  assert.equal(still.json.status, 'started', still.text);
  assert.ok(
    await jsm.streams.getMessage(Streams.actor, { seq: placed.seq }),
    'the running job keeps its message on the host subject',
  );

  await device.setFaults({});
  const ended = await waitForJob(stack.url, running, auth);
  assert.equal(ended.json.status, 'finished', ended.text);
  assert.equal(
    device.stats.commands.filter((c) => c.command === 'show ip interface brief').length,
    1,
    'ran once',
  );
  await waitUntil(
    async () => (await jsm.streams.getMessage(Streams.actor, { seq: placed.seq })) === null,
    'its message settled once it ended',
  );
});
