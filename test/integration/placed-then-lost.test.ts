// A job the reaper's enqueue check found placed (its first placement stored in `SVC_ACTOR`) was
// never looked at again. If the stream then lost that placement (a work-queue stream of
// nats-server 2.9 can lose a stored message across a leader change, as run 203 showed for
// `SVC_JOBS`) and its host went away, no drain found anything to hand back and the job stayed
// `queued` for good. Nor was a job handed back by a drain looked at: its copy, lost by the stream
// before it was placed again, left it `queued` for good too.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { startDevice } from '@svc/test/support';
import {
  Buckets,
  MessageIds,
  PlacementHeldAnswer,
  Streams,
  Subjects,
  decodeMessage,
  encodeJson,
} from '@svc/proto';
import { connectNats } from '@svc/nats';
import {
  NatsServerProcess,
  ServiceProcess,
  http,
  natsCredentials,
  natsUsers,
  loseMessage,
  startProcessStack,
  storedSeq,
  testEnv,
  waitForJob,
  waitUntil,
  waitWorkers,
} from '../harness/mod.js';

const PASSWORD = 'svc-demo';
const HANG = 'show interface GigabitEthernet0/1';
const HELD = 'show interface GigabitEthernet0/2';

test('when the copy of a job handed back from a dead actor host is lost before it is placed again, then the reaper fails the job NOT_ENQUEUED and it never runs', async (t) => {
  const { url, auth, device, host, jsm, running, waiting } = await jobWaitingBehindHang(t);
  // The host dies: its reap fails the running job and hands the waiting one back, as copy 1.
  // No other host runs the context, so the copy waits in the queue: then the stream loses it.
  await host.kill('SIGKILL');
  const lost = await waitForJob(url, running, auth, 20_000);
  assert.equal(lost.json.error_code, 'WORKER_LOST', lost.text);
  await waitUntil(
    () => loseMessage(jsm, Streams.jobs, Subjects.jobs('default'), MessageIds.handBack(waiting, 1)),
    'the handed-back copy of the waiting job, stored and then lost',
  );
  const ended = await waitForJob(url, waiting, auth, 20_000);
  assert.equal(ended.json.status, 'failed', ended.text);
  assert.equal(ended.json.error_code, 'NOT_ENQUEUED', ended.text);
  assert.match(String(ended.json.error), /left the queue without being placed/, ended.text);
  assert.ok(
    !device.stats.commands.some((c) => c.command === HELD),
    'the job whose copy was lost never ran',
  );
});

test('when the placement of a job waiting on an actor host is lost and the host dies, then the reaper fails the job NOT_ENQUEUED and it never runs', async (t) => {
  const { url, auth, device, host, running, waiting } = await placementLostOnLiveHost(t);
  await host.kill('SIGKILL');

  const lost = await waitForJob(url, running, auth, 20_000);
  assert.equal(lost.json.error_code, 'WORKER_LOST', lost.text);
  const ended = await waitForJob(url, waiting, auth, 20_000);
  assert.equal(ended.json.status, 'failed', ended.text);
  assert.equal(ended.json.error_code, 'NOT_ENQUEUED', ended.text);
  assert.equal(ended.json.error_retryable, true);
  // The failure names what happened, and the job never reached the device.
  assert.match(String(ended.json.error), /placement/, ended.text);
  assert.ok(
    !device.stats.commands.some((c) => c.command === HELD),
    'the job whose placement was lost never ran',
  );
});

test('when the placement of a job is lost while its host holds the job and beats, then the reaper leaves it and it runs', async (t) => {
  // A sweep found the placement gone and the host beating, and left the job.
  await leftAndRuns(await placementLostOnLiveHost(t));
});

