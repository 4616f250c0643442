// A dead or silent actor host and the jobs of its devices, re-targeted from the relay's early
// hand-back (the reaper fencing and handing back a silent host's never-started jobs) to shards
// (docs/shards.md): the dispatcher gives the shards of a host marked draining or gone to a live
// host, which fences the jobs the earlier owner may hold and waits for the one it started.
// - An owner killed: the never-started jobs of its devices run on the next owner within
//   seconds, once each, in order. A device whose job had started there keeps its order: that
//   job keeps WORKER_STALE_THRESHOLD's margin, is then failed WORKER_LOST (never run again), and
//   only then do the device's later jobs run. (With the relay those went on within seconds
//   beside the lost job; the shard's takeover waits for a started job until its host is gone.)
// - The fence: an owner frozen with a job waiting for a session slot wakes after the next owner
//   fenced and ran it, and its start is refused.
// - Replacing the test of a silent host of an earlier release (no `placement_fence`, so its jobs
//   were not handed back early), which has no shard counterpart: a live host of an earlier
//   release (no `job_shards` in its heartbeat) never consumes shards, so none is assigned to it.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  ActorCapability,
  Buckets,
  DefaultTopology,
  ErrorCode,
  JOB_SHARDS,
  encodeJson,
  type WorkerHeartbeat,
} from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import {
  NatsServerProcess,
  ServiceProcess,
  ShardOwners,
  hostNamed,
  http,
  keepsWhenJoined,
  shardOfDevice,
  startInProcessStack,
  startNamedActor,
  submitCommand,
  testEnv,
  waitForJob,
  waitHealthy,
  waitUntil,
  waitWorkers,
} from '../harness/mod.js';

const PASSWORD = 'svc-demo';
const command = (n: number) => `show interface GigabitEthernet0/${n}`;

