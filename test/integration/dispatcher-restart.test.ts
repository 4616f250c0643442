import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startDevice } from '@svc/test/support';
import { loadDispatcherConfig, startDispatcher } from '@svc/dispatcher';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import {
  Buckets,
  LockKeys,
  ShardOwner,
  Streams,
  Subjects,
  decodeMessage,
  jobShardOf,
} from '@svc/proto';
import { deviceKeyOf } from '@svc/device-access';
import { connectNats } from '@svc/nats';
import {
  NatsServerProcess,
  http,
  silentLogger,
  startInProcessStack,
  testEnv,
  waitForJob,
  waitHealthy,
  waitUntil,
} from '../harness/mod.js';

// With the relay, a job waited for a dispatcher to place it. Jobs now go from the gateway to their
// shard's owner (docs/shards.md): the dispatcher only assigns shards, so its outage holds up only
// a shard whose owner left meanwhile, until a dispatcher is back.
test('when the dispatcher is down, then jobs still run, and a shard whose owner left meanwhile is taken by a live host once a dispatcher is back', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  const stack = await startInProcessStack(nats.url, { actors: 2 });
  const cleanup: (() => Promise<unknown>)[] = [() => stack.stop(), () => device.stop()];
  t.after(async () => {
    for (const step of cleanup) await step();
    await nats.stop();
  });
  await waitHealthy(stack.url);
  const auth = { basic: { username: device.username, password: device.password } };
  const submit = () =>
    http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: { host: '127.0.0.1', port: device.port, commands: ['show version'] },
    });
  const nc = await connectNats(nats.url, 'dispatcher-2');
  cleanup.unshift(() => nc.close());
  const kv = await new Kvm(nc).open(Buckets.locks);
  const shard = jobShardOf(deviceKeyOf('default', '127.0.0.1', device.port));
  const ownerOf = async () => {
    const entry = await kv.get(LockKeys.shard('default', shard));
    return entry?.operation === 'PUT' ? decodeMessage(ShardOwner, entry.value) : null;
  };
  const owned = await waitUntil(async () => {
    const owner = await ownerOf();
    return owner?.state === 'owned' && owner;
  }, "the device's shard assigned");

  await stack.dispatcher.stop();
  const first = await submit();
  assert.equal(first.status, 202, first.text);
  assert.equal((await waitForJob(stack.url, first.json.job_id, auth)).json.status, 'finished');

  // Its owner stops (releasing its shards); with no dispatcher, nobody takes the shard.
  const leaving = stack.actors.find((a) => a.hostId === owned.host)!;
  await leaving.stop();
  await waitUntil(async () => (await ownerOf())?.state === 'released', 'the shard released');
  const second = await submit();
  assert.equal(second.status, 202, second.text);
  const jsm = await jetstreamManager(nc);
  await waitUntil(async () => {
    const info = await jsm.streams.info(Streams.jobs, {
      subjects_filter: Subjects.jobShard('default', shard),
    });
    return info.state.subjects?.[Subjects.jobShard('default', shard)] === 1;
  }, 'the envelope to wait on its shard');
  const waiting = await http('GET', `${stack.url}/v2/send-command/${second.json.job_id}`, auth);
  assert.equal(waiting.json.status, 'queued');

  // The first dispatcher released its lease on stop, so the new one leads at once.
  const dispatcher = await startDispatcher(loadDispatcherConfig(testEnv(nats.url)), {
    nc,
    log: silentLogger('dispatcher'),
  });
  cleanup.unshift(() => dispatcher.stop());
  const done = await waitForJob(stack.url, second.json.job_id, auth);
  assert.equal(done.json.status, 'finished');
  const taken = await ownerOf();
  assert.ok(taken?.state === 'owned' && taken.host !== owned.host, JSON.stringify(taken));
  assert.equal(taken.epoch, owned.epoch + 1);
});
