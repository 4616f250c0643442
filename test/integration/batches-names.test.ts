// A batch from an inventory names its devices (issue 24, finding 8): the inventory name and the
// port of each device are in the batch answers, its job listing, its SSE job events, its NATS
// batch events and the `svc` CLI's batch output. Real nats-server, real HTTP, SSH simulators,
// the real `svc` binary.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Streams, Subjects } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  testEnv,
  waitHealthy,
  waitUntil,
  type HttpOptions,
  type InProcessStack,
} from '../harness/mod.js';

const SVC_BIN = fileURLToPath(new URL('../../../node_modules/.bin/svc', import.meta.url));

let nats: NatsServerProcess;
let stack: InProcessStack;
let nc: NatsConnection;
let r1: SimulatedDevice;
let r2: SimulatedDevice;
let me: HttpOptions;
let work: string;

before(async () => {
  nats = await NatsServerProcess.start();
  r1 = await startDevice({ platform: 'cisco_ios', hostname: 'R1', enable: 'svc-demo' });
  r2 = await startDevice({ platform: 'cisco_ios', hostname: 'R2', enable: 'svc-demo' });
  me = { basic: { username: r1.username, password: r1.password } };
  stack = await startInProcessStack(nats.url);
  await waitHealthy(stack.url);
  nc = await connectNats(nats.url, 'batches-names-test', testEnv(nats.url));
  work = await mkdtemp(join(tmpdir(), 'svc-batch-names-'));
});

after(async () => {
  await nc?.drain();
  await stack?.stop();
  await r1?.stop();
  await r2?.stop();
  await nats?.stop();
  await rm(work, { recursive: true, force: true });
});

function endedBatch(id: string) {
  return waitUntil(
    async () => {
      const a = await http('GET', `${stack.url}/v2/batches/${id}`, me);
      return a.json.status !== 'running' && (a.json as Record<string, unknown>);
    },
    `batch ${id} to end`,
    { timeoutMs: 60_000 },
  );
}

/** Every event of the batch kept in SVC_EVENTS, as a NATS follower replays them. */
async function natsBatchEvents(
  id: string,
): Promise<{ subject: string; seq: number; event: Record<string, unknown> }[]> {
  const js = jetstream(nc);
  const consumer = await js.consumers.get(Streams.events, {
    filter_subjects: Subjects.batchEvents(id),
  });
  const pending = (await consumer.info()).num_pending;
  const out: { subject: string; seq: number; event: Record<string, unknown> }[] = [];
  if (pending === 0) return out;
  const messages = await consumer.fetch({ max_messages: pending });
  for await (const m of messages) {
    out.push({ subject: m.subject, seq: m.seq, event: m.json<Record<string, unknown>>() });
    if (out.length === pending) break;
  }
  return out;
}

test('when batch devices carry inventory names, then the name and port are in the answer, the job listing, the SSE job events and the NATS batch events', async () => {
  const created = await http('POST', `${stack.url}/v2/batches`, {
    ...me,
    body: {
      kind: 'command',
      commands: ['show version'],
      enable: r1.enable,
      devices: [
        { name: 'core-r1', host: r1.host, port: r1.port },
        { name: 'edge-r2', host: r2.host, port: r2.port },
      ],
    },
  });
  assert.equal(created.status, 202, created.text);
  assert.deepEqual(
    created.json.jobs.map((j: Record<string, unknown>) => [j['name'], j['host'], j['port']]),
    [
      ['core-r1', r1.host, r1.port],
      ['edge-r2', r2.host, r2.port],
    ],
  );
  const id = created.json.batch_id as string;
  await endedBatch(id);

  const listed = await http('GET', `${stack.url}/v2/batches/${id}/jobs`, me);
  assert.equal(listed.status, 200, listed.text);
  assert.deepEqual(
    listed.json.jobs.map((j: Record<string, unknown>) => [j['name'], j['port'], j['status']]),
    [
      ['core-r1', r1.port, 'finished'],
      ['edge-r2', r2.port, 'finished'],
    ],
  );

  const events = (await natsBatchEvents(id)).filter((e) => e.subject.includes('.job.'));
  assert.ok(events.length >= 2, JSON.stringify(events));
  for (const { event } of events) {
    const want = event['port'] === r1.port ? 'core-r1' : 'edge-r2';
    assert.equal(event['name'], want, JSON.stringify(event));
  }
  assert.deepEqual(
    [...new Set(events.map((e) => e.event['port']))].sort(),
    [r1.port, r2.port].sort(),
  );

  // The stream of an ended batch replays its events after the one the client names.
  const sse = await http('GET', `${stack.url}/v2/batches/${id}/stream`, {
    ...me,
    headers: { 'last-event-id': String(Math.min(...events.map((e) => e.seq)) - 1) },
  });
  const jobEvents = [...sse.text.matchAll(/^event: job\n(?:id: .*\n)?data: (.*)$/gm)].map(
    (m) => JSON.parse(m[1]!) as Record<string, unknown>,
  );
  assert.ok(jobEvents.length >= 2, sse.text);
  for (const e of jobEvents) {
    const want = e['host'] === r1.host && e['port'] === r1.port ? 'core-r1' : 'edge-r2';
    assert.equal(e['name'], want, JSON.stringify(e));
    assert.ok(e['port'] === r1.port || e['port'] === r2.port, JSON.stringify(e));
  }
});

test('when a device has no name, then its entries carry name null and the port', async () => {
  const created = await http('POST', `${stack.url}/v2/batches`, {
    ...me,
    body: {
      kind: 'command',
      commands: ['show version'],
      enable: r1.enable,
      devices: [{ host: r1.host, port: r1.port }],
    },
  });
  assert.equal(created.status, 202, created.text);
  const id = created.json.batch_id as string;
  await endedBatch(id);
  const listed = await http('GET', `${stack.url}/v2/batches/${id}/jobs`, me);
  assert.equal(listed.json.jobs[0].name, null);
  assert.equal(listed.json.jobs[0].port, r1.port);
});

test('when svc runs a batch from an Ansible inventory, then its output names each device by its inventory name and port', async () => {
  const inventory = join(work, 'hosts.ini');
  await writeFile(
    inventory,
    [
      '[routers]',
      `core-r1 ansible_host=${r1.host} ansible_port=${r1.port} ansible_network_os=cisco.ios.ios`,
      `edge-r2 ansible_host=${r2.host} ansible_port=${r2.port} ansible_network_os=cisco_ios`,
      '',
    ].join('\n'),
  );
  const child = spawn(
    process.execPath,
    [SVC_BIN, 'run', 'show version', '--hosts', `@${inventory}`],
    {
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: work,
        SVC_URL: stack.url,
        SVC_USERNAME: r1.username,
        SVC_PASSWORD: r1.password,
        SVC_ENABLE: r1.enable,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise((resolve) => child.once('close', resolve));
  assert.equal(code, 0, stderr);
  assert.match(stdout, new RegExp(`=== core-r1 \\(${r1.host}:${r1.port}\\) \\[finished\\] ===`));
  assert.match(stdout, new RegExp(`=== edge-r2 \\(${r2.host}:${r2.port}\\) \\[finished\\] ===`));
});
