import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HealthRecord, check } from '@svc/proto';
import { startDevice } from '@svc/test/support';
import { NatsServerProcess, http, startInProcessStack, waitHealthy } from '../harness/mod.js';

test('when the queue of a context is full, then submissions get 503 with Retry-After and nothing more is queued', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  // No actor host: jobs stay queued.
  const stack = await startInProcessStack(nats.url, { actors: 0, env: { MAX_QUEUE_DEPTH: '3' } });
  t.after(async () => {
    await stack.stop();
    await device.stop();
    await nats.stop();
  });
  const auth = { basic: { username: device.username, password: device.password } };
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    const a = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: {
        host: device.host,
        port: device.port,
        commands: [`show interface GigabitEthernet0/${i}`],
      },
    });
    statuses.push(a.status);
    if (a.status === 503) assert.equal(a.headers['retry-after'], '10');
    if (a.status === 202) assert.equal(a.json.queue_position, i + 1);
  }
  assert.deepEqual(statuses, [202, 202, 202, 503, 503]);
});

test("when a submission is refused with 503 because the queue is full, then it eats none of the caller's rate budget", async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  // No actor host: jobs stay queued. The caller's budget is shared by both contexts; the queue
  // limit is per context.
  const stack = await startInProcessStack(nats.url, {
    actors: 0,
    env: { MAX_QUEUE_DEPTH: '1', RATE_LIMIT_PER_MINUTE: '2', SVC_CONTEXTS: 'default,lab' },
  });
  t.after(async () => {
    await stack.stop();
    await device.stop();
    await nats.stop();
  });
  const auth = { basic: { username: device.username, password: device.password } };
  const submit = (context: string, command: string) =>
    http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: { host: device.host, port: device.port, commands: [command], context },
    });
  assert.equal((await submit('default', 'show version')).status, 202);
  const full = await submit('default', 'show clock');
  assert.equal(full.status, 503, full.text);
  // One unit used of two: the refused submission gave its unit back.
  const other = await submit('lab', 'show version');
  assert.equal(other.status, 202, other.text);
  assert.equal((await submit('lab', 'show clock')).status, 429);
});

test('without MAX_QUEUE_DEPTH, back-to-back submissions get increasing queue positions, and a later read counts what is queued', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  // No actor host: jobs stay queued. The positions come from one shared recent read of the
  // backlog plus this gateway's own submissions since, not from a read per submission.
  const stack = await startInProcessStack(nats.url, { actors: 0 });
  t.after(async () => {
    await stack.stop();
    await device.stop();
    await nats.stop();
  });
  const auth = { basic: { username: device.username, password: device.password } };
  const submit = (i: number) =>
    http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: { host: device.host, port: device.port, commands: [`show interface Gi0/${i}`] },
    });
  for (let i = 0; i < 4; i++) {
    const a = await submit(i);
    assert.equal(a.status, 202, a.text);
    assert.equal(a.json.queue_position, i + 1);
  }
  // Past the read's lifetime, a fresh read finds the four jobs in the stream.
  await new Promise((r) => setTimeout(r, 400));
  const later = await submit(4);
  assert.equal(later.status, 202, later.text);
  assert.equal(later.json.queue_position, 5);
});

test('when NATS is unreachable, then submissions get 503 with Retry-After 10 and health says degraded', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bp-'));
  const nats = await NatsServerProcess.start({ dataDir });
  const stack = await startInProcessStack(nats.url);
  let restarted: NatsServerProcess | null = null;
  t.after(async () => {
    // Services stop cleanly only with NATS back.
    restarted ??= await NatsServerProcess.start({ dataDir, port: nats.port });
    await stack.stop();
    await restarted.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  await waitHealthy(stack.url);
  await nats.kill();
  const a = await http('POST', `${stack.url}/v2/send-command`, {
    basic: { username: 'u', password: 'p' },
    body: { host: '127.0.0.1', commands: ['show version'] },
  });
  assert.equal(a.status, 503);
  assert.equal(a.headers['retry-after'], '10');
  assert.equal(typeof a.json.message, 'string');
  const h = await http('GET', `${stack.url}/healthcheck`);
  assert.equal(h.status, 503);
  assert.equal(h.json.status, 'degraded');
  assert.equal(h.json.components.redis.status, 'unhealthy');
  // Only the statuses SPEC lists (its Health record): never `unknown`.
  assert.ok(['healthy', 'unhealthy'].includes(h.json.components.queue.status), h.text);
  assert.ok(
    ['healthy', 'unhealthy', 'no_workers'].includes(h.json.components.workers.status),
    h.text,
  );
  const shape = check(HealthRecord, h.json, 'body');
  assert.ok(shape.ok, JSON.stringify(shape.ok ? null : shape.issues));
  // Back up: the service recovers without a restart.
  restarted = await NatsServerProcess.start({ dataDir, port: nats.port });
  await waitHealthy(stack.url, 20_000);
});
