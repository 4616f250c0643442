// A job delivered by a consumer and never acknowledged (to a process that died with it, or whose
// NATS node froze) is held by the consumer for its ack wait, and later jobs are delivered
// meanwhile. With the relay that was the dispatcher's consumer, and a dispatcher taking over
// deleted it (or found it held nothing) before consuming. Re-targeted to shards (docs/shards.md):
// each shard has one consumer, and a host taking a shard deletes it before consuming (the jobs
// no owner acknowledged come first, in stream order), then reads the stream's last sequence: the
// jobs at or below it are fenced to the new owner's epoch, so that an earlier owner that wakes
// cannot start them. Here the new owner reaches a real nats-server through a relay that drops
// its requests on demand, and a job is taken from the shard's consumer and never acknowledged,
// as a dead owner's delivery was. Until each step has succeeded, it consumes nothing.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Consumers, DefaultTopology, Streams } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { loadDispatcherConfig, startDispatcher } from '@svc/dispatcher';
import { startDevice } from '@svc/test/support';
import {
  NatsPublishFilter,
  NatsServerProcess,
  ShardOwners,
  captureLogs,
  cleanupForTest,
  http,
  shardOfDevice,
  silentLogger,
  startInProcessStack,
  startNamedActor,
  testEnv,
  waitForJob,
  waitHealthy,
  waitUntil,
} from '../harness/mod.js';

/**
 * The device's shard given up by its only host (stopped: `released`), a job taken from the
 * shard's consumer and held (never acknowledged), a second one behind it in the stream.
 */
async function heldOrderLab(t: TestContext) {
  const cleanup = cleanupForTest(t, { ignoreFailures: true });
  const nats = cleanup.stopping(await NatsServerProcess.start());
  const filter = cleanup.stopping(await NatsPublishFilter.start(nats.url));
  const device = cleanup.stopping(await startDevice({ platform: 'cisco_ios' }));
  const auth = { basic: { username: device.username, password: device.password } };
  const stack = cleanup.stopping(await startInProcessStack(nats.url));
  await waitHealthy(stack.url);
  const nc = await connect({ servers: nats.url });
  cleanup.push(() => nc.close());
  const owners = await ShardOwners.open(nc);
  const jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology));
  const shard = shardOfDevice(device);
  const durable = Consumers.shard('default', shard);
  const first = await owners.waitFor(shard, (o) => o.state === 'owned', 'the shard owned');
  await waitUntil(() => owners.consumed(shard), 'the owner consuming the shard');
  await stack.actors[0]!.stop();
  await owners.waitFor(shard, (o) => o.state === 'released', 'the shard released on stop');
  const dropped = new Map<string, number>();
  // Distinct commands: the same one twice would be one job (deduplication).
  const submit = async (command: string) => {
    const a = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: { host: device.host, port: device.port, enable: device.enable, commands: [command] },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };
  const held = await submit('show version');
  const consumer = await jetstream(nc).consumers.get(Streams.jobs, durable);
  assert.ok(await consumer.next({ expires: 10_000 }), 'a job delivered');
  const second = await submit('show ip interface brief');
  const logs = captureLogs();
  return {
    nats,
    filter,
    stack,
    cleanup,
    owners,
    jobs,
    shard,
    epoch: first.epoch,
    held,
    second,
    logs,
    /** From now on the new owner's requests to these subjects are dropped (counted). */
    dropping(subjects: string[]) {
      filter.drop((subject) => {
        if (!subjects.includes(subject)) return false;
        dropped.set(subject, (dropped.get(subject) ?? 0) + 1);
        return true;
      });
    },
    dropped: (subject: string) => dropped.get(subject) ?? 0,
    /** A new host, through the relay, to which the dispatcher gives the shard. */
    async join(): Promise<void> {
      cleanup.stopping(await startNamedActor(filter.url, 'host-b', {}, logs.sink));
    },
    /** Times the new owner tried to consume the shard and failed. */
    failures: () =>
      logs.records.filter(
        (r) => r['message'] === `shard default/${shard} consumer failed; consuming again`,
      ).length,
    async status(id: string) {
      return (await http('GET', `${stack.url}/v2/send-command/${id}`, auth)).json.status as string;
    },
    async assertRanInOrder() {
      const ran = [
        await waitForJob(stack.url, held, auth),
        await waitForJob(stack.url, second, auth),
      ];
      for (const r of ran) assert.equal(r.json.status, 'finished', r.text);
      const [a, b] = ran.map((r) => Date.parse(r.json.started_at as string));
      assert.ok(a! < b!, `the first job started at ${a}, after the second at ${b}`);
    },
  };
}

test("when a shard's new owner cannot delete the shard's consumer at once, then it consumes none of the shard's jobs until it has, and a device's jobs still run in order", async (t) => {
  const lab = await heldOrderLab(t);
  const DELETE = `$JS.API.CONSUMER.DELETE.${Streams.jobs}.${Consumers.shard('default', lab.shard)}`;
  lab.dropping([DELETE]);
  await lab.join();
  // Its deletes go nowhere. Consuming the consumer as it is would deliver the second job first.
  await waitUntil(
    () => lab.dropped(DELETE) >= 2 && lab.failures() >= 2,
    "the new owner's deletes of the shard's consumer dropped twice",
    { timeoutMs: 60_000, everyMs: 100 },
  );
  assert.equal(await lab.status(lab.second), 'queued', 'the second job started before the first');
  assert.equal(await lab.status(lab.held), 'queued');
  lab.filter.drop(null);
  await lab.assertRanInOrder();
});

test("when a shard's new owner cannot read up to where the earlier owner may hold jobs, then it consumes none of the shard's jobs until it can, and they run in order, fenced to its epoch", async (t) => {
  const lab = await heldOrderLab(t);
  // Given the shard only once its reads are dropped (the host reads the stream at its start).
  await lab.stack.dispatcher.stop();
  await lab.join();
  const INFO = `$JS.API.STREAM.INFO.${Streams.jobs}`;
  lab.dropping([INFO]);
  const nc = await connectNats(lab.nats.url, 'dispatcher-2');
  const dispatcher = await startDispatcher(loadDispatcherConfig(testEnv(lab.nats.url)), {
    nc,
    log: silentLogger('dispatcher'),
  });
  lab.cleanup.push(async () => {
    await dispatcher.stop();
    await nc.close();
  });
  const taken = await lab.owners.waitFor(
    lab.shard,
    (o) => o.host === 'host-b' && o.state === 'owned',
    'the shard given to the new host',
  );
  assert.equal(taken.epoch, lab.epoch + 1);
  await waitUntil(() => lab.failures() >= 2, "the new owner's reads of the stream failed twice", {
    timeoutMs: 60_000,
    everyMs: 100,
  });
  assert.ok(lab.dropped(INFO) >= 2);
  assert.equal(await lab.status(lab.held), 'queued');
  assert.equal(await lab.status(lab.second), 'queued');
  lab.filter.drop(null);
  await lab.assertRanInOrder();
  // Both were stored before the new owner took the shard: an earlier owner holding them may no
  // longer start them.
  for (const id of [lab.held, lab.second]) {
    assert.equal((await lab.jobs.get(id))!.record.placement, taken.epoch, id);
  }
});
