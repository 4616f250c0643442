import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { randomUUID } from 'node:crypto';
import { EventSource } from 'eventsource';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import { loadGatewayConfig, startGateway, type RunningGateway } from '@svc/gateway';
import { Sealer } from '@svc/proto';
import { connectNats } from '@svc/nats';
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
  waitUntil,
  type InProcessStack,
} from '../harness/mod.js';

// Jobs of context `idle` are never run (no actor host serves it): they stay queued, which keeps
// their streams open for as long as a test needs.
const ENV = {
  SVC_CONTEXTS: 'default,idle',
  WORKER_CONTEXTS: 'default',
  SSE_MAX_CONNECTIONS: '3',
  // One caller may hold every stream here: the cap itself is under test.
  SSE_MAX_CONNECTIONS_PER_CALLER: '3',
  SSE_TIMEOUT: '30',
  // Short reconnect delay so "no reconnect within a few retry periods" is seen in seconds.
  SSE_RETRY: '0.4',
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
  /** The `id:` line of the event, null when it has none. */
  id: string | null;
  data: Record<string, unknown>;
}

interface SseStream {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  events: SseEvent[];
  /** The `retry:` value (ms) the server sent, null when none. */
  retry: number | null;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  /** Resolves once an event of this name arrived. */
  waitFor(name: string, timeoutMs?: number): Promise<SseEvent>;
  close(): void;
}

const basicHeader = (basic: { username: string; password: string }) =>
  'Basic ' + Buffer.from(`${basic.username}:${basic.password}`).toString('base64');

/** A real SSE client over node:http: parses `event:`/`data:` blocks as they arrive. */
function openStream(
  url: string,
  basic: { username: string; password: string },
  headers: Record<string, string> = {},
): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const authorization = basicHeader(basic);
    const req = request(
      url,
      { headers: { authorization, accept: 'text/event-stream', ...headers } },
      (res) => {
        let buffer = '';
        let endResolve: () => void = () => undefined;
        const waiters: { name: string; resolve: (e: SseEvent) => void }[] = [];
        const stream: SseStream = {
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: '',
          events: [],
          retry: null,
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
            const retry = /^retry: (\d+)$/m.exec(block)?.[1];
            if (retry !== undefined) stream.retry = Number(retry);
            const name = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (!name || data === undefined) continue;
            const event = {
              event: name,
              id: /^id: (.*)$/m.exec(block)?.[1] ?? null,
              data: JSON.parse(data) as Record<string, unknown>,
            };
            stream.events.push(event);
            for (const w of waiters.filter((x) => x.name === name)) w.resolve(event);
          }
        });
        res.on('end', () => endResolve());
        res.on('close', () => endResolve());
        resolve(stream);
      },
    );
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
  // On the gateway whose streams time out after 1 s: a stream that waited for anything but the
  // record would end with a `timeout` event instead, so ['status', 'result'] means "at once".
  const stream = await openStream(
    `${shortGateway.httpUrl!}/v2/send-command/${jobId}/stream`,
    auth.basic,
  );
  await stream.ended;
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
  const again = await waitUntil(
    async () => {
      const s = await openStream(url, auth.basic);
      if (s.status === 200) return s;
      s.close();
      return null;
    },
    'a slot to be freed',
    { timeoutMs: 5000, everyMs: 50 },
  );
  for (const s of [...open.slice(1), again]) s.close();
});

/** Sends a stream request and resets the connection at once, before any answer can come. */
function requestAndLeave(url: URL): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(
        `GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\n` +
          `Authorization: ${basicHeader(auth.basic)}\r\nAccept: text/event-stream\r\n\r\n`,
        () => {
          socket.resetAndDestroy();
          resolve();
        },
      );
    });
    socket.on('error', reject);
  });
}