/** What a process-based test of a dead or frozen owner needs. */
async function processLab(
  t: TestContext,
  extra: Record<string, string>,
  victimId: (shards: number[]) => string,
) {
  const nats = await NatsServerProcess.start();
  const devices = [
    await startDevice({ platform: 'cisco_ios', enable: PASSWORD }),
    await startDevice({ platform: 'cisco_ios', enable: PASSWORD }),
  ] as const;
  const env = testEnv(nats.url, { LOG_LEVEL: 'INFO', JOB_REAPER_INTERVAL: '1', ...extra });
  const nc = await connectNats(nats.url, 'test');
  const procs: ServiceProcess[] = [];
  let frozen: ServiceProcess | null = null;
  t.after(async () => {
    if (frozen) frozen.child.kill('SIGCONT');
    for (const p of procs.reverse()) await p.kill('SIGTERM');
    await nc.close();
    for (const d of devices) await d.stop();
    await nats.stop();
  });
  const shards = devices.map((d) => shardOfDevice(d));
  const victim = victimId(shards);
  const owners = await ShardOwners.open(nc);
  const jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology));
  // One session slot: a second device's jobs wait for it behind the first device's job.
  const victimProc = ServiceProcess.start('device-actor', {
    ...env,
    ACTOR_HOST_ID: victim,
    ACTOR_MAX_SESSIONS: '1',
  });
  const gateway = ServiceProcess.start('gateway', env);
  procs.push(
    ServiceProcess.start('reaper', env),
    ServiceProcess.start('dispatcher', env),
    victimProc,
    gateway,
  );
  const url = await gateway.httpUrl();
  const firstEntries = await Promise.all(
    shards.map((s) =>
      owners.waitFor(s, (o) => o.host === victim && o.state === 'owned', 'the victim owning it'),
    ),
  );
  const auth = { basic: { username: devices[0].username, password: PASSWORD } };
  const submit = async (device: SimulatedDevice, n: number) => {
    const a = await http('POST', `${url}/v2/send-command`, {
      ...auth,
      body: { host: device.host, port: device.port, commands: [command(n)], read_timeout: 300 },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };
  const ran = (device: SimulatedDevice) =>
    device.stats.commands.map((c) => c.command).filter((c) => c.startsWith('show interface'));
  /** Jobs delivered to the victim and not settled, over the devices' shards. */
  const delivered = async () => {
    let n = 0;
    for (const s of new Set(shards)) n += await owners.ackPending(s);
    return n;
  };
  return {
    env,
    devices,
    shards,
    victim,
    victimProc,
    firstEntries,
    owners,
    jobs,
    url,
    auth,
    procs,
    submit,
    ran,
    delivered,
    freeze(p: ServiceProcess | null) {
      frozen = p;
    },
    status: async (id: string) =>
      (await http('GET', `${url}/v2/send-command/${id}`, auth)).json?.status as string,
  };
}

test("when the owner of devices' shards is killed, then their never-started jobs run on the next owner within seconds, in order, once each, and a device whose job had started there runs its later jobs once that job is failed WORKER_LOST at WORKER_STALE_THRESHOLD", async (t) => {
  const STALE_S = 15;
  const lab = await processLab(
    t,
    { WORKER_STALE_THRESHOLD: String(STALE_S), WORKER_SUSPECT_THRESHOLD: '2' },
    () => 'victim',
  );
  const [held, waiting] = lab.devices;

  // The first device's job has started on the victim (the device holds it) and takes its only
  // session slot; the device's next two wait behind it, the second device's two for the slot.
  await held.setFaults({ hold: `^${command(1)}$` });
  const started = await lab.submit(held, 1);
  await waitUntil(
    () => held.stats.commands.some((c) => c.command === command(1)),
    'the first job on its device',
  );
  const behind = [await lab.submit(held, 2), await lab.submit(held, 3)];
  const others = [await lab.submit(waiting, 1), await lab.submit(waiting, 2)];
  await waitUntil(async () => (await lab.delivered()) === 5, 'every job delivered to the victim');

  await lab.victimProc.kill('SIGKILL');
  const killedAt = Date.now();
  const survivor = ServiceProcess.start('device-actor', { ...lab.env, ACTOR_HOST_ID: 'survivor' });
  lab.procs.push(survivor);
  const after = await lab.submit(held, 4);

  // The second device's jobs never started: within seconds, long before the victim is reaped.
  for (const id of others) {
    const done = await waitForJob(lab.url, id, lab.auth);
    assert.equal(done.json.status, 'finished', done.text);
    assert.equal((await lab.jobs.get(id))!.record.actor_host, 'survivor');
  }
  assert.equal(await lab.status(started), 'started', 'the started job keeps its margin');
  assert.deepEqual(lab.ran(waiting), [command(1), command(2)]);

  // The first device: its started job is failed WORKER_LOST once the victim is reaped, then its
  // later jobs run, in order.
  const lost = await waitForJob(lab.url, started, lab.auth, 60_000);
  assert.equal(lost.json.status, 'failed', lost.text);
  assert.equal(lost.json.error_code, ErrorCode.WORKER_LOST);
  const lostRecord = (await lab.jobs.get(started))!.record;
  assert.ok(
    Date.parse(lostRecord.ended_at!) - killedAt >= (STALE_S - 1) * 1000,
    `failed ${Date.parse(lostRecord.ended_at!) - killedAt} ms after the kill`,
  );
  const records = [lostRecord];
  for (const id of [...behind, after]) {
    const done = await waitForJob(lab.url, id, lab.auth, 60_000);
    assert.equal(done.json.status, 'finished', done.text);
    records.push((await lab.jobs.get(id))!.record);
  }
  for (let i = 1; i < records.length; i++) {
    assert.equal(records[i]!.actor_host, 'survivor');
    assert.ok(
      Date.parse(records[i]!.started_at!) >= Date.parse(records[i - 1]!.ended_at!),
      `${records[i]!.job_id} started before ${records[i - 1]!.job_id} ended`,
    );
  }
  // Never run again: the device saw the lost job's command once.
  assert.deepEqual(lab.ran(held), [command(1), command(2), command(3), command(4)]);
});

test('when a frozen shard owner wakes with a job waiting for a session slot that the next owner has fenced and run, then its start is refused and the job ran once', async (t) => {
  // Each host keeps both devices' shards when the other (re)joins: they move only by takeover.
  const keepsBoth = (shards: number[]) => (h: string) => shards.every((s) => keepsWhenJoined(h, s));
  let survivorId = '';
  const lab = await processLab(
    t,
    { WORKER_STALE_THRESHOLD: '120', WORKER_SUSPECT_THRESHOLD: '2' },
    (shards) => {
      survivorId = hostNamed('survivor-', keepsBoth(shards));
      return hostNamed('victim-', keepsBoth(shards));
    },
  );
  const [held, waiting] = lab.devices;
  const survivor = ServiceProcess.start('device-actor', { ...lab.env, ACTOR_HOST_ID: survivorId });
  lab.procs.push(survivor);
  await waitUntil(async () => {
    for (let s = 0; s < JOB_SHARDS; s++)
      if ((await lab.owners.of(s))?.host === survivorId) return true;
    return false;
  }, 'the survivor owning its share of the shards');

  await held.setFaults({ hold: `^${command(1)}$` });
  const started = await lab.submit(held, 1);
  await waitUntil(
    () => held.stats.commands.some((c) => c.command === command(1)),
    'the first job on its device',
  );
  const fenced = await lab.submit(waiting, 1);
  await waitUntil(async () => (await lab.delivered()) === 2, 'both jobs delivered to the victim');

  lab.freeze(lab.victimProc);
  lab.victimProc.child.kill('SIGSTOP');
  const shard = lab.shards[1]!;
  const taken = await lab.owners.waitFor(
    shard,
    (o) => o.host === survivorId && o.state === 'owned',
    "the second device's shard taken over",
  );
  assert.equal(taken.epoch, lab.firstEntries[1]!.epoch + 1);
  const done = await waitForJob(lab.url, fenced, lab.auth);
  assert.equal(done.json.status, 'finished', done.text);
  const record = (await lab.jobs.get(fenced))!.record;
  assert.equal(record.actor_host, survivorId);
  assert.equal(record.placement, taken.epoch, 'fenced to the new owner’s epoch');

  // Awake; its session slot frees once the device answers the held job.
  lab.victimProc.child.kill('SIGCONT');
  lab.freeze(null);
  await held.setFaults({});
  const first = await waitForJob(lab.url, started, lab.auth);
  assert.equal(first.json.status, 'finished', first.text);
  // It gives the shard up once none of its jobs of the shard is under way there any more.
  await lab.victimProc.waitFor(new RegExp(`"shard":${shard}[,}].*shard no longer this host`));
  assert.ok(
    !lab.victimProc.output.some((l) => l.includes(`${fenced} started`)),
    'the woken owner started the fenced job',
  );
  assert.deepEqual(lab.ran(waiting), [command(1)]);
});

test('when a live actor host does not list job_shards in its heartbeat (an earlier release), then no shard is assigned to it, and a device whose shard its presence would move still has its jobs run', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: PASSWORD });
  const shard = shardOfDevice(device);
  // The first host gives the device's shard up when any second host counts.
  const first = hostNamed('host-a', (h) => !keepsWhenJoined(h, shard));
  const stack = await startInProcessStack(nats.url, { actors: 1, env: { ACTOR_HOST_ID: first } });
  const nc = await connectNats(nats.url, 'test');
  const later: { stop(): Promise<void> }[] = [];
  t.after(async () => {
    for (const s of later) await s.stop();
    await nc.close();
    await stack.stop();
    await device.stop();
    await nats.stop();
  });
  await waitHealthy(stack.url);
  const owners = await ShardOwners.open(nc);
  await owners.waitFor(shard, (o) => o.host === first && o.state === 'owned', 'the shard owned');

  // A host of an earlier release beats: every capability of its time, not job_shards.
  const workers = await new Kvm(jetstream(nc)).open(Buckets.workers);
  const model = JSON.parse(
    new TextDecoder().decode((await workers.get(first))!.value),
  ) as WorkerHeartbeat;
  const beat = () =>
    workers.put(
      'olderhost',
      encodeJson({
        ...model,
        host_id: 'olderhost',
        last_beat: new Date().toISOString(),
        busy: 0,
        active_jobs: 0,
        // The release before shards: what it listed (`placement_fence` then), no `job_shards`.
        capabilities: [ActorCapability.configWorkflows, 'placement_fence'],
      } satisfies WorkerHeartbeat),
    );
  await beat();
  const beating = setInterval(() => void beat().catch(() => undefined), 250);
  t.after(() => clearInterval(beating));
  await waitWorkers(stack.url, 2);
  // A host of this release joins: it is given its share by a plan made while the older beats.
  const joined = await startNamedActor(nats.url, 'host-c');
  later.push(joined);
  await waitUntil(async () => {
    for (let s = 0; s < JOB_SHARDS; s++) if ((await owners.of(s))?.host === 'host-c') return true;
    return false;
  }, 'the joined host owning shards');

  const named: number[] = [];
  for (let s = 0; s < JOB_SHARDS; s++)
    if ((await owners.of(s))?.host === 'olderhost') named.push(s);
  assert.deepEqual(named, [], 'shards assigned to the host of an earlier release');
  const auth = { basic: { username: device.username, password: PASSWORD } };
  const job = await submitCommand(stack.url, auth, device, 'show version');
  const done = await waitForJob(stack.url, job, auth);
  assert.equal(done.json.status, 'finished', done.text);
});
