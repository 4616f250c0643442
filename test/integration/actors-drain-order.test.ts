// Issue 23, "a device's jobs keep their acceptance order across any single failure": an actor
// host that was only frozen beats again after it was marked draining. With the relay, the jobs a
// drain handed back from it and a job accepted meanwhile were held by the dispatcher until the
// drain's outcome was known. Re-targeted to shards (docs/shards.md): the frozen host owned the
// device's shard, and holds the device's running job and two waiting ones in its mailbox; once
// it is marked draining the dispatcher gives its shards to the other host, which fences the
// jobs it was delivered again and waits for the running one. A job is accepted after the
// takeover. The frozen host then wakes, still holding the waiting jobs: it must start none of
// them, and every job runs once, in acceptance order, one at a time.
//
// A second test: an owner that has not learned its shards were taken over (alive, cut off from
// the heartbeats and the shard owners' bucket) ends its running job while the new owner waits
// for it: it must start none of the device's later jobs, which the new owner has fenced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstreamManager } from '@nats-io/jetstream';
import { Buckets, DefaultTopology, JOB_SHARDS } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { startDevice } from '@svc/test/support';
import {
  NatsPublishFilter,
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
  submitHeldJob,
  testEnv,
  waitForJob,
  waitForJobLine,
  waitUntil,
  waitWorkers,
} from '../harness/mod.js';

const PASSWORD = 'svc-demo';

test('when the owner of a device’s shard is frozen past WORKER_SUSPECT_THRESHOLD, its shards are taken over, and it wakes holding the device’s jobs, then it starts none of them, and they and a job accepted meanwhile run after its running job, in order, once each', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: PASSWORD });
  const env = testEnv(nats.url, {
    WORKER_STALE_THRESHOLD: '120',
    WORKER_SUSPECT_THRESHOLD: '2',
    JOB_REAPER_INTERVAL: '1',
    LOG_LEVEL: 'INFO',
  });
  const nc = await connectNats(nats.url, 'test');
  const procs: ServiceProcess[] = [];
  let frozen: ServiceProcess | null = null;
  t.after(async () => {
    if (frozen) frozen.child.kill('SIGCONT');
    for (const p of procs.reverse()) await p.kill('SIGTERM');
    await nc.close();
    await device.stop();
    await nats.stop();
  });
  const shard = shardOfDevice(device);
  // Each keeps the device's shard when the other (re)joins: the shard moves only by takeover.
  const victimId = hostNamed('victim-', (h) => keepsWhenJoined(h, shard));
  const survivorId = hostNamed('survivor-', (h) => keepsWhenJoined(h, shard));
  const owners = await ShardOwners.open(nc);
  const jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology));
  const victim = ServiceProcess.start('device-actor', { ...env, ACTOR_HOST_ID: victimId });
  const gateway = ServiceProcess.start('gateway', env);
  procs.push(
    ServiceProcess.start('reaper', env),
    ServiceProcess.start('dispatcher', env),
    victim,
    gateway,
  );
  const url = await gateway.httpUrl();
  const first = await owners.waitFor(
    shard,
    (o) => o.host === victimId && o.state === 'owned',
    "the device's shard owned by the first host",
  );
  const survivor = ServiceProcess.start('device-actor', { ...env, ACTOR_HOST_ID: survivorId });
  procs.push(survivor);
  await waitUntil(async () => {
    for (let s = 0; s < JOB_SHARDS; s++) if ((await owners.of(s))?.host === survivorId) return true;
    return false;
  }, 'the second host owning its share of the shards');

  const auth = { basic: { username: device.username, password: PASSWORD } };
  const command = (n: number) => `show interface GigabitEthernet0/${n}`;
  const submit = async (n: number) => {
    const a = await http('POST', `${url}/v2/send-command`, {
      ...auth,
      body: { host: device.host, port: device.port, commands: [command(n)] },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };

  // The first job is held by the device: it has started on the victim, and the next two wait
  // behind it in the victim's mailbox (delivered, not acknowledged).
  const running = await submitHeldJob(
    device,
    { hold: `^${command(1)}$` },
    command(1),
    () => submit(1),
    'the first job on the device',
  );
  const queued = [await submit(2), await submit(3)];
  await waitUntil(
    async () => (await owners.ackPending(shard)) === 3,
    "the device's three jobs delivered to the victim",
  );

  // Frozen past WORKER_SUSPECT_THRESHOLD: the reaper marks it draining, and the dispatcher gives
  // its shards to the survivor, which waits for the job the victim started.
  frozen = victim;
  victim.child.kill('SIGSTOP');
  const taken = await owners.waitFor(
    shard,
    (o) => o.host === survivorId && o.state === 'owned',
    'the shard taken over by the survivor',
  );
  assert.equal(taken.epoch, first.epoch + 1);
  await survivor.waitFor(
    new RegExp(`"job_id":"${running}".*taken over while its earlier owner runs it`),
  );
  const later = await submit(4);

  // Back, with the two jobs still in its mailbox; the device answers the held command.
  victim.child.kill('SIGCONT');
  frozen = null;
  await device.setFaults({});
  const all = [running, ...queued, later];
  for (const id of all) {
    const done = await waitForJob(url, id, auth, 60_000);
    assert.equal(done.json.status, 'finished', done.text);
  }
  const ran = device.stats.commands
    .map((c) => c.command)
    .filter((c) => c.startsWith('show interface'));
  assert.deepEqual(ran, [command(1), command(2), command(3), command(4)]);
  const records = await Promise.all(all.map(async (id) => (await jobs.get(id))!.record));
  assert.equal(records[0]!.actor_host, victimId, 'the running job ended where it started');
  for (const r of records.slice(1)) {
    assert.equal(r.actor_host, survivorId, `${r.job_id} started by the woken host`);
  }
  for (let i = 1; i < records.length; i++) {
    assert.ok(
      Date.parse(records[i]!.started_at!) >= Date.parse(records[i - 1]!.ended_at!),
      `${records[i]!.job_id} started before ${records[i - 1]!.job_id} ended`,
    );
  }
  // The woken host gave the shard up (it logs so once its running job of the shard has ended).
  await victim.waitFor(new RegExp(`"shard":${shard}[,}].*shard no longer this host`));
});