test('when clients leave before their job or batch streams answer, then their slots are freed at once (not after SSE_TIMEOUT)', async () => {
  const jobId = await submit({ context: 'idle' });
  const batch = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'command',
      context: 'idle',
      platform: 'cisco_ios',
      commands: ['show version'],
      devices: [{ host: '127.0.0.1', port: device.port }],
    },
  });
  assert.equal(batch.status, 202, batch.text);
  for (const path of [
    `/v2/jobs/${jobId}/stream`,
    `/v2/batches/${batch.json.batch_id as string}/stream`,
  ]) {
    const url = new URL(`${stack.url}${path}`);
    // As many as SSE_MAX_CONNECTIONS, each gone while the gateway prepares its answer.
    for (let i = 0; i < 3; i++) await requestAndLeave(url);
    // A stream opens well within SSE_TIMEOUT (30 s): the slots the others took are free again.
    const s = await waitUntil(
      async () => {
        const opened = await openStream(url.href, auth.basic);
        if (opened.status === 200) return opened;
        opened.close();
        return null;
      },
      `a slot to be free (${path})`,
      { timeoutMs: 5000, everyMs: 50 },
    );
    s.close();
  }
});

test('when one caller holds its share of the streams (a quarter of SSE_MAX_CONNECTIONS by default), then it gets 429 and another caller still streams', async () => {
  const nc = await connectNats(nats.url, 'gateway-shares');
  const env: Record<string, string> = { ...ENV };
  delete env['SSE_MAX_CONNECTIONS_PER_CALLER']; // the default share is under test
  const shares = await startGateway(
    loadGatewayConfig(testEnv(nats.url, { ...env, SSE_MAX_CONNECTIONS: '8' })),
    { nc, sealer: Sealer.fromSetting(TEST_ENCRYPTION_KEY), log: silentLogger('gateway') },
  );
  const open: SseStream[] = [];
  try {
    const jobId = await submit({ context: 'idle' });
    const url = `${shares.httpUrl!}/v2/jobs/${jobId}/stream`;
    for (let i = 0; i < 2; i++) {
      const s = await openStream(url, auth.basic);
      assert.equal(s.status, 200);
      await s.waitFor('status');
      open.push(s);
    }
    const third = await http('GET', url, auth);
    assert.equal(third.status, 429, third.text);
    assert.match(third.json.message, /SSE_MAX_CONNECTIONS_PER_CALLER=2/);
    // Another caller (another Basic credential) streams its own job.
    const other = { username: 'someone-else', password: 'another-password' };
    const a = await http('POST', `${shares.httpUrl!}/v2/send-command`, {
      basic: other,
      body: { host: '127.0.0.1', port: device.port, commands: ['show version'], context: 'idle' },
    });
    assert.equal(a.status, 202, a.text);
    const theirs = await openStream(`${shares.httpUrl!}/v2/jobs/${a.json.job_id}/stream`, other);
    open.push(theirs);
    assert.equal(theirs.status, 200);
    await theirs.waitFor('status');
  } finally {
    for (const s of open) s.close();
    await shares.stop();
    await nc.close();
  }
});

test('when SSE_TIMEOUT passes, then a timeout event ends the stream', async () => {
  const jobId = await submit({ context: 'idle' });
  // The same job streamed first from the gateway with SSE_TIMEOUT 30: when the 1 s stream opened
  // after it has timed out, this older one is still open, so the end came from SSE_TIMEOUT.
  const longer = await openStream(`${stack.url}/v2/jobs/${jobId}/stream`, auth.basic);
  assert.equal(longer.status, 200);
  await longer.waitFor('status');
  const stream = await openStream(`${shortGateway.httpUrl!}/v2/jobs/${jobId}/stream`, auth.basic);
  assert.equal(stream.status, 200);
  const timeout = await stream.waitFor('timeout', 5000);
  await stream.ended;
  assert.deepEqual(
    longer.events.map((e) => e.event),
    ['status'],
    'the stream of the 30 s gateway is still open',
  );
  longer.close();
  assert.match(String(timeout.data['message']), /SSE_TIMEOUT \(1 s\)/);
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

/** Resolves once the EventSource closed for good (readyState CLOSED), rejects after `ms`. */
function closedForGood(es: EventSource, what: () => string, ms = 30_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`still not closed: ${what()}`)), ms);
    es.addEventListener('error', () => {
      if (es.readyState === es.CLOSED) {
        clearTimeout(t);
        resolve();
      }
    });
  });
}

