import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { startDevice } from '@svc/test/support';
import { Buckets, Consumers, Streams, type WorkerHeartbeat } from '@svc/proto';
import { connectNats } from '@svc/nats';
import {
  NatsServerProcess,
  ServiceProcess,
  http,
  testEnv,
  waitForJob,
  waitUntil,
} from '../harness/mod.js';

const PASSWORD = 'svc-demo';

/**
 * Issue 23, "a device's jobs keep their acceptance order across any single failure": an actor
 * host that was only frozen beats again after the reaper marked it draining (its own beat
 * overwrites the mark). A job accepted while the host's jobs were being handed back must still
 * run after them: the dispatcher holds it until the drain's outcome says which jobs come back,
 * and those are placed, not until the host's next beat.
 *
 * The handed-back jobs have nowhere else to go (the only other host serves another context, but
 * beats: the reaper hands back early only while some host does), so they wait for the frozen
 * host as well, and both the new job and them are released when it comes back.
 */
test('when an actor host frozen past WORKER_SUSPECT_THRESHOLD is drained and then resumes, then a job accepted meanwhile for one of its devices runs after the jobs handed back from it', async (t) => {
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
  const dispatcher = ServiceProcess.start('dispatcher', { ...env, LOG_LEVEL: 'DEBUG' });
  const victim = ServiceProcess.start('device-actor', { ...env, ACTOR_HOST_ID: 'victim' });
  const bystander = ServiceProcess.start('device-actor', {
    ...env,
    ACTOR_HOST_ID: 'bystander',
    WORKER_CONTEXTS: 'elsewhere',
  });
  const gateway = ServiceProcess.start('gateway', env);
  procs.push(ServiceProcess.start('reaper', env), dispatcher, victim, bystander, gateway);
  const url = await gateway.httpUrl();
  await victim.waitFor(/actor host started/);
  await bystander.waitFor(/actor host started/);
  const auth = { basic: { username: device.username, password: PASSWORD } };
  const submit = async (n: number, readTimeout = 30) => {
    const a = await http('POST', `${url}/v2/send-command`, {
      ...auth,
      body: {
        host: device.host,
        port: device.port,
        commands: [`show interface GigabitEthernet0/${n}`],
        read_timeout: readTimeout,
      },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };

  // The first job hangs on the device until its read timeout: it has started on the victim, and
  // the next two wait behind it there (never started).
  await device.setFaults({ hang: '^show interface GigabitEthernet0/1$' });
  const running = await submit(1, 8);
  await waitUntil(async () => {
    const r = await http('GET', `${url}/v2/send-command/${running}`, auth);
    return r.json?.status === 'started';
  }, 'the first job started');
  const queued = [await submit(2), await submit(3)];
  for (const id of queued) await dispatcher.waitFor(new RegExp(`"job_id":"${id}".*job placed`));

  // Frozen past WORKER_SUSPECT_THRESHOLD: the reaper marks it draining and hands back the two.
  // The new job is accepted as soon as the mark is seen (while the drain may be under way).
  const workers = await new Kvm(jetstream(nc)).open(Buckets.workers);
  const beats = await workers.watch({ key: 'victim' });
  frozen = victim;
  victim.child.kill('SIGSTOP');
  for await (const e of beats) {
    if (e.operation !== 'PUT') continue;
    const beat = JSON.parse(new TextDecoder().decode(e.value)) as WorkerHeartbeat;
    if (beat.draining) break;
  }
  beats.stop();
  const later = await submit(4);
  // The positive event: the dispatcher holds the new job and both copies handed back (nothing
  // of them placed, the victim being the only host of the context).
  const jsm = await jetstreamManager(nc);
  await waitUntil(async () => {
    const info = await jsm.consumers.info(Streams.jobs, Consumers.dispatch('default'));
    return info.num_pending === 0 && info.num_ack_pending === 3;
  }, 'the dispatcher holding the new job and the two handed back');

  // Back: its next beat overwrites the draining mark.
  victim.child.kill('SIGCONT');
  frozen = null;
  for (const id of [...queued, later]) {
    const done = await waitForJob(url, id, auth, 60_000);
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
  ]);
});