test('when the placement of a job is lost before its live host received it, then the reaper fails the job NOT_ENQUEUED while the host beats on, and it never runs', async (t) => {
  // The host may not make its placement consumer again (a reload takes that right away once it
  // has started): the test deletes the consumer, and the job placed next is stored, never
  // delivered. Then the stream loses it. Before the fix, the job stayed `queued` while the host
  // beat, however long that was.
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-placed-lost-'));
  await writeFile(join(dataDir, 'users.conf'), natsUsers('host', []));
  const nats = await NatsServerProcess.start({ dataDir, extraConfig: 'include "users.conf"' });
  const device = await startDevice({ platform: 'cisco_ios', enable: PASSWORD });
  t.after(async () => {
    await device.stop();
    await nats.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const env = testEnv(nats.url, {
    LOG_LEVEL: 'INFO',
    ENQUEUE_GRACE: '1',
    JOB_REAPER_INTERVAL: '0.5',
    ...natsCredentials('admin'),
  });
  const services = [
    ServiceProcess.start('reaper', env),
    ServiceProcess.start('dispatcher', env),
    ServiceProcess.start('device-actor', { ...env, ...natsCredentials('host') }),
    ServiceProcess.start('gateway', env),
  ];
  t.after(async () => {
    for (const p of services.reverse()) await p.kill('SIGTERM');
  });
  const [reaper, , host, gateway] = services as [
    ServiceProcess,
    ServiceProcess,
    ServiceProcess,
    ServiceProcess,
  ];
  const url = await gateway.httpUrl();
  await host.waitFor(/actor host started/);
  await waitWorkers(url, 1);

  const nc = await connectNats(nats.url, 'placed-lost-test', natsCredentials('admin'));
  const hostNc = await connectNats(nats.url, 'placed-lost-test-host', natsCredentials('host'));
  t.after(async () => {
    await hostNc.close();
    await nc.close();
  });
  const jsm = await jetstreamManager(nc);
  await writeFile(
    join(dataDir, 'users.conf'),
    natsUsers('host', [
      '$JS.API.CONSUMER.CREATE.SVC_ACTOR.>',
      '$JS.API.CONSUMER.DURABLE.CREATE.SVC_ACTOR.>',
    ]),
  );
  process.kill(nats.pid!, 'SIGHUP');
  const hostJsm = await jetstreamManager(hostNc);
  await waitUntil(
    () =>
      hostJsm.consumers
        .add(Streams.actor, { durable_name: 'denied', filter_subject: 'svc.actor.denied' })
        .then(
          () => false,
          () => true,
        ),
    'the host user to be refused consumers of SVC_ACTOR',
  );
  const consumers = [];
  for await (const c of jsm.consumers.list(Streams.actor)) consumers.push(c);
  assert.equal(consumers.length, 1, JSON.stringify(consumers.map((c) => c.name)));
  const hostId = consumers[0]!.config.filter_subject!.slice('svc.actor.'.length);
  await jsm.consumers.delete(Streams.actor, consumers[0]!.name);

  const auth = { basic: { username: device.username, password: PASSWORD } };
  const submitted = await http('POST', `${url}/v2/send-command`, {
    ...auth,
    body: { host: device.host, port: device.port, commands: [HELD] },
  });
  assert.equal(submitted.status, 202, submitted.text);
  const jobId = submitted.json.job_id as string;
  // Not delivered: the host has no consumer.
  await loseOnceFoundPlaced(reaper, jsm, hostId, jobId);

  const ended = await waitForJob(url, jobId, auth, 20_000);
  assert.equal(ended.json.status, 'failed', ended.text);
  assert.equal(ended.json.error_code, 'NOT_ENQUEUED', ended.text);
  assert.match(String(ended.json.error), /before that host received it/, ended.text);
  // The host beat all along: it was asked, not taken for gone.
  assert.ok(
    reaper.output.some((l) => l.includes(jobId) && l.includes('its host does not hold it')),
    'the enqueue check asked the host',
  );
  const health = await http('GET', `${url}/healthcheck`);
  assert.equal(health.json?.components?.workers?.count, 1, health.text);
  assert.ok(
    !device.stats.commands.some((c) => c.command === HELD),
    'the job whose placement was lost never ran',
  );
});

test('when the placement of a job its live host holds is lost before the enqueue check first looks, then the check asks the live hosts, leaves the job, and it runs', async (t) => {
  // The check's first look comes after the grace: the placement is gone by then, and the
  // subject that named its host with it. Before, the job was failed NOT_ENQUEUED at the next
  // sweep, while its host held it behind the device's running job.
  const stack = await jobWaitingBehindHang(t, { ENQUEUE_GRACE: '3' });
  const { nc, jsm, hostId, waiting } = stack;
  const seq = await waitUntil(
    () => storedSeq(jsm, Streams.actor, Subjects.actor(hostId), MessageIds.placement(waiting, 0)),
    'the placement of the waiting job, stored on its host subject',
  );
  // The host's own answer says when the job is in its hands (delivered, not started).
  await waitUntil(async () => {
    const reply = await nc.request(Subjects.placementHeld(hostId), encodeJson({ seq }));
    return decodeMessage(PlacementHeldAnswer, reply.data).held;
  }, 'the host to hold the waiting job');
  assert.ok(await jsm.streams.deleteMessage(Streams.actor, seq));
  // Found placed at the first look (its id stored), then asked of every live host: the host
  // that holds it is asked from then on, and leaves it beating.
  await leftAndRuns(stack);
});

/**
 * The enqueue check leaves the waiting job to its beating host once the placement is gone (its
 * log says so); the hanging job cancelled, the waiting one runs and finishes.
 */
async function leftAndRuns(stack: Awaited<ReturnType<typeof jobWaitingBehindHang>>) {
  const { url, auth, device, reaper, running, waiting } = stack;
  await waitUntil(
    () => reaper.output.find((l) => l.includes(waiting) && l.includes('its host still beats')),
    "the enqueue check's look at the job after the loss",
  );
  await device.setFaults({});
  const cancelled = await http('DELETE', `${url}/v2/send-command/${running}`, auth);
  assert.ok(cancelled.status < 300, cancelled.text);
  const ended = await waitForJob(url, waiting, auth, 20_000);
  assert.equal(ended.json.status, 'finished', ended.text);
  assert.ok(
    device.stats.commands.some((c) => c.command === HELD),
    'the held job ran',
  );
}

/**
 * Reaper, dispatcher, one actor host and a gateway as processes; a job hanging on the device
 * (`running`) and one waiting behind it on the host (`waiting`), placed, not started.
 */
async function jobWaitingBehindHang(t: TestContext, extraEnv: Record<string, string> = {}) {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: PASSWORD });
  const env = testEnv(nats.url, {
    LOG_LEVEL: 'INFO',
    ENQUEUE_GRACE: '1',
    WORKER_STALE_THRESHOLD: '2',
    JOB_REAPER_INTERVAL: '0.5',
    ...extraEnv,
  });
  t.after(async () => {
    await device.stop();
    await nats.stop();
  });
  const stack = await startProcessStack(env, { actors: 1 });
  t.after(() => stack.stop());
  const { reaper, actors, urls } = stack;
  const [host, url] = [actors[0]!, urls[0]!];
  await waitWorkers(url, 1);
  const auth = { basic: { username: device.username, password: PASSWORD } };
  const submit = async (command: string) => {
    const a = await http('POST', `${url}/v2/send-command`, {
      ...auth,
      body: { host: device.host, port: device.port, commands: [command], read_timeout: 60 },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };

  await device.setFaults({ hang: `^${HANG}$` });
  const running = await submit(HANG);
  await waitUntil(async () => {
    const a = await http('GET', `${url}/v2/send-command/${running}`, auth);
    return a.json?.status === 'started';
  }, 'the first job to start');
  const waiting = await submit(HELD);
  const nc = await connectNats(nats.url, 'placed-then-lost-test');
  t.after(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const kv = await new Kvm(jetstream(nc)).open(Buckets.jobs);
  const first = await kv.get(running);
  const hostId = (JSON.parse(new TextDecoder().decode(first!.value)) as { actor_host: string })
    .actor_host;
  return { url, auth, device, host, reaper, nc, jsm, hostId, running, waiting };
}

/**
 * `jobWaitingBehindHang`, once the enqueue check has found the waiting job placed; then its
 * placement is deleted from `SVC_ACTOR`, as a stream loses one.
 */
async function placementLostOnLiveHost(t: TestContext) {
  const stack = await jobWaitingBehindHang(t);
  const { reaper, jsm, hostId, waiting } = stack;
  await loseOnceFoundPlaced(reaper, jsm, hostId, waiting);
  return stack;
}

/**
 * Once the enqueue check has looked at the job (past its grace) and found it placed, its
 * placement is deleted from `SVC_ACTOR`, as a stream loses one.
 */
async function loseOnceFoundPlaced(
  reaper: ServiceProcess,
  jsm: JetStreamManager,
  hostId: string,
  jobId: string,
) {
  await waitUntil(
    () =>
      reaper.output.find(
        (l) => l.includes(jobId) && l.includes('placed on an actor host, not started yet'),
      ),
    "the enqueue check's look at the job, found placed",
  );
  assert.ok(
    await loseMessage(jsm, Streams.actor, Subjects.actor(hostId), MessageIds.placement(jobId, 0)),
    'the placement of the job is stored on its host subject',
  );
}
