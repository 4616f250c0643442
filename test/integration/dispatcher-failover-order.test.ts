import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstreamManager } from '@nats-io/jetstream';
import { startDevice } from '@svc/test/support';
import { startDeviceActorService, loadDeviceActorConfig } from '@svc/device-actor';
import { loadDispatcherConfig, rendezvousScore, startDispatcher } from '@svc/dispatcher';
import { Consumers, Sealer, Streams, Subjects } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { deviceKeyOf } from '@svc/device-access';
import {
  NatsServerProcess,
  ServiceProcess,
  TEST_ENCRYPTION_KEY,
  http,
  silentLogger,
  startInProcessStack,
  testEnv,
  waitForJob,
  waitUntil,
  waitWorkers,
} from '../harness/mod.js';

const PASSWORD = 'svc-demo';

/**
 * Issue 23: a new dispatcher leader keeps each device on the host its jobs are queued on. A
 * device placed on a host other than its preferred one (that host was down) must stay there
 * when the dispatcher fails over and the preferred host is back: its next job runs after the
 * ones already queued, not first on the preferred host.
 */
test('when the dispatcher fails over while a device has jobs queued on a host other than its preferred one, then its next job runs after them', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: PASSWORD });
  const env = testEnv(nats.url, { DISPATCH_LEASE: '2' });
  const stack = await startInProcessStack(nats.url, { actors: 0, reaper: false, env });
  const nc = await connectNats(nats.url, 'test');
  const sealer = Sealer.fromSetting(TEST_ENCRYPTION_KEY);
  const stopLater: { stop(): Promise<void> }[] = [];
  t.after(async () => {
    for (const s of stopLater.reverse()) await s.stop().catch(() => undefined);
    await nc.close();
    await stack.stop();
    await device.stop();
    await nats.stop();
  });
  const startActor = async (hostId: string) => {
    const actorNc = await connectNats(nats.url, hostId);
    const actor = await startDeviceActorService(
      loadDeviceActorConfig({ ...env, ACTOR_HOST_ID: hostId }),
      { nc: actorNc, log: silentLogger('device-actor'), sealer },
    );
    stopLater.push({ stop: async () => (await actor.stop(), await actorNc.close()) });
  };
  // Two host names of which the first is the device's preferred one (rendezvous).
  const key = deviceKeyOf('default', '127.0.0.1', device.port);
  let preferred = 'host-a0';
  const other = 'host-b0';
  for (let i = 1; rendezvousScore(key, preferred) < rendezvousScore(key, other); i++) {
    preferred = `host-a${i}`;
  }
  const jsm = await jetstreamManager(nc);
  const placedOn = async (hostId: string) => {
    const subject = Subjects.actor(hostId);
    const info = await jsm.streams.info(Streams.actor, { subjects_filter: subject });
    return info.state.subjects?.[subject] ?? 0;
  };
  const auth = { basic: { username: device.username, password: PASSWORD } };
  const submit = async (n: number) => {
    const a = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: {
        host: '127.0.0.1',
        port: device.port,
        commands: [`show interface GigabitEthernet0/${n}`],
        read_timeout: 300,
      },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };

  // The preferred host is down: the device goes to the other one, where its first job hangs
  // and its second waits behind it.
  await startActor(other);
  await device.setFaults({ hang: '^show interface GigabitEthernet0/1$' });
  const first = await submit(1);
  const second = await submit(2);
  await waitUntil(async () => (await placedOn(other)) === 2, 'both jobs placed on the other host');
  // The preferred host comes back, then the dispatcher fails over.
  await startActor(preferred);
  await waitWorkers(stack.url, 2);
  await stack.dispatcher.stop();
  const dispatcherNc = await connectNats(nats.url, 'dispatcher-2');
  const dispatcher = await startDispatcher(loadDispatcherConfig(env), {
    nc: dispatcherNc,
    log: silentLogger('dispatcher'),
  });
  stopLater.push({ stop: async () => (await dispatcher.stop(), await dispatcherNc.close()) });

  const third = await submit(3);
  // Placed: behind the others on the same host, or (what must not happen) run at once elsewhere.
  await waitUntil(async () => {
    if ((await placedOn(other)) === 3) return true;
    const r = await http('GET', `${stack.url}/v2/send-command/${third}`, auth);
    return r.json?.status !== 'queued';
  }, 'the third job placed');
  const cancel = await http('DELETE', `${stack.url}/v2/send-command/${first}`, auth);
  assert.equal(cancel.status, 204, cancel.text);
  for (const id of [second, third]) {
    assert.equal((await waitForJob(stack.url, id, auth)).json.status, 'finished');
  }
  const ran = device.stats.commands
    .map((c) => c.command)
    .filter((c) => c.startsWith('show interface'));
  assert.deepEqual(ran, [
    'show interface GigabitEthernet0/1',
    'show interface GigabitEthernet0/2',
    'show interface GigabitEthernet0/3',
  ]);
});

/**
 * Issue 23: a dispatcher killed while it holds a job it has not yet placed (the consumer's
 * message, not acknowledged) must not let the device's next job overtake it: the next leader
 * takes the dead one's messages first. Before, they came back only after the consumer's
 * `ack_wait` (30 s), behind every later job the new leader had placed meanwhile.
 */
test("when the dispatcher is killed holding a job it has not placed, then the next leader places that job before the device's later ones", async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: PASSWORD });
  const env = testEnv(nats.url, { LOG_LEVEL: 'INFO', DISPATCH_LEASE: '2' });
  const procs: ServiceProcess[] = [];
  const nc = await connectNats(nats.url, 'test');
  t.after(async () => {
    for (const p of procs.reverse()) await p.kill('SIGTERM');
    await nc.close();
    await device.stop();
    await nats.stop();
  });
  const gateway = ServiceProcess.start('gateway', env);
  const first = ServiceProcess.start('dispatcher', env);
  procs.push(gateway, first);
  const url = await gateway.httpUrl();
  const auth = { basic: { username: device.username, password: PASSWORD } };
  const submit = async (n: number) => {
    const a = await http('POST', `${url}/v2/send-command`, {
      ...auth,
      body: {
        host: '127.0.0.1',
        port: device.port,
        commands: [`show interface GigabitEthernet0/${n}`],
      },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };
  // No actor host yet: the dispatcher holds the job, delivered and not acknowledged.
  const jsm = await jetstreamManager(nc);
  await first.waitFor(/leading context/);
  const held = await submit(1);
  await waitUntil(async () => {
    const info = await jsm.consumers.info(Streams.jobs, Consumers.dispatch('default'));
    return info.num_ack_pending === 1;
  }, 'the first dispatcher holding the job');
  await first.kill('SIGKILL');
  procs.push(ServiceProcess.start('device-actor', env), ServiceProcess.start('dispatcher', env));
  const later = await submit(2);
  for (const id of [held, later]) {
    assert.equal((await waitForJob(url, id, auth, 60_000)).json.status, 'finished');
  }
  const ran = device.stats.commands
    .map((c) => c.command)
    .filter((c) => c.startsWith('show interface'));
  assert.deepEqual(ran, ['show interface GigabitEthernet0/1', 'show interface GigabitEthernet0/2']);
});