test('when an EventSource client follows a job to its end, then every event has an id, its reconnect gets 204 and it connects no more', async () => {
  const jobId = await submit();
  const requests: { status: number; lastEventId: string | null }[] = [];
  const authorization = basicHeader(auth.basic);
  const es = new EventSource(`${stack.url}/v2/jobs/${jobId}/stream`, {
    // Counts every connection the client makes (its first and each reconnect).
    fetch: async (url, init) => {
      const res = await fetch(url, { ...init, headers: { ...init.headers, authorization } });
      requests.push({ status: res.status, lastEventId: init.headers['Last-Event-ID'] ?? null });
      return res;
    },
  });
  const seen: { type: string; id: string; data: Record<string, unknown> }[] = [];
  for (const type of ['status', 'result']) {
    es.addEventListener(type, (e) => {
      seen.push({ type, id: e.lastEventId, data: JSON.parse(e.data) as Record<string, unknown> });
    });
  }
  try {
    await closedForGood(es, () =>
      JSON.stringify({ requests, seen: seen.map((e) => [e.type, e.id, e.data['status']]) }),
    );
  } finally {
    es.close();
  }
  assert.deepEqual(seen.map((e) => e.type).slice(-2), ['status', 'result']);
  const result = seen.at(-1)!;
  assert.equal(result.data['status'], 'finished');
  assert.equal(result.data['error_code'], null);
  const ids = seen.map((e) => Number(e.id));
  assert.ok(
    ids.every((id, i) => Number.isInteger(id) && id > 0 && (i === 0 || id > ids[i - 1]!)),
    `ids ${ids.join(',')}`,
  );
  // One stream, then one reconnect carrying the result's id, answered 204: the client stops.
  assert.deepEqual(requests, [
    { status: 200, lastEventId: null },
    { status: 204, lastEventId: result.id },
  ]);
  // A second client of the same job, opened once the first closed for good, makes its own
  // reconnect (answered 204) a retry period (SSE_RETRY) after its stream ended: the first client
  // would have connected again by then.
  const later: { status: number }[] = [];
  const control = new EventSource(`${stack.url}/v2/jobs/${jobId}/stream`, {
    fetch: async (url, init) => {
      const res = await fetch(url, { ...init, headers: { ...init.headers, authorization } });
      later.push({ status: res.status });
      return res;
    },
  });
  try {
    await closedForGood(control, () => JSON.stringify(later));
  } finally {
    control.close();
  }
  assert.deepEqual(later, [{ status: 200 }, { status: 204 }]);
  assert.equal(requests.length, 2);
  assert.equal(es.readyState, es.CLOSED);
});

test('when a stream is opened, then it starts with a retry line and every status and result has an id', async () => {
  const jobId = await submit();
  const stream = await openStream(`${stack.url}/v2/jobs/${jobId}/stream`, auth.basic);
  await stream.ended;
  assert.equal(stream.retry, 400);
  assert.match(stream.body, /^retry: 400\n/);
  for (const e of stream.events) assert.match(String(e.id), /^[1-9][0-9]*$/, JSON.stringify(e));
});

test('when a client reconnects with Last-Event-ID, then it gets only the events it missed, and 204 once it has the result', async () => {
  const jobId = await submit();
  const url = `${stack.url}/v2/jobs/${jobId}/stream`;
  const first = await openStream(url, auth.basic);
  await first.ended;
  const byStatus = new Map(first.events.map((e) => [`${e.event}:${String(e.data['status'])}`, e]));
  const finished = byStatus.get('status:finished')!;
  const result = byStatus.get('result:finished')!;
  assert.ok(finished && result, JSON.stringify(first.events));

  // Saw only `queued` (id of the queued state): gets started, finished and the result.
  const fromQueued = await openStream(url, auth.basic, { 'last-event-id': '1' });
  await fromQueued.ended;
  assert.equal(fromQueued.status, 200);
  assert.deepEqual(
    fromQueued.events.map((e) => [e.event, e.data['status']]),
    [
      ['status', 'started'],
      ['status', 'finished'],
      ['result', 'finished'],
    ],
  );
  assert.equal(fromQueued.events.at(-2)!.id, finished.id);
  assert.equal(fromQueued.events.at(-1)!.id, result.id);
  assert.match(
    String((fromQueued.events.at(-1)!.data['results'] as Record<string, string>)['show version']),
    /Cisco IOS/,
  );

  // Saw the terminal status but not the result: gets the result alone.
  const fromFinished = await openStream(url, auth.basic, { 'last-event-id': finished.id! });
  await fromFinished.ended;
  assert.deepEqual(
    fromFinished.events.map((e) => [e.event, e.id]),
    [['result', result.id]],
  );

  // Has the result: 204, which tells EventSource clients to stop reconnecting.
  const done = await http('GET', url, { ...auth, headers: { 'last-event-id': result.id! } });
  assert.equal(done.status, 204, done.text);
  assert.equal(done.text, '');
});

