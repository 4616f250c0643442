// Issue 23: a device's jobs keep their order when the dispatcher fails over. With the relay, a
// new leader had to keep each device on the host its jobs were queued on, and take the jobs the
// dead leader held (delivered, not placed) before later ones. Re-targeted to shards
// (docs/shards.md), where the leader places no job, only assigns shards:
// - the leader fails over while a shard's release is under way (a host came back that the shard
//   prefers, and the owner still runs the device's job): the new leader completes the move, and
//   the device's jobs, queued and accepted meanwhile, run in order, once each, on the new owner;
// - replacing the test of a dispatcher killed holding a job it had not placed (it holds none
//   now): the nearest is the holder of a device's jobs killed with them, the shard's owner, here
//   together with the leader: the next owner, assigned by the next leader, runs the jobs the dead
//   one was delivered before the device's later ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DefaultTopology } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { loadDispatcherConfig, startDispatcher } from '@svc/dispatcher';
import { createLogger } from '@svc/telemetry';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  ServiceProcess,
  ShardOwners,
  captureLogs,
  cleanupForTest,
  hostNamed,
  http,
  keepsWhenJoined,
  shardOfDevice,
  startInProcessStack,
  startNamedActor,
  testEnv,
  waitForJob,
  waitUntil,
} from '../harness/mod.js';

const PASSWORD = 'svc-demo';
const command = (n: number) => `show interface GigabitEthernet0/${n}`;
const ran = (device: SimulatedDevice) =>
  device.stats.commands.map((c) => c.command).filter((c) => c.startsWith('show interface'));

test("when the dispatcher fails over while a device's shard is being released to a host that came back, then the new leader completes the move, and the device's jobs queued and accepted meanwhile run in order, once each", async (t) => {
  const cleanup = cleanupForTest(t, { ignoreFailures: true });
  const nats = cleanup.stopping(await NatsServerProcess.start());
  const device = cleanup.stopping(await startDevice({ platform: 'cisco_ios', enable: PASSWORD }));
  const env = testEnv(nats.url, { DISPATCH_LEASE: '2' });
  const stack = cleanup.stopping(
    await startInProcessStack(nats.url, { actors: 0, reaper: false, env }),
  );
  const nc = await connectNats(nats.url, 'test');
  cleanup.push(() => nc.close());
  const owners = await ShardOwners.open(nc);
  const jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology));
  const shard = shardOfDevice(device);
  const auth = { basic: { username: device.username, password: PASSWORD } };
  const submit = async (n: number) => {
    const a = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: { host: device.host, port: device.port, commands: [command(n)], read_timeout: 300 },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };
  const startActor = async (hostId: string) => {
    cleanup.stopping(await startNamedActor(nats.url, hostId, { DISPATCH_LEASE: '2' }));
  };

  // The preferred host is down: the device's shard is the other one's (which gives it up when
  // the preferred host is back). The device's first job holds it, its second waits behind.
  const other = hostNamed('host-b', (h) => !keepsWhenJoined(h, shard));
  const preferred = 'host-a';
  await startActor(other);
  const before = await owners.waitFor(
    shard,
    (o) => o.host === other && o.state === 'owned',
    'the shard owned by the other host',
  );
  await device.setFaults({ hold: `^${command(1)}$` });
  const first = await submit(1);
  const second = await submit(2);
  await waitUntil(async () => (await owners.ackPending(shard)) === 2, 'both jobs delivered');
  // The preferred host comes back: the shard's release is asked, and waits for the first job.
  await startActor(preferred);
  await owners.waitFor(
    shard,
    (o) => o.state === 'releasing' && o.host === other && o.to === preferred,
    'the release asked of the other host',
  );

  // The dispatcher fails over.
  await stack.dispatcher.stop();
  const logs = captureLogs();
  const dispatcherNc = await connectNats(nats.url, 'dispatcher-2');
  const dispatcher = await startDispatcher(loadDispatcherConfig(env), {
    nc: dispatcherNc,
    log: createLogger('dispatcher', 'DEBUG', logs.sink),
  });
  cleanup.push(async () => (await dispatcher.stop(), await dispatcherNc.close()));
  await waitUntil(
    () => logs.records.some((r) => r['message'] === 'leading context'),
    'the new dispatcher leading',
  );
  const third = await submit(3);
  assert.equal((await owners.of(shard))?.state, 'releasing', 'the release still under way');
  assert.equal((await jobs.get(second))!.record.status, 'queued');

  await device.setFaults({});
  const all = [first, second, third];
  for (const id of all) {
    const done = await waitForJob(stack.url, id, auth);
    assert.equal(done.json.status, 'finished', done.text);
  }
  assert.deepEqual(ran(device), [command(1), command(2), command(3)]);
  const records = await Promise.all(all.map(async (id) => (await jobs.get(id))!.record));
  assert.deepEqual(
    records.map((r) => r.actor_host),
    [other, preferred, preferred],
  );
  for (let i = 1; i < records.length; i++) {
    assert.ok(
      Date.parse(records[i]!.started_at!) >= Date.parse(records[i - 1]!.ended_at!),
      `${records[i]!.job_id} started before ${records[i - 1]!.job_id} ended`,
    );
  }
  const after = await owners.of(shard);
  assert.deepEqual(
    { host: after?.host, epoch: after?.epoch, state: after?.state },
    { host: preferred, epoch: before.epoch + 1, state: 'owned' },
  );
});

