// Issue 23, finding 1: an idempotent retry answered 202 for a job whose attempt then failed.
// Two gateways on one NATS: the first attempt's envelope publish is held (the jobs stream is
// gone and a plain subscriber takes the message without answering), so the retry on the other
// gateway reads the queued record while the first attempt is still in flight. The stream is
// back (and a dispatcher and an actor host run) by the time the retry comes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { startDevice } from '@svc/test/support';
import { loadGatewayConfig, startGateway, type RunningGateway } from '@svc/gateway';
import { loadDispatcherConfig, startDispatcher } from '@svc/dispatcher';
import { loadDeviceActorConfig, startDeviceActorService } from '@svc/device-actor';
import { Sealer, Streams, Subjects } from '@svc/proto';
import { connectNats } from '@svc/nats';
import {
  NatsServerProcess,
  http,
  quietAudit,
  silentLogger,
  startInProcessStack,
  testEnv,
  waitForJob,
} from '../harness/mod.js';

test('when an idempotent retry is answered 202 while the first attempt cannot publish its envelope, then the job it named runs and finishes on the device', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  const env = testEnv(nats.url);
  const sealer = Sealer.fromSetting(env['SVC_ENCRYPTION_KEY']!);
  const conns: NatsConnection[] = [];
  const services: { stop(): Promise<void> }[] = [];
  t.after(async () => {
    for (const s of services.reverse()) await s.stop().catch(() => undefined);
    for (const c of conns) await c.close().catch(() => undefined);
    await device.stop();
    await nats.stop();
  });
  const connect = async (name: string) => {
    const c = await connectNats(nats.url, name);
    conns.push(c);
    return c;
  };
  const gateways: RunningGateway[] = [];
  for (const name of ['gateway-a', 'gateway-b']) {
    const gateway = await startGateway(loadGatewayConfig(env), {
      nc: await connect(name),
      sealer,
      log: silentLogger(name),
    });
    gateways.push(gateway);
    services.push(gateway);
  }
  const [a, b] = gateways.map((g) => g.httpUrl!) as [string, string];
  const nc = await connect('test');
  // Holds every envelope publish: no stream stores it, and this subscriber never answers, so the
  // publish waits for its timeout. Receiving the envelope proves the queued record is written.
  const jsm = await jetstreamManager(nc);
  const { config: jobsStream } = await jsm.streams.info(Streams.jobs);
  await jsm.streams.delete(Streams.jobs);
  const envelopes = nc.subscribe(Subjects.jobsAll);
  await nc.flush();
  const envelopeSeen = (async () => {
    for await (const m of envelopes) return m.subject;
    return null;
  })();

  const auth = { basic: { username: device.username, password: device.password } };
  const submit = (url: string) =>
    http('POST', `${url}/v2/send-command`, {
      ...auth,
      headers: { 'x-idempotency-key': 'race-key' },
      body: { host: '127.0.0.1', port: device.port, commands: ['show version'] },
    });
  const first = submit(a);
  assert.ok(await envelopeSeen, 'the first attempt published its envelope');

  // The stream is back; the first attempt's publish still waits for an answer that never comes.
  await jsm.streams.add(jobsStream);
  services.push(
    await startDispatcher(loadDispatcherConfig(env), {
      nc: await connect('dispatcher'),
      log: silentLogger('dispatcher'),
    }),
  );
  services.push(
    await startDeviceActorService(loadDeviceActorConfig(env), {
      nc: await connect('actor-0'),
      log: silentLogger('device-actor'),
      audit: quietAudit('device-actor'),
      sealer,
    }),
  );

  const retry = await submit(b);
  assert.equal(retry.status, 202, retry.text);
  assert.equal(retry.json.idempotent, true, retry.text);
  const jobId = String(retry.json.job_id);

  const refused = await first;
  assert.equal(refused.status, 503, refused.text);

  // A 202 means the job exists and will end: each gateway reads it, and it ran on the device.
  for (const url of [a, b]) {
    const read = await waitForJob(url, jobId, auth);
    assert.equal(read.status, 200, `the job a 202 named has a record: ${read.text}`);
    assert.equal(read.json.status, 'finished', read.text);
  }
  // Both envelopes carry one message id: the device ran the command once.
  const ran = device.stats.commands.filter((c) => c.command === 'show version');
  assert.equal(ran.length, 1, JSON.stringify(device.stats.commands));
});

test('when a keyed attempt fails to publish its envelope and no repeat stores it, then the reaper fails its job NOT_ENQUEUED and the key keeps naming that job', async (t) => {
  const nats = await NatsServerProcess.start();
  const stack = await startInProcessStack(nats.url, {
    env: { STORE_TIMEOUT: '1', ENQUEUE_GRACE: '1' },
  });
  const nc = await connectNats(nats.url, 'test');
  t.after(async () => {
    await nc.close();
    await stack.stop();
    await nats.stop();
  });
  // With no stream and no subscriber the envelope publish fails at once (no responders): the
  // attempt has settled its job before it answers. The stream comes back once it is refused.
  const jsm = await jetstreamManager(nc);
  const { config: jobsStream } = await jsm.streams.info(Streams.jobs);
  await jsm.streams.delete(Streams.jobs);

  const auth = { basic: { username: 'svc', password: 'pw-idem' } };
  const jobId = randomUUID();
  const submit = () =>
    http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      headers: { 'x-idempotency-key': 'lone-key', 'x-request-id': jobId },
      body: { host: '127.0.0.1', port: 22, commands: ['show version'] },
    });
  const refused = await submit();
  assert.equal(refused.status, 503, refused.text);
  // A repeat publishes the queued job's envelope before its 202: still no stream, so a 503.
  const unstored = await submit();
  assert.equal(unstored.status, 503, unstored.text);
  assert.ok(unstored.headers['retry-after'], 'a 503 carries Retry-After');
  // A repeat asking for another job is answered with the key's job, as before: no publish.
  const other = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    headers: { 'x-idempotency-key': 'lone-key' },
    body: { host: '127.0.0.1', port: 22, commands: ['show clock'] },
  });
  assert.equal(other.status, 202, other.text);
  assert.equal(other.json.job_id, jobId, other.text);
  await jsm.streams.add(jobsStream);

  // Left `queued` for the reaper's enqueue check, which finds no envelope and fails it.
  const ended = await waitForJob(stack.url, jobId, auth);
  assert.equal(ended.json.status, 'failed', ended.text);
  assert.equal(ended.json.error_code, 'NOT_ENQUEUED', ended.text);
  // The key was kept: a repeat is answered with that job, not admitted as a new one.
  const repeat = await submit();
  assert.equal(repeat.status, 202, repeat.text);
  assert.equal(repeat.json.idempotent, true, repeat.text);
  assert.equal(repeat.json.job_id, jobId, repeat.text);
});
