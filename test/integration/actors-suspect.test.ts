import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { startDevice } from '@svc/test/support';
import {
  ACTOR_CAPABILITIES,
  ActorCapability,
  Buckets,
  Sealer,
  Streams,
  Subjects,
  encodeJson,
  type DeviceSecrets,
  type JobEnvelope,
  type JobRecord,
  type WorkerHeartbeat,
} from '@svc/proto';
import { bucketKeys, connectNats } from '@svc/nats';
import {
  NatsServerProcess,
  ServiceProcess,
  TEST_ENCRYPTION_KEY,
  http,
  startInProcessStack,
  testEnv,
  waitForJob,
  waitUntil,
} from '../harness/mod.js';

const PASSWORD = 'svc-demo';

/** Reaper settings under which only an early hand-back runs a silent host's jobs in time. */
const SUSPECT_ENV = {
  LOG_LEVEL: 'DEBUG',
  WORKER_STALE_THRESHOLD: '120',
  WORKER_SUSPECT_THRESHOLD: '2',
  JOB_REAPER_INTERVAL: '1',
};

/**
 * Puts a queued job for `command` on an actor host's subject, as a dispatcher would have: its
 * record (a copy of `model` with `placement` as given, absent when undefined) and its envelope
 * (placement 0).
 */
async function placeQueuedJob(
  nc: NatsConnection,
  model: JobRecord,
  hostId: string,
  jobId: string,
  command: string,
  recordPlacement: number | undefined,
): Promise<void> {
  const js = jetstream(nc);
  const kv = await new Kvm(js).open(Buckets.jobs);
  const spec = { ...model.spec, commands: [command] };
  const record: JobRecord = {
    ...model,
    job_id: jobId,
    spec,
    status: 'queued',
    started_at: null,
    ended_at: null,
    results: null,
    command_status: null,
    actor_host: null,
    dedup_key: null,
    enqueued_at: new Date().toISOString(),
  };
  if (recordPlacement === undefined) delete record.placement;
  else record.placement = recordPlacement;
  await kv.create(jobId, encodeJson(record));
  const secrets: DeviceSecrets = {
    username: model.username,
    password: PASSWORD,
    enable: PASSWORD,
    webhook_secret: null,
  };
  const envelope: JobEnvelope = {
    v: 1,
    job_id: jobId,
    owner: record.owner,
    username: model.username,
    spec,
    sealed: Sealer.fromSetting(TEST_ENCRYPTION_KEY).seal(secrets),
    address: '127.0.0.1',
    enqueued_at: record.enqueued_at,
    placement: 0,
  };
  await js.publish(Subjects.actor(hostId), encodeJson(envelope));
}

/** The stored record of a job. */
async function recordOf(nc: NatsConnection, jobId: string): Promise<JobRecord> {
  const kv = await new Kvm(jetstream(nc)).open(Buckets.jobs);
  return JSON.parse(new TextDecoder().decode((await kv.get(jobId))!.value)) as JobRecord;
}

/**
 * Issue 23, finding 3: a dead actor host is noticed in seconds for placement. Its jobs that never
 * started go back (in order, before the device's later jobs) long before WORKER_STALE_THRESHOLD,
 * which keeps its margin for the job that had started there (still `started`, later
 * `WORKER_LOST`).
 */