test("when the dispatcher and the owner of a device's shard are killed while the owner holds the device's jobs, delivered and never started, then the next owner runs them before the device's jobs accepted after", async (t) => {
  const nats = await NatsServerProcess.start();
  // The first device's job takes the owner's only session slot: the second's jobs wait for it.
  const [busy, device] = [
    await startDevice({ platform: 'cisco_ios', enable: PASSWORD }),
    await startDevice({ platform: 'cisco_ios', enable: PASSWORD }),
  ];
  const env = testEnv(nats.url, {
    LOG_LEVEL: 'INFO',
    DISPATCH_LEASE: '2',
    WORKER_SUSPECT_THRESHOLD: '2',
    WORKER_STALE_THRESHOLD: '120',
    JOB_REAPER_INTERVAL: '1',
  });
  const procs: ServiceProcess[] = [];
  const nc = await connectNats(nats.url, 'test');
  t.after(async () => {
    for (const p of procs.reverse()) await p.kill('SIGTERM');
    await nc.close();
    await busy.stop();
    await device.stop();
    await nats.stop();
  });
  const owners = await ShardOwners.open(nc);
  const jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology));
  const shards = [...new Set([shardOfDevice(busy), shardOfDevice(device)])];
  const gateway = ServiceProcess.start('gateway', env);
  const leader = ServiceProcess.start('dispatcher', env);
  const victim = ServiceProcess.start('device-actor', {
    ...env,
    ACTOR_HOST_ID: 'victim',
    ACTOR_MAX_SESSIONS: '1',
  });
  procs.push(gateway, leader, victim, ServiceProcess.start('reaper', env));
  const url = await gateway.httpUrl();
  const auth = { basic: { username: device.username, password: PASSWORD } };
  const submit = async (d: SimulatedDevice, n: number) => {
    const a = await http('POST', `${url}/v2/send-command`, {
      ...auth,
      body: { host: d.host, port: d.port, commands: [command(n)], read_timeout: 300 },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };
  const shard = shardOfDevice(device);
  const before = await owners.waitFor(
    shard,
    (o) => o.host === 'victim' && o.state === 'owned',
    "the device's shard owned by the victim",
  );
  await busy.setFaults({ hold: `^${command(1)}$` });
  const started = await submit(busy, 1);
  await waitUntil(
    async () => (await jobs.get(started))?.record.status === 'started',
    'the busy device’s job started',
  );
  const delivered = [await submit(device, 1), await submit(device, 2)];
  await waitUntil(async () => {
    let n = 0;
    for (const s of shards) n += await owners.ackPending(s);
    return n === 3;
  }, 'the device’s jobs delivered to the victim');

  await leader.kill('SIGKILL');
  await victim.kill('SIGKILL');
  procs.push(
    ServiceProcess.start('device-actor', { ...env, ACTOR_HOST_ID: 'survivor' }),
    ServiceProcess.start('dispatcher', env),
  );
  const later = await submit(device, 3);
  const all = [...delivered, later];
  for (const id of all) {
    const done = await waitForJob(url, id, auth, 60_000);
    assert.equal(done.json.status, 'finished', done.text);
    assert.equal((await jobs.get(id))!.record.actor_host, 'survivor');
  }
  assert.deepEqual(ran(device), [command(1), command(2), command(3)]);
  const after = await owners.of(shard);
  assert.equal(after?.host, 'survivor');
  assert.equal(after?.epoch, before.epoch + 1);
});
