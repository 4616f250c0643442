import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { randomUUID } from 'node:crypto';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import { loadGatewayConfig, startGateway, type RunningGateway } from '@svc/gateway';
import { Sealer, connectNats } from '@svc/proto';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  NatsServerProcess,
  TEST_ENCRYPTION_KEY,
  http,
  silentLogger,
  startInProcessStack,
  testEnv,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

// Jobs of context `idle` are never run (no actor host serves it): they stay queued, which keeps
// their streams open for as long as a test needs.
const ENV = {
  SVC_CONTEXTS: 'default,idle',
  WORKER_CONTEXTS: 'default',
  SSE_MAX_CONNECTIONS: '3',
  SSE_TIMEOUT: '30',
  JOB_DEDUP_ENABLED: 'false',
  RATE_LIMIT_DEVICE_PER_MINUTE: '0',
};

let nats: NatsServerProcess;
let stack: InProcessStack;
let device: SimulatedDevice;
let auth: { basic: { username: string; password: string } };
let shortNc: NatsConnection;
let shortGateway: RunningGateway;

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  auth = { basic: { username: device.username, password: device.password } };
  stack = await startInProcessStack(nats.url, { env: ENV });
  await waitHealthy(stack.url);
  // A second gateway of the same cluster whose streams time out after 1 s.
  shortNc = await connectNats(nats.url, 'gateway-short');
  shortGateway = await startGateway(
    loadGatewayConfig(testEnv(nats.url, { ...ENV, SSE_TIMEOUT: '1' })),
    {
      nc: shortNc,
      sealer: Sealer.fromSetting(TEST_ENCRYPTION_KEY),
      log: silentLogger('gateway'),
    },
  );
});

after(async () => {
  await shortGateway?.stop();
  await shortNc?.close();
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

interface SseStream {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  events: SseEvent[];
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  /** Resolves once an event of this name arrived. */
  waitFor(name: string, timeoutMs?: number): Promise<SseEvent>;
  close(): void;
}

/** A real SSE client over node:http: parses `event:`/`data:` blocks as they arrive. */
function openStream(
  url: string,
  basic: { username: string; password: string },
): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const authorization =
      'Basic ' + Buffer.from(`${basic.username}:${basic.password}`).toString('base64');
    const req = request(url, { headers: { authorization, accept: 'text/event-stream' } }, (res) => {
      let buffer = '';
      let endResolve: () => void = () => undefined;
      const waiters: { name: string; resolve: (e: SseEvent) => void }[] = [];
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: '',
        events: [],
        ended: new Promise<void>((r) => (endResolve = r)),
        waitFor(name, timeoutMs = 20_000) {
          const seen = stream.events.find((e) => e.event === name);
          if (seen) return Promise.resolve(seen);
          return new Promise((ok, fail) => {
            const t = setTimeout(
              () => fail(new Error(`no ${name} event; got ${JSON.stringify(stream.events)}`)),
              timeoutMs,
            );
            waiters.push({
              name,
              resolve: (e) => {
                clearTimeout(t);
                ok(e);
              },
            });
          });
        },
        close: () => req.destroy(),
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        stream.body += chunk;
        buffer += chunk;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const name = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (!name || data === undefined) continue;
          const event = { event: name, data: JSON.parse(data) as Record<string, unknown> };
          stream.events.push(event);
          for (const w of waiters.filter((x) => x.name === name)) w.resolve(event);
        }
      });
      res.on('end', () => endResolve());
      res.on('close', () => endResolve());
      resolve(stream);
    });
    req.on('error', reject);
    req.end();
  });
}

const submit = async (extra: Record<string, unknown> = {}) => {
  const a = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: {
      host: '127.0.0.1',
      port: device.port,
      platform: 'cisco_ios',
      commands: ['show version'],
      ...extra,
    },
  });
  assert.equal(a.status, 202, a.text);
  return a.json.job_id as string;
};

