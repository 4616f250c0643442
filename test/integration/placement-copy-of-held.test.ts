// A replaced consumer of a host's jobs (stalled, or ran past its jobs) delivers again every job
// the host holds; here a shard's consumer (docs/shards.md), whose jobs stay in `SVC_JOBS` until
// they end. With DEVICE_MAX_SESSIONS above 1 the second copy of a running job took the
// device's other slot at once: its start was refused (the job runs here) and the copy was
// acknowledged, which removes the job's message from the host's subject while the job still
// runs. Had the host died then, its drain would not have found the job, and the record would
// have said `started` for good.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstreamManager } from '@nats-io/jetstream';
import { Consumers, Headers, MessageIds, Streams, Subjects, jobShardOf } from '@svc/proto';
import { deviceKeyOf } from '@svc/device-access';
import { connectNats, nextMessageOn } from '@svc/nats';
import { deviceStackForTest, http, submitCommand, waitForJob, waitUntil } from '../harness/mod.js';

test('when the consumer of a host’s jobs is replaced while a job runs, then the copy it delivers again neither runs nor settles the running job’s message', async (t) => {
  const { nats, device, stack, auth } = await deviceStackForTest(
    t,
    { platform: 'cisco_ios', enable: 'svc-demo' },
    { actors: 1, env: { DEVICE_MAX_SESSIONS: '2' } },
  );
  const nc = await connectNats(nats.url, 'test');
  t.after(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const shard = jobShardOf(deviceKeyOf('default', device.host, device.port));
  const consumer = Consumers.shard('default', shard);
  const submit = (command: string) => submitCommand(stack.url, auth, device, command);
  await device.setFaults({ hold: 'show ip interface brief' });
  const running = await submit('show ip interface brief');
  await waitUntil(
    () => device.stats.commands.some((c) => c.command === 'show ip interface brief'),
    'the held command to reach the device',
  );
  const placed = await nextMessageOn(jsm, Streams.jobs, Subjects.jobShard('default', shard));
  assert.equal(placed?.header.get(Headers.msgId), MessageIds.envelope(running));

  // The consumer goes (as a stalled one is replaced); the host makes it again, and the new one
  // delivers the running job's message a second time.
  await jsm.consumers.delete(Streams.jobs, consumer);
  await waitUntil(async () => {
    const info = await jsm.consumers.info(Streams.jobs, consumer).catch(() => null);
    return (info?.delivered.stream_seq ?? 0) >= placed.seq;
  }, 'the running job delivered again by the new consumer');
  // The device's next job comes behind that copy in the device's mailbox: once it has ended,
  // the copy has been dealt with.
  const next = await waitForJob(stack.url, await submit('show version'), auth);
  assert.equal(next.json.status, 'finished', next.text);

  const still = await http('GET', `${stack.url}/v2/send-command/${running}`, auth);
  assert.equal(still.json.status, 'started', still.text);
  assert.ok(
    await jsm.streams.getMessage(Streams.jobs, { seq: placed.seq }),
    'the running job keeps its message on its shard',
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
    async () => (await jsm.streams.getMessage(Streams.jobs, { seq: placed.seq })) === null,
    'its message settled once it ended',
  );
});