test('when an actor host is killed, then its never-started jobs run elsewhere within seconds, in acceptance order, none twice, and its started job waits for WORKER_STALE_THRESHOLD', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: PASSWORD });
  const env = testEnv(nats.url, SUSPECT_ENV);
  const procs: ServiceProcess[] = [];
  t.after(async () => {
    for (const p of procs.reverse()) await p.kill('SIGTERM');
    await device.stop();
    await nats.stop();
  });
  const dispatcher = ServiceProcess.start('dispatcher', env);
  const victim = ServiceProcess.start('device-actor', env);
  const gateway = ServiceProcess.start('gateway', env);
  procs.push(ServiceProcess.start('reaper', env), dispatcher, victim, gateway);
  const url = await gateway.httpUrl();
  await victim.waitFor(/actor host started/);
  const auth = { basic: { username: device.username, password: PASSWORD } };
  const submit = async (n: number) => {
    const a = await http('POST', `${url}/v2/send-command`, {
      ...auth,
      body: {
        host: device.host,
        port: device.port,
        commands: [`show interface GigabitEthernet0/${n}`],
        read_timeout: 300,
      },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };

  // The first job hangs on the device: it has started on the victim when the victim dies.
  await device.setFaults({ hang: '^show interface GigabitEthernet0/1$' });
  const running = await submit(1);
  await waitUntil(async () => {
    const r = await http('GET', `${url}/v2/send-command/${running}`, auth);
    return r.json?.status === 'started';
  }, 'the first job started');
  // Three more, placed on the victim behind it (never started there).
  const queued = [await submit(2), await submit(3), await submit(4)];
  for (const id of queued) await dispatcher.waitFor(new RegExp(`"job_id":"${id}".*job placed`));

  const survivor = ServiceProcess.start('device-actor', env);
  procs.push(survivor);
  await survivor.waitFor(/actor host started/);
  await victim.kill('SIGKILL');
  const later = await submit(5);

  for (const id of [...queued, later]) {
    const done = await waitForJob(url, id, auth, 40_000);
    assert.equal(done.json.status, 'finished', done.text);
  }
  const ran = device.stats.commands
    .map((c) => c.command)
    .filter((c) => c.startsWith('show interface'));
  assert.deepEqual(ran, [
    'show interface GigabitEthernet0/1',
    'show interface GigabitEthernet0/2',
    'show interface GigabitEthernet0/3',
    'show interface GigabitEthernet0/4',
    'show interface GigabitEthernet0/5',
  ]);
  // The started job keeps WORKER_STALE_THRESHOLD's margin: not failed, not run again.
  const first = await http('GET', `${url}/v2/send-command/${running}`, auth);
  assert.equal(first.json.status, 'started', first.text);
});

/**
 * The fence of an early hand-back: a host that was only slow may still hold a handed-back job in
 * its mailbox. The record names the placement that may start it; an older copy is dropped.
 */
test('when an actor host is given a copy of a job whose record names a later placement, then it never starts that copy, runs the jobs behind it, and the job runs once from its later placement even when that copy was never published', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: PASSWORD });
  const stack = await startInProcessStack(nats.url, {
    actors: 1,
    reaper: false,
    env: { ACTOR_HOST_ID: 'fence-host' },
  });
  const nc = await connectNats(nats.url, 'test');
  t.after(async () => {
    await nc.close();
    await stack.stop();
    await device.stop();
    await nats.stop();
  });
  const auth = { basic: { username: device.username, password: PASSWORD } };
  const body = (n: number) => ({
    host: '127.0.0.1',
    port: device.port,
    commands: [`show interface GigabitEthernet0/${n}`],
  });
  const model = await http('POST', `${stack.url}/v2/send-command`, { ...auth, body: body(1) });
  assert.equal(model.status, 202, model.text);
  await waitForJob(stack.url, model.json.job_id, auth);

  // A job handed back once (its record says placement 1) of which the host still has the
  // first copy (placement 0), as a slow host would after the hand-back.
  const fencedId = 'fenced-0000-0000-0000-000000000000';
  const modelRecord = await recordOf(nc, model.json.job_id);
  await placeQueuedJob(
    nc,
    modelRecord,
    'fence-host',
    fencedId,
    'show interface GigabitEthernet0/2',
    1,
  );
  // The device's next job comes after that copy in the host's mailbox.
  const next = await http('POST', `${stack.url}/v2/send-command`, { ...auth, body: body(3) });
  assert.equal(next.status, 202, next.text);
  assert.equal((await waitForJob(stack.url, next.json.job_id, auth)).json.status, 'finished');

  // The later placement's copy was never published (its drain failed after the fence, as
  // under a NATS node that froze and resumed, issue 23): the host that drops the old copy
  // hands the job back itself, so a 202'd job never stays queued with no copy left to run it.
  const fenced = await waitForJob(stack.url, fencedId, auth);
  assert.equal(fenced.json.status, 'finished', fenced.text);
  const record = await recordOf(nc, fencedId);
  assert.equal(record.placement, 1, 'started from the later placement');
  const ran = device.stats.commands.map((c) => c.command);
  assert.equal(ran.filter((c) => c === 'show interface GigabitEthernet0/2').length, 1, ran.join());
});

