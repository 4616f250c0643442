// Issue 23, "a device's jobs keep their acceptance order across any single failure": an actor
// host that was only frozen beats again after it was marked draining. With the relay, the jobs a
// drain handed back from it and a job accepted meanwhile were held by the dispatcher until the
// drain's outcome was known. Re-targeted to shards (docs/shards.md): the frozen host owned the
// device's shard, and holds the device's running job and two waiting ones in its mailbox; once
// it is marked draining the dispatcher gives its shards to the other host, which fences the
// jobs it was delivered again and waits for the running one. A job is accepted after the
// takeover. The frozen host then wakes, still holding the waiting jobs: it must start none of
// them, and every job runs once, in acceptance order, one at a time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DefaultTopology, JOB_SHARDS } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { startDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  ServiceProcess,
  ShardOwners,
  hostNamed,
  http,
  keepsWhenJoined,
  shardOfDevice,
  testEnv,
  waitForJob,
  waitUntil,
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
  await device.setFaults({ hold: `^${command(1)}$` });
  const running = await submit(1);
  await waitUntil(
    () => device.stats.commands.some((c) => c.command === command(1)),
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
