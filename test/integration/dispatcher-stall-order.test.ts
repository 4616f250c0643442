// The dispatcher consumes a context's jobs in stream order and places a device's jobs in that
// order. A job delivered to it while its NATS node was frozen never reached it; the consumer
// holds that delivery until its ack wait (30 s) ends, and delivers the later jobs meanwhile. So
// after a stall the dispatcher deletes its consumer and makes it again, which delivers every
// job not yet acknowledged first, in order. That delete can fail while the cluster is still
// electing (`frozen-leader`: "JetStream system temporarily unavailable"); the failure was
// ignored, the old consumer consumed, and a device's job ran 30 s after its later jobs. Here
// the dispatcher reaches a real nats-server through a relay that drops its pulls and its
// deletes of the consumer, and a job is taken from the consumer and never acknowledged, as the
// frozen node's delivery was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Consumers, Streams } from '@svc/proto';
import {
  captureLogs,
  filteredDeviceStackForTest,
  http,
  waitForJob,
  waitUntil,
} from '../harness/mod.js';

test("when the dispatcher cannot delete its stalled consumer at once, then it consumes no job until it has, and a device's jobs still run in order", async (t) => {
  const logs = captureLogs();
  const { device, stack, auth, nats, filter } = await filteredDeviceStackForTest(
    t,
    { platform: 'cisco_ios' },
    (service) => service === 'dispatcher',
    { logSink: logs.sink },
  );
  const durable = Consumers.dispatch('default');
  const pulls = `$JS.API.CONSUMER.MSG.NEXT.${Streams.jobs}.${durable}`;
  const deletes = `$JS.API.CONSUMER.DELETE.${Streams.jobs}.${durable}`;
  let deletesDropped = 0;
  const dropping = (subjects: string[]) =>
    filter.drop((subject) => {
      if (!subjects.includes(subject)) return false;
      if (subject === deletes) deletesDropped++;
      return true;
    });
  const nc = await connect({ servers: nats.url });
  t.after(() => nc.close());
  // Distinct commands: the same one twice would be one job (deduplication).
  const submit = async (command: string) => {
    const a = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: {
        host: device.host,
        port: device.port,
        enable: device.enable,
        commands: [command],
      },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };

  // The dispatcher's consume stalls (its pulls go nowhere), and it cannot delete the consumer.
  dropping([pulls, deletes]);
  await waitUntil(
    () =>
      logs.records.some(
        (r) =>
          r['message'] === 'consumer stalled; consuming again' &&
          r['consumer'] === 'dispatch default',
      ),
    "the dispatcher's consume stalled",
    { timeoutMs: 30_000 },
  );
  // The first job is delivered and never acknowledged (the frozen node's delivery); the second
  // waits in the stream behind it.
  const first = await submit('show version');
  const consumer = await jetstream(nc).consumers.get(Streams.jobs, durable);
  const taken = await consumer.next({ expires: 10_000 });
  assert.ok(taken, 'the first job delivered');
  const second = await submit('show ip interface brief');

  // Pulls go through again; deletes do not. Either the second job starts (the old consumer
  // consumed) or the dispatcher tries to delete its consumer once more.
  dropping([deletes]);
  const deletesBefore = deletesDropped;
  const status = async (id: string) =>
    (await http('GET', `${stack.url}/v2/send-command/${id}`, auth)).json.status as string;
  await waitUntil(
    async () => deletesDropped > deletesBefore || (await status(second)) !== 'queued',
    'the second job started, or another delete of the consumer',
    { timeoutMs: 30_000, everyMs: 100 },
  );
  assert.equal(await status(second), 'queued', 'the second job started before the first');
  filter.drop(null);

  const ran = [await waitForJob(stack.url, first, auth), await waitForJob(stack.url, second, auth)];
  for (const r of ran) assert.equal(r.json.status, 'finished', r.text);
  const [a, b] = ran.map((r) => Date.parse(r.json.started_at as string));
  assert.ok(a! < b!, `the first job started at ${a}, after the second at ${b}`);
});