test('when a client streams a running job, then it sees status events and one result, then the stream ends', async () => {
  const jobId = await submit();
  const stream = await openStream(`${stack.url}/v2/jobs/${jobId}/stream`, auth.basic);
  assert.equal(stream.status, 200);
  assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
  const result = await stream.waitFor('result');
  await stream.ended;
  const names = stream.events.map((e) => e.event);
  assert.ok(names.length >= 2, names.join(','));
  assert.equal(names.at(-1), 'result');
  assert.equal(names.filter((n) => n === 'result').length, 1);
  assert.ok(
    names.slice(0, -1).every((n) => n === 'status'),
    names.join(','),
  );
  const statuses = stream.events.filter((e) => e.event === 'status').map((e) => e.data['status']);
  assert.equal(statuses.at(-1), 'finished');
  assert.equal(new Set(statuses).size, statuses.length, 'a status is sent once');
  for (const e of stream.events) assert.equal(e.data['job_id'], jobId);
  assert.equal(result.data['status'], 'finished');
  assert.match(
    String((result.data['results'] as Record<string, string>)['show version']),
    /Cisco IOS/,
  );
});

test('when a stream is opened after the job ended, then the result comes at once via /v2/send-command/{id}/stream', async () => {
  const jobId = await submit();
  await waitForJob(stack.url, jobId, auth);
  const t0 = Date.now();
  const stream = await openStream(`${stack.url}/v2/send-command/${jobId}/stream`, auth.basic);
  await stream.ended;
  assert.ok(Date.now() - t0 < 2000);
  assert.deepEqual(
    stream.events.map((e) => e.event),
    ['status', 'result'],
  );
  assert.equal(stream.events[1]?.data['status'], 'finished');
});

test('when someone else or an unknown id is streamed, then 403 and 404', async () => {
  const jobId = await submit({ context: 'idle' });
  const other = await http('GET', `${stack.url}/v2/jobs/${jobId}/stream`, {
    basic: { username: 'someone-else', password: 'x' },
  });
  assert.equal(other.status, 403);
  const unknown = await http('GET', `${stack.url}/v2/jobs/${randomUUID()}/stream`, auth);
  assert.equal(unknown.status, 404);
  const anonymous = await http('GET', `${stack.url}/v2/jobs/${jobId}/stream`);
  assert.equal(anonymous.status, 401);
});

test('when SSE_MAX_CONNECTIONS streams are open, then one more gets 429 and a closed stream frees its slot', async () => {
  const jobId = await submit({ context: 'idle' });
  const url = `${stack.url}/v2/jobs/${jobId}/stream`;
  const open: SseStream[] = [];
  for (let i = 0; i < 3; i++) {
    const s = await openStream(url, auth.basic);
    assert.equal(s.status, 200);
    await s.waitFor('status');
    open.push(s);
  }
  const fourth = await http('GET', url, auth);
  assert.equal(fourth.status, 429, fourth.text);
  assert.equal(typeof fourth.json.message, 'string');
  open[0]!.close();
  // The server notices the disconnect and frees the slot.
  let again: SseStream | null = null;
  for (let i = 0; i < 50 && !again; i++) {
    const s = await openStream(url, auth.basic);
    if (s.status === 200) again = s;
    else {
      s.close();
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  assert.ok(again, 'a slot was freed');
  for (const s of [...open.slice(1), again]) s.close();
});

test('when SSE_TIMEOUT passes, then a timeout event ends the stream', async () => {
  const jobId = await submit({ context: 'idle' });
  const stream = await openStream(`${shortGateway.httpUrl!}/v2/jobs/${jobId}/stream`, auth.basic);
  assert.equal(stream.status, 200);
  const t0 = Date.now();
  const timeout = await stream.waitFor('timeout', 5000);
  await stream.ended;
  assert.ok(Date.now() - t0 < 3000);
  assert.equal(timeout.data['job_id'], jobId);
  assert.equal(typeof timeout.data['message'], 'string');
  assert.deepEqual(
    stream.events.map((e) => e.event),
    ['status', 'timeout'],
  );
  assert.equal(stream.events[0]?.data['status'], 'queued');
});

test('when a queued job is cancelled while streamed, then the result event carries cancelled', async () => {
  const jobId = await submit({ context: 'idle' });
  const stream = await openStream(`${stack.url}/v2/jobs/${jobId}/stream`, auth.basic);
  await stream.waitFor('status');
  const del = await http('DELETE', `${stack.url}/v2/send-command/${jobId}`, auth);
  assert.equal(del.status, 204);
  const result = await stream.waitFor('result');
  await stream.ended;
  assert.equal(result.data['status'], 'cancelled');
});