test('when a live stream is resumed with Last-Event-ID, then seen states are not repeated and later ones follow', async () => {
  const jobId = await submit({ context: 'idle' });
  const url = `${stack.url}/v2/jobs/${jobId}/stream`;
  const first = await openStream(url, auth.basic);
  const queued = await first.waitFor('status');
  first.close();
  assert.equal(queued.data['status'], 'queued');
  const resumed = await openStream(url, auth.basic, { 'last-event-id': queued.id! });
  assert.equal(resumed.status, 200);
  const del = await http('DELETE', `${stack.url}/v2/send-command/${jobId}`, auth);
  assert.equal(del.status, 204);
  await resumed.waitFor('result');
  await resumed.ended;
  assert.deepEqual(
    resumed.events.map((e) => [e.event, e.data['status']]),
    [
      ['status', 'cancelled'],
      ['result', 'cancelled'],
    ],
  );
  assert.equal(resumed.events.at(-1)!.data['error_code'], 'CANCELLED');
  const ids = [queued, ...resumed.events].map((e) => Number(e.id));
  assert.deepEqual(
    [...ids].sort((a, b) => a - b),
    ids,
  );
  assert.equal(new Set(ids).size, ids.length);
});

test('when a job fails, then its result event carries error_code', async () => {
  // Nothing listens on port 1 of the loopback: the connection is refused.
  const jobId = await submit({ port: 1, conn_timeout: 2 });
  const stream = await openStream(`${stack.url}/v2/jobs/${jobId}/stream`, auth.basic);
  const result = await stream.waitFor('result');
  await stream.ended;
  assert.equal(result.data['status'], 'failed');
  assert.equal(typeof result.data['error_code'], 'string');
  assert.notEqual(result.data['error_code'], '');
  const record = await http('GET', `${stack.url}/v2/jobs/${jobId}`, auth);
  assert.equal(result.data['error_code'], record.json.error_code);
});

test('when a batch stream is resumed with Last-Event-ID, then only later events come, and 204 once the summary was sent', async () => {
  const created = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'command',
      platform: 'cisco_ios',
      commands: ['show version'],
      devices: [
        { host: '127.0.0.1', port: device.port },
        { host: '127.0.0.1', port: device.port, tags: { n: '2' } },
      ],
    },
  });
  assert.equal(created.status, 202, created.text);
  const url = `${stack.url}/v2/batches/${created.json.batch_id as string}/stream`;
  const full = await openStream(url, auth.basic);
  await full.ended;
  assert.equal(full.retry, 400);
  const summary = full.events.at(-1)!;
  assert.equal(summary.event, 'summary');
  // `job` events carry their sequence in SVC_EVENTS (increasing), the summary carries `end`.
  assert.equal(summary.id, 'end');
  const ids = full.events.slice(0, -1).map((e) => Number(e.id));
  assert.ok(ids.length >= 2, `ids ${ids.join(',')}`);
  assert.ok(
    ids.every((id, i) => Number.isInteger(id) && id > 0 && (i === 0 || id > ids[i - 1]!)),
    `ids ${ids.join(',')}`,
  );
  // Resume after the first event: exactly the rest, the summary included.
  const resumed = await openStream(url, auth.basic, { 'last-event-id': full.events[0]!.id! });
  await resumed.ended;
  assert.deepEqual(
    resumed.events.map((e) => [e.event, e.id]),
    full.events.slice(1).map((e) => [e.event, e.id]),
  );
  // A fresh stream of the ended batch gets the summary with the same id.
  const late = await openStream(url, auth.basic);
  await late.ended;
  assert.deepEqual(
    late.events.map((e) => [e.event, e.id]),
    [['summary', 'end']],
  );
  const done = await http('GET', url, {
    ...auth,
    headers: { 'last-event-id': 'end' },
  });
  assert.equal(done.status, 204, done.text);
});