/**
 * The fence needs actor hosts that honour it: a host of an earlier release would start a copy
 * of a job handed back from under it, so its jobs wait for WORKER_STALE_THRESHOLD as before. A
 * host lists `placement_fence` in its heartbeat's capabilities when it honours the fence.
 */
test('when a silent actor host does not list the placement fence in its heartbeat (an earlier release), then its jobs are not handed back early, while those of a silent host that lists it are', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: PASSWORD });
  const env = testEnv(nats.url, SUSPECT_ENV);
  const nc = await connectNats(nats.url, 'test');
  const procs: ServiceProcess[] = [];
  t.after(async () => {
    for (const p of procs.reverse()) await p.kill('SIGTERM');
    await nc.close();
    await device.stop();
    await nats.stop();
  });
  const reaper = ServiceProcess.start('reaper', env);
  const live = ServiceProcess.start('device-actor', env);
  const gateway = ServiceProcess.start('gateway', env);
  procs.push(reaper, ServiceProcess.start('dispatcher', env), live, gateway);
  const url = await gateway.httpUrl();
  await live.waitFor(/actor host started/);
  const auth = { basic: { username: device.username, password: PASSWORD } };
  const model = await http('POST', `${url}/v2/send-command`, {
    ...auth,
    body: { host: '127.0.0.1', port: device.port, commands: ['show version'] },
  });
  assert.equal(model.status, 202, model.text);
  await waitForJob(url, model.json.job_id, auth);

  const workers = await new Kvm(jetstream(nc)).open(Buckets.workers);
  const modelRecord = await recordOf(nc, model.json.job_id);
  // The live host's key: the only one in the bucket so far (its heartbeats keep writing it, so
  // the listing must not be the KV client's keys(), which a write can keep from ending).
  const [liveKey = ''] = await bucketKeys(workers);
  const liveBeat = JSON.parse(
    new TextDecoder().decode((await workers.get(liveKey))!.value),
  ) as WorkerHeartbeat;
  // Two hosts that went silent 3 s ago (past WORKER_SUSPECT_THRESHOLD), each holding one job.
  const silentSince = new Date(Date.now() - 3000).toISOString();
  const placeOn = async (hostId: string, capabilities: string[], n: number) => {
    const jobId = `${hostId}-0000-0000-0000-000000000000`;
    await placeQueuedJob(
      nc,
      modelRecord,
      hostId,
      jobId,
      `show interface GigabitEthernet0/${n}`,
      undefined,
    );
    const beat: WorkerHeartbeat = {
      ...liveBeat,
      host_id: hostId,
      started_at: silentSince,
      last_beat: silentSince,
      busy: 1,
      active_jobs: 1,
      draining: false,
      capabilities,
    };
    await workers.put(hostId, encodeJson(beat));
    return jobId;
  };
  const older = await placeOn('olderhost', [ActorCapability.configWorkflows], 1);
  const fenced = await placeOn('fencedhost', [...ACTOR_CAPABILITIES], 2);

  // The positive events: the fenced host's job ran elsewhere, and the reaper decided about the
  // older host (it logs why it leaves it).
  const done = await waitForJob(url, fenced, auth, 40_000);
  assert.equal(done.json.status, 'finished', done.text);
  await reaper.waitFor(/olderhost.*placement_fence|placement_fence.*olderhost/);
  const left = await http('GET', `${url}/v2/send-command/${older}`, auth);
  assert.equal(left.json.status, 'queued', left.text);
  const info = await (
    await jetstreamManager(nc)
  ).streams.info(Streams.actor, { subjects_filter: Subjects.actor('olderhost') });
  assert.equal(info.state.subjects?.[Subjects.actor('olderhost')], 1, 'still on its host');
  const ran = device.stats.commands.map((c) => c.command);
  assert.ok(!ran.includes('show interface GigabitEthernet0/1'), ran.join(', '));
});
