// The dispatcher consumes a context's jobs in stream order and places a device's jobs in that
// order. A job its consumer delivered and never saw acknowledged (to a dispatcher that died, or
// while its NATS node was frozen) is held by the consumer until its ack wait (30 s) ends, and
// the later jobs are delivered meanwhile. So a dispatcher that starts consuming after a stall,
// or after another leader, deletes the consumer first and makes it again: the new one delivers
// every job not acknowledged first, in order. When the request that decides it failed (the
// cluster still electing: `frozen-leader`, "JetStream system temporarily unavailable"), the
// failure was ignored and the old consumer consumed: a device's job ran 30 s after its later
// jobs. Here the dispatcher reaches a real nats-server through a relay that drops its requests
// on demand, and a job is taken from the consumer and never acknowledged, as the frozen node's
// (or the dead leader's) delivery was.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Consumers, Streams } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { loadDispatcherConfig, startDispatcher } from '@svc/dispatcher';
import {
  captureLogs,
  filteredDeviceStackForTest,
  http,
  silentLogger,
  testEnv,
  waitForJob,
  waitUntil,
  type DeviceStack,
  type NatsPublishFilter,
} from '../harness/mod.js';

const DURABLE = Consumers.dispatch('default');
const API = (op: string) => `$JS.API.CONSUMER.${op}.${Streams.jobs}.${DURABLE}`;

/** What both tests do with their stack: jobs, a delivery never acknowledged, the order. */
async function heldOrderLab(t: TestContext, lab: DeviceStack & { filter: NatsPublishFilter }) {
  const { device, stack, auth, nats, filter } = lab;
  const nc = await connect({ servers: nats.url });
  t.after(() => nc.close());
  const dropped = new Map<string, number>();
  return {
    /** From now on the dispatcher's requests to these subjects are dropped (counted). */
    dropping(subjects: string[]) {
      filter.drop((subject) => {
        if (!subjects.includes(subject)) return false;
        dropped.set(subject, (dropped.get(subject) ?? 0) + 1);
        return true;
      });
    },
    dropped: (subject: string) => dropped.get(subject) ?? 0,
    // Distinct commands: the same one twice would be one job (deduplication).
    async submit(command: string) {
      const a = await http('POST', `${stack.url}/v2/send-command`, {
        ...auth,
        body: { host: device.host, port: device.port, enable: device.enable, commands: [command] },
      });
      assert.equal(a.status, 202, a.text);
      return a.json.job_id as string;
    },
    /** Takes the next job from the dispatcher's consumer and never acknowledges it. */
    async takeAndHold() {
      const consumer = await jetstream(nc).consumers.get(Streams.jobs, DURABLE);
      assert.ok(await consumer.next({ expires: 10_000 }), 'a job delivered');
    },
    async status(id: string) {
      return (await http('GET', `${stack.url}/v2/send-command/${id}`, auth)).json.status as string;
    },
    async assertRanInOrder(first: string, second: string) {
      const ran = [
        await waitForJob(stack.url, first, auth),
        await waitForJob(stack.url, second, auth),
      ];
      for (const r of ran) assert.equal(r.json.status, 'finished', r.text);
      const [a, b] = ran.map((r) => Date.parse(r.json.started_at as string));
      assert.ok(a! < b!, `the first job started at ${a}, after the second at ${b}`);
    },
  };
}

test("when the dispatcher cannot delete its stalled consumer at once, then it consumes no job until it has, and a device's jobs still run in order", async (t) => {
  const logs = captureLogs();
  const stackLab = await filteredDeviceStackForTest(
    t,
    { platform: 'cisco_ios' },
    (service) => service === 'dispatcher',
    { logSink: logs.sink },
  );
  const lab = await heldOrderLab(t, stackLab);

  // The dispatcher's consume stalls (its pulls go nowhere), and it cannot delete the consumer.
  lab.dropping([API('MSG.NEXT'), API('DELETE')]);
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
  const first = await lab.submit('show version');
  await lab.takeAndHold();
  const second = await lab.submit('show ip interface brief');

  // Pulls go through again; deletes do not. Either the second job starts (the old consumer
  // consumed) or the dispatcher tries to delete its consumer once more.
  lab.dropping([API('DELETE')]);
  const before = lab.dropped(API('DELETE'));
  await waitUntil(
    async () => lab.dropped(API('DELETE')) > before || (await lab.status(second)) !== 'queued',
    'the second job started, or another delete of the consumer',
    { timeoutMs: 30_000, everyMs: 100 },
  );
  assert.equal(await lab.status(second), 'queued', 'the second job started before the first');
  stackLab.filter.drop(null);
  await lab.assertRanInOrder(first, second);
});

test("when a new dispatcher leader cannot read whether the last one held jobs, then it consumes no job until it can, and a device's jobs still run in order", async (t) => {
  // The stack's services reach the server directly; the new leader goes through the relay.
  const stackLab = await filteredDeviceStackForTest(t, { platform: 'cisco_ios' }, () => false);
  const lab = await heldOrderLab(t, stackLab);
  const { stack, nats, filter } = stackLab;

  // The leader stops holding the first job (delivered, never acknowledged: it died with it).
  await stack.dispatcher.stop();
  const first = await lab.submit('show version');
  await lab.takeAndHold();
  const second = await lab.submit('show ip interface brief');

  // A new leader, whose reads of the consumer go nowhere.
  lab.dropping([API('INFO')]);
  const nc = await connectNats(filter.url, 'dispatcher-2');
  const dispatcher = await startDispatcher(loadDispatcherConfig(testEnv(nats.url)), {
    nc,
    log: silentLogger('dispatcher'),
  });
  t.after(async () => {
    await dispatcher.stop();
    await nc.close();
  });
  // Its first read failed (and `js.consumers.get` reads the consumer too): past it.
  await waitUntil(
    () => lab.dropped(API('INFO')) >= 2,
    "the new leader's reads of the consumer dropped twice",
    { timeoutMs: 30_000, everyMs: 100 },
  );
  filter.drop(null);
  await lab.assertRanInOrder(first, second);
});
