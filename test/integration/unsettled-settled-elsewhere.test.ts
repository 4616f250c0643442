// An actor host whose bookkeeping of a job failed past every retry sends the job's message back
// and keeps the job's id, to fail the job at stop if it is still started there. When the job's
// shard moved meanwhile and its next owner ran it, nothing is left for the host to fail: it
// must forget the id, or it keeps one more for its whole life at every store outage.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buckets, DefaultTopology } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { startDevice } from '@svc/test/support';
import {
  NatsPublishFilter,
  NatsServerProcess,
  ShardOwners,
  captureLogs,
  hostNamed,
  http,
  keepsWhenJoined,
  shardOfDevice,
  startInProcessStack,
  startNamedActor,
  waitForJob,
  waitUntil,
} from '../harness/mod.js';

const PASSWORD = 'svc-demo';

test("when a job whose start its host could not store is run by its shard's next owner, then the host no longer keeps it to fail", async (t) => {
  const cleanup: (() => Promise<unknown>)[] = [];
  t.after(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
  });
  const nats = await NatsServerProcess.start();
  cleanup.push(() => nats.stop());
  // The first host reaches NATS through a relay that drops, on demand, its writes of job
  // records: a store outage of its own, past every retry.
  const filter = await NatsPublishFilter.start(nats.url);
  cleanup.push(() => filter.stop());
  const device = await startDevice({ platform: 'cisco_ios', enable: PASSWORD });
  cleanup.push(() => device.stop());
  const stack = await startInProcessStack(nats.url, { actors: 0 });
  cleanup.push(() => stack.stop());
  const nc = await connectNats(nats.url, 'test');
  cleanup.push(() => nc.close());
  const owners = await ShardOwners.open(nc);
  const jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology));
  const shard = shardOfDevice(device);
  // It gives the device's shard to the second host when that one joins.
  const firstId = hostNamed('host-a', (h) => !keepsWhenJoined(h, shard));
  const logs = captureLogs();
  const first = await startNamedActor(filter.url, firstId, {}, logs.sink);
  cleanup.push(() => first.stop());
  await owners.waitFor(shard, (o) => o.host === firstId && o.state === 'owned', 'shard owned');
  await waitUntil(() => owners.consumed(shard), 'the first host consuming it');

  filter.drop((subject) => subject.startsWith(`$KV.${Buckets.jobs}.`));
  cleanup.push(() => Promise.resolve(filter.drop(null)));
  const auth = { basic: { username: device.username, password: PASSWORD } };
  const submitted = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: { host: device.host, port: device.port, commands: ['show version'] },
  });
  assert.equal(submitted.status, 202, submitted.text);
  const jobId = submitted.json.job_id as string;
  await waitUntil(async () => (await owners.ackPending(shard)) === 1, 'the job delivered');

  // The second host joins while the first retries the job's start: the shard's release waits
  // for it, and goes once the first host has given up and sent the message back.
  const second = await startNamedActor(nats.url, 'host-b');
  cleanup.push(() => second.stop());
  const done = await waitForJob(stack.url, jobId, auth, 150_000);
  assert.equal(done.json.status, 'finished', done.text);
  assert.equal((await jobs.get(jobId))?.record.actor_host, 'host-b');
  assert.ok(
    logs.records.some(
      (r) => r['job_id'] === jobId && r['message'] === 'job bookkeeping failed; will retry',
    ),
    "the first host's bookkeeping of the job failed",
  );

  await waitUntil(() => first.unsettled() === 0, 'the first host to forget the job');
});