test("when an owner whose shards were taken over has not learned it and its running job ends, then it starts none of the device's later jobs", async (t) => {
  // The owner reaches NATS through a relay that drops, on demand, its heartbeats and its reads
  // of the shard owners (its bucket watch, its reads of an entry) and its deletes of consumers:
  // alive and running its device's job, it looks gone to the others and does not learn that its
  // shards went to the other host, as a host whose NATS node fell behind.
  const cleanup = cleanupForTest(t, { ignoreFailures: true });
  const nats = cleanup.stopping(await NatsServerProcess.start());
  const filter = cleanup.stopping(await NatsPublishFilter.start(nats.url));
  const device = cleanup.stopping(await startDevice({ platform: 'cisco_ios', enable: PASSWORD }));
  // No pinned host keys (HOST_KEY_POLICY off), so no device claim across hosts: the unaware
  // owner, its reads dropped, could not give back the claim its warm session holds, and the new
  // owner would wait for its reap (WORKER_STALE_THRESHOLD), as one session per device requires.
  // What this test is about is the fence, not the claim (actors-guards tests the claim).
  const env = {
    WORKER_STALE_THRESHOLD: '120',
    WORKER_SUSPECT_THRESHOLD: '2',
    HOST_KEY_POLICY: 'off',
  };
  const stack = cleanup.stopping(await startInProcessStack(nats.url, { actors: 0, env }));
  const nc = await connectNats(nats.url, 'test');
  cleanup.push(() => nc.close());
  const owners = await ShardOwners.open(nc);
  const jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology));
  const shard = shardOfDevice(device);
  const unaware = hostNamed('host-a', (h) => keepsWhenJoined(h, shard));
  const logs = captureLogs();
  cleanup.stopping(await startNamedActor(filter.url, unaware, env));
  const first = await owners.waitFor(shard, (o) => o.host === unaware, 'the shard owned');
  await waitUntil(() => owners.consumed(shard), 'the owner consuming it');
  cleanup.stopping(await startNamedActor(nats.url, 'host-b', env, logs.sink));
  await waitWorkers(stack.url, 2);

  const auth = { basic: { username: device.username, password: PASSWORD } };
  const command = (n: number) => `show interface GigabitEthernet0/${n}`;
  const submit = async (n: number) => {
    const r = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: { host: device.host, port: device.port, commands: [command(n)], read_timeout: 300 },
    });
    assert.equal(r.status, 202, r.text);
    return r.json.job_id as string;
  };
  const running = await submitHeldJob(
    device,
    { hold: `^${command(1)}$` },
    command(1),
    () => submit(1),
    'the first job on the device',
  );
  const later = [await submit(2), await submit(3)];
  await waitUntil(async () => (await owners.ackPending(shard)) === 3, 'all three delivered');

  // Cut off: its beats, and every way it reads the owners (its watch is removed with the
  // bucket's other watches, which come back; its own cannot).
  const locks = `KV_${Buckets.locks}`;
  filter.drop(
    (subject) =>
      subject === `$KV.${Buckets.workers}.${unaware}` ||
      subject.startsWith(`$JS.API.CONSUMER.CREATE.${locks}`) ||
      subject.startsWith(`$JS.API.CONSUMER.DURABLE.CREATE.${locks}`) ||
      subject.startsWith(`$JS.API.STREAM.MSG.GET.${locks}`) ||
      subject.startsWith(`$JS.API.DIRECT.GET.${locks}`) ||
      subject.startsWith(`$JS.API.CONSUMER.DELETE.`),
  );
  cleanup.push(() => Promise.resolve(filter.drop(null)));
  const jsm = await jetstreamManager(nc);
  for await (const c of jsm.consumers.list(locks)) {
    await jsm.consumers.delete(locks, c.name).catch(() => undefined);
  }
  const taken = await owners.waitFor(
    shard,
    (o) => o.host === 'host-b' && o.state === 'owned',
    'the shard taken over by the other host',
  );
  assert.equal(taken.epoch, first.epoch + 1);
  await waitForJobLine(
    logs,
    running,
    'taken over while its earlier owner runs it; waits',
    'the new owner waiting for the running job',
  );

  // The device answers: the unaware owner's job ends, and its mailbox goes on.
  await device.setFaults({});
  for (const id of [running, ...later]) {
    const done = await waitForJob(stack.url, id, auth);
    assert.equal(done.json.status, 'finished', done.text);
  }
  const records = await Promise.all(
    [running, ...later].map(async (id) => (await jobs.get(id))!.record),
  );
  assert.deepEqual(
    records.map((r) => r.actor_host),
    [unaware, 'host-b', 'host-b'],
  );
  assert.deepEqual(
    device.stats.commands.map((c) => c.command).filter((c) => c.startsWith('show interface')),
    [command(1), command(2), command(3)],
  );
});
