// Batches: one ordinary job per device under a batch id, rollout waves for config batches,
// cancellation, ownership, and a batch that outlives the gateway that took it. Real nats-server,
// real HTTP, SSH device simulators.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { loadGatewayConfig, startGateway, type RunningGateway } from '@svc/gateway';
import { Sealer } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { startFleet, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  ServiceProcess,
  http,
  silentLogger,
  startInProcessStack,
  testEnv,
  waitHealthy,
  waitUntil,
  type HttpOptions,
} from '../harness/mod.js';

const auth = (d: SimulatedDevice): HttpOptions => ({
  basic: { username: d.username, password: d.password },
});
const deviceOf = (d: SimulatedDevice) => ({ host: d.host, port: d.port });

/** POSTs a `show version` batch over `devices` (the first one's enable secret), with `extra` fields. */
function postShowBatch(
  url: string,
  me: HttpOptions,
  devices: readonly SimulatedDevice[],
  extra: Record<string, unknown> = {},
) {
  return http('POST', `${url}/v2/batches`, {
    ...me,
    body: {
      kind: 'command',
      commands: ['show version'],
      enable: devices[0]!.enable,
      ...extra,
      devices: devices.map(deviceOf),
    },
  });
}

/** Polls the batch until it is no longer running (fails the test after `ms`). */
async function waitBatch(url: string, id: string, opts: HttpOptions, ms = 120_000) {
  return waitUntil(
    async () => {
      const a = await http('GET', `${url}/v2/batches/${id}`, opts);
      assert.equal(a.status, 200, a.text);
      return a.json.status !== 'running' && a.json;
    },
    `batch ${id} to end`,
    { timeoutMs: ms, everyMs: 100 },
  );
}

/** Waits for the webhook delivery of each batch named, in any order; returns them by batch. */
async function waitDeliveries<D extends { body: string }>(
  deliveries: readonly D[],
  batchIds: readonly string[],
): Promise<D[][]> {
  const of = (id: string) => deliveries.filter((d) => JSON.parse(d.body).batch_id === id);
  await waitUntil(
    () => batchIds.every((id) => of(id).length > 0),
    `webhook deliveries of ${batchIds.join(', ')}`,
    { timeoutMs: 20_000, everyMs: 50 },
  );
  return batchIds.map(of);
}

test('when a show batch covers 200 devices, then 200 jobs finish with correct counts, paged results, a stream summary, and other callers get 403', async (t) => {
  const nats = await NatsServerProcess.start();
  const fleet = await startFleet({ count: 200 });
  const stack = await startInProcessStack(nats.url);
  t.after(async () => {
    await stack.stop();
    await fleet.stop();
    await nats.stop();
  });
  await waitHealthy(stack.url);
  const me = auth(fleet.devices[0]!);
  const created = await postShowBatch(stack.url, me, fleet.devices);
  assert.equal(created.status, 202, created.text);
  assert.equal(created.json.total, 200);
  assert.equal(created.json.jobs.length, 200);
  assert.deepEqual(
    created.json.jobs.map((j: { host: string; port: number }) => j.port),
    fleet.devices.map((d) => d.port),
  );
  const id = created.json.batch_id as string;

  const stream = http('GET', `${stack.url}/v2/batches/${id}/stream`, me);
  const end = await waitBatch(stack.url, id, me);
  assert.equal(end.status, 'finished');
  assert.deepEqual(end.error_codes, {});
  assert.deepEqual(end.counts, { queued: 0, started: 0, finished: 200, failed: 0, cancelled: 0 });
  assert.equal(typeof end.ended_at, 'string');
  for (const d of fleet.devices) assert.equal(d.stats.handshakes, 1, d.hostname);

  const page = await http('GET', `${stack.url}/v2/batches/${id}/jobs?page=2&per_page=150`, me);
  assert.equal(page.status, 200);
  assert.equal(page.json.jobs.length, 50);
  assert.equal(page.json.jobs[0].job_id, created.json.jobs[150].job_id);
  assert.match(page.json.jobs[0].results['show version'], /R151/);

  const sse = await stream;
  const jobEvents = sse.text.match(/^event: job$/gm) ?? [];
  assert.ok(jobEvents.length >= 200, `per-device events: ${jobEvents.length}`);
  const summary = /event: summary\ndata: (.*)\n/.exec(sse.text);
  assert.ok(summary, sse.text.slice(-500));
  assert.equal(JSON.parse(summary[1]!).counts.finished, 200);

  const mine = await http('GET', `${stack.url}/v2/batches`, me);
  assert.deepEqual(
    mine.json.batches.map((b: { batch_id: string }) => b.batch_id),
    [id],
  );
  const other: HttpOptions = { basic: { username: 'mallory', password: 'x' } };
  assert.equal((await http('GET', `${stack.url}/v2/batches/${id}`, other)).status, 403);
  assert.equal((await http('GET', `${stack.url}/v2/batches/${id}/jobs`, other)).status, 403);
  assert.equal((await http('DELETE', `${stack.url}/v2/batches/${id}`, other)).status, 403);
  assert.equal((await http('GET', `${stack.url}/v2/batches/${id}/stream`, other)).status, 403);
  assert.deepEqual((await http('GET', `${stack.url}/v2/batches`, other)).json.batches, []);
});

test('when a batch request is bad, then 422 names the device and nothing is queued', async (t) => {
  const nats = await NatsServerProcess.start();
  const stack = await startInProcessStack(nats.url, {
    actors: 0,
    env: { BATCH_MAX_DEVICES: '3' },
  });
  t.after(async () => {
    await stack.stop();
    await nats.stop();
  });
  const me: HttpOptions = { basic: { username: 'u', password: 'p' } };
  const bad = await http('POST', `${stack.url}/v2/batches`, {
    ...me,
    body: {
      kind: 'command',
      commands: ['show version'],
      devices: [{ host: '127.0.0.1' }, { host: 'bad host!' }],
    },
  });
  assert.equal(bad.status, 422, bad.text);
  assert.deepEqual(bad.json.validation_error.json[0].loc, ['body', 'devices', 1, 'host']);
  const many = await http('POST', `${stack.url}/v2/batches`, {
    ...me,
    body: {
      kind: 'command',
      commands: ['show version'],
      devices: Array.from({ length: 4 }, () => ({ host: '127.0.0.1' })),
    },
  });
  assert.equal(many.status, 422);
  assert.deepEqual(many.json.validation_error.json[0].loc, ['body', 'devices']);
  const canaryOnShow = await http('POST', `${stack.url}/v2/batches`, {
    ...me,
    body: {
      kind: 'command',
      commands: ['show version'],
      canary: 1,
      devices: [{ host: '127.0.0.1' }],
    },
  });
  assert.equal(canaryOnShow.status, 422);
  assert.deepEqual(canaryOnShow.json.validation_error.json[0].loc, ['body', 'canary']);
  const jobs = await http('GET', `${stack.url}/v2/jobs`, me);
  assert.equal(jobs.json.jobs?.length ?? jobs.json.items?.length ?? 0, 0, jobs.text);
});

test('when a batch jobs page is asked for with query values, then they are read as integers from text and a bad one is a 422 naming each parameter', async (t) => {
  const nats = await NatsServerProcess.start();
  const stack = await startInProcessStack(nats.url, { actors: 0 });
  t.after(async () => {
    await stack.stop();
    await nats.stop();
  });
  const me: HttpOptions = { basic: { username: 'u', password: 'p' } };
  const created = await http('POST', `${stack.url}/v2/batches`, {
    ...me,
    body: {
      kind: 'command',
      commands: ['show version'],
      devices: [2201, 2202, 2203].map((port) => ({ host: '127.0.0.1', port })),
    },
  });
  assert.equal(created.status, 202, created.text);
  const id = created.json.batch_id as string;
  const ids = created.json.jobs.map((j: { job_id: string }) => j.job_id) as string[];
  const page = (query: string, who: HttpOptions = me, batch = id) =>
    http('GET', `${stack.url}/v2/batches/${batch}/jobs${query}`, who);
  const shape = (a: {
    json: { page: number; per_page: number; total: number; jobs: { job_id: string }[] };
  }) => ({
    page: a.json.page,
    per_page: a.json.per_page,
    total: a.json.total,
    jobs: a.json.jobs.map((j) => j.job_id),
  });

  // Valid: defaults, decimal text with blanks, a sign or leading zeros, unknown parameters ignored.
  const cases: [string, { page: number; per_page: number; jobs: string[] }][] = [
    ['', { page: 1, per_page: 50, jobs: ids }],
    ['?page=2&per_page=2', { page: 2, per_page: 2, jobs: ids.slice(2) }],
    ['?per_page=%202%20', { page: 1, per_page: 2, jobs: ids.slice(0, 2) }],
    ['?page=%2B1&per_page=001', { page: 1, per_page: 1, jobs: ids.slice(0, 1) }],
    ['?per_page=500&page=9', { page: 9, per_page: 500, jobs: [] }],
    ['?other=x&status=bogus', { page: 1, per_page: 50, jobs: ids }],
  ];
  for (const [query, want] of cases) {
    const a = await page(query);
    assert.equal(a.status, 200, `${query}: ${a.text}`);
    assert.deepEqual(shape(a), { ...want, total: 3 }, query);
  }

  // Invalid: each parameter's issue in the route's own words, every problem at once.
  const pageIssue = {
    loc: ['query', 'page'],
    msg: `must be an integer from 1 to ${Number.MAX_SAFE_INTEGER}`,
    type: 'value_error',
  };
  const perPageIssue = {
    loc: ['query', 'per_page'],
    msg: 'must be an integer from 1 to 500',
    type: 'value_error',
  };
  const bad: [string, object[]][] = [
    ['?page=0', [pageIssue]],
    ['?page=-1', [pageIssue]],
    ['?page=1.5', [pageIssue]],
    ['?page=ten', [pageIssue]],
    ['?page=99999999999999999999', [pageIssue]],
    ['?per_page=0', [perPageIssue]],
    ['?per_page=501', [perPageIssue]],
    ['?per_page=ten', [perPageIssue]],
    // Not the decimal text of an integer (the OpenAPI's `integer`, as on GET /v2/jobs).
    ['?page=1e1', [pageIssue]],
    ['?per_page=0x10', [perPageIssue]],
    ['?page=', [pageIssue]],
    ['?page=0&per_page=501', [pageIssue, perPageIssue]],
  ];
  for (const [query, issues] of bad) {
    const a = await page(query);
    assert.equal(a.status, 422, `${query}: ${a.text}`);
    assert.deepEqual(
      a.json,
      { message: 'validation failed', validation_error: { json: issues } },
      query,
    );
  }
  // Credentials first; the query before the batch is looked up.
  assert.equal((await page('?page=0', {})).status, 401);
  assert.equal((await page('?page=0', me, 'no-such-batch')).status, 422);
  assert.equal((await page('', me, 'no-such-batch')).status, 404);
});

test('when a canary of a config batch fails, then the rest never start and the batch ends cancelled', async (t) => {
  const nats = await NatsServerProcess.start();
  const fleet = await startFleet({ count: 15 });
  const stack = await startInProcessStack(nats.url);
  t.after(async () => {
    await stack.stop();
    await fleet.stop();
    await nats.stop();
  });
  await waitHealthy(stack.url);
  const [first, ...others] = fleet.devices;
  // The first canary device refuses connections: its job fails.
  await first!.setFaults({ refuse: true });
  const me = auth(others[0]!);
  const created = await http('POST', `${stack.url}/v2/batches`, {
    ...me,
    body: {
      kind: 'config',
      commands: ['interface Gi0/1', 'description batch'],
      enable: others[0]!.enable,
      canary: 5,
      devices: fleet.devices.map(deviceOf),
    },
  });
  assert.equal(created.status, 202, created.text);
  const end = await waitBatch(stack.url, created.json.batch_id, me);
  assert.equal(end.status, 'cancelled');
  assert.deepEqual(end.counts, { queued: 0, started: 0, finished: 4, failed: 1, cancelled: 10 });
  assert.equal(end.error_codes['CANCELLED'], 10);
  // The ratio is judged as each canary ends, so the stop may come before all five have ended.
  assert.match(end.stopped_reason, /^stopped: 1 of [1-5] ended jobs failed/);
  for (const d of others.slice(4)) assert.equal(d.stats.handshakes, 0, `${d.hostname} untouched`);
  for (const d of others.slice(0, 4))
    assert.ok(d.stats.configLines > 0, `${d.hostname} configured`);
});

test('when a config batch without canary sets stop_on_failure_ratio, then it runs on below the ratio and cancels the rest once failed/ended exceeds it', async (t) => {
  const nats = await NatsServerProcess.start();
  const fleet = await startFleet({ count: 8 });
  const stack = await startInProcessStack(nats.url);
  t.after(async () => {
    await stack.stop();
    await fleet.stop();
    await nats.stop();
  });
  await waitHealthy(stack.url);
  // One at a time: ok, ok, fail (1 of 3 ended failed: below 0.4), fail (2 of 4: above), …
  await fleet.devices[2]!.setFaults({ refuse: true });
  await fleet.devices[3]!.setFaults({ refuse: true });
  const me = auth(fleet.devices[0]!);
  const created = await http('POST', `${stack.url}/v2/batches`, {
    ...me,
    body: {
      kind: 'config',
      commands: ['interface Gi0/1', 'description ratio'],
      enable: fleet.devices[0]!.enable,
      max_parallel: 1,
      stop_on_failure_ratio: 0.4,
      devices: fleet.devices.map(deviceOf),
    },
  });
  assert.equal(created.status, 202, created.text);
  const end = await waitBatch(stack.url, created.json.batch_id, me);
  assert.equal(end.status, 'cancelled');
  assert.deepEqual(end.counts, { queued: 0, started: 0, finished: 2, failed: 2, cancelled: 4 });
  assert.equal(end.error_codes['CANCELLED'], 4);
  assert.match(
    end.stopped_reason,
    /^stopped: 2 of 4 ended jobs failed \(stop_on_failure_ratio 0\.4\)/,
  );
  for (const d of fleet.devices.slice(0, 2)) assert.ok(d.stats.configLines > 0, d.hostname);
  for (const d of fleet.devices.slice(4))
    assert.equal(d.stats.handshakes, 0, `${d.hostname} untouched`);
});

test('when a batch is cancelled, then its queued jobs are cancelled and started ones finish', async (t) => {
  const nats = await NatsServerProcess.start();
  const fleet = await startFleet({ count: 6, commandLatencyMs: 1500 });
  const stack = await startInProcessStack(nats.url, { env: { ACTOR_MAX_SESSIONS: '2' } });
  t.after(async () => {
    await stack.stop();
    await fleet.stop();
    await nats.stop();
  });
  await waitHealthy(stack.url);
  const me = auth(fleet.devices[0]!);
  const created = await postShowBatch(stack.url, me, fleet.devices);
  assert.equal(created.status, 202, created.text);
  const id = created.json.batch_id as string;
  await waitUntil(async () => {
    const s = await http('GET', `${stack.url}/v2/batches/${id}`, me);
    assert.equal(s.json.counts.finished, 0, 'cancel must come while two jobs run');
    return s.json.counts.started === 2;
  }, 'two jobs of the batch to run');
  const cancelled = await http('DELETE', `${stack.url}/v2/batches/${id}`, me);
  assert.equal(cancelled.status, 200, cancelled.text);
  assert.equal(cancelled.json.counts.cancelled, 4);
  const end = await waitBatch(stack.url, id, me);
  assert.equal(end.status, 'cancelled');
  assert.deepEqual(end.error_codes, { CANCELLED: 4 });
  assert.deepEqual(end.counts, { queued: 0, started: 0, finished: 2, failed: 0, cancelled: 4 });
  assert.equal(fleet.devices.filter((d) => d.stats.handshakes > 0).length, 2);
  const again = await http('DELETE', `${stack.url}/v2/batches/${id}`, me);
  assert.equal(again.status, 409);
});

test('when the gateway that took a rollout batch is killed, then another gateway releases its waves and reads its end', async (t) => {
  const nats = await NatsServerProcess.start();
  const fleet = await startFleet({ count: 4, commandLatencyMs: 300 });
  const stack = await startInProcessStack(nats.url);
  const first = ServiceProcess.start('gateway', testEnv(nats.url, { LOG_LEVEL: 'INFO' }));
  t.after(async () => {
    await first.kill();
    await stack.stop();
    await fleet.stop();
    await nats.stop();
  });
  const firstUrl = await first.httpUrl();
  await waitHealthy(firstUrl);
  const me = auth(fleet.devices[0]!);
  const created = await http('POST', `${firstUrl}/v2/batches`, {
    ...me,
    body: {
      kind: 'config',
      commands: ['interface Gi0/1', 'description wave'],
      enable: fleet.devices[0]!.enable,
      max_parallel: 1,
      devices: fleet.devices.map(deviceOf),
    },
  });
  assert.equal(created.status, 202, created.text);
  await first.kill('SIGKILL');
  const end = await waitBatch(stack.url, created.json.batch_id, me);
  assert.equal(end.status, 'finished');
  assert.deepEqual(end.counts, { queued: 0, started: 0, finished: 4, failed: 0, cancelled: 0 });
  // One at a time: no device's session overlapped another's.
  const spans = fleet.devices.map((d) => d.stats.commands.map((c) => c.at));
  spans.sort((a, b) => a[0]! - b[0]!);
  for (let i = 1; i < spans.length; i++) {
    assert.ok(spans[i]![0]! >= spans[i - 1]!.at(-1)!, 'waves of one device each');
  }
});

test('when a batch has a webhook_url, then exactly one signed delivery with its counts comes at its end and the batch record holds no secret of the URL', async (t) => {
  const SECRET = 'B4tch-Hook-Secr3t-61c0';
  const URL_PASSWORD = 'B4tch-Url-Pa55-9d2e';
  const URL_TOKEN = 'B4tch-Url-T0ken-07aa';
  const deliveries: { headers: IncomingHttpHeaders; body: string; url: string }[] = [];
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body, url: req.url ?? '' });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const addr = receiver.address();
  const hook = `http://hook:${URL_PASSWORD}@127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/batch-hook?token=${URL_TOKEN}`;
  const env = { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_NETWORKS: '127.0.0.0/8' };
  const nats = await NatsServerProcess.start();
  const fleet = await startFleet({ count: 5 });
  const stack = await startInProcessStack(nats.url, { env });
  // A second gateway drives the same batch: only the one that ends it may deliver.
  const second = ServiceProcess.start('gateway', testEnv(nats.url, { ...env, LOG_LEVEL: 'INFO' }));
  const nc = await connectNats(nats.url, 'batch-webhook-test');
  t.after(async () => {
    await nc.close();
    await second.kill();
    await stack.stop();
    await fleet.stop();
    await nats.stop();
    await new Promise((r) => receiver.close(r));
  });
  await waitHealthy(stack.url);
  await waitHealthy(await second.httpUrl());
  await fleet.devices[4]!.setFaults({ refuse: true });
  const me = auth(fleet.devices[0]!);
  const created = await postShowBatch(stack.url, me, fleet.devices, {
    webhook_url: hook,
    webhook_secret: SECRET,
  });
  assert.equal(created.status, 202, created.text);
  const id = created.json.batch_id as string;

  // The batch record, straight from the bucket: the URL and the secret only sealed.
  const kv = await new Kvm(jetstream(nc)).open('svc-batches');
  const stored = new TextDecoder().decode((await kv.get(id))!.value);
  assert.match(stored, /"webhook_url":"v1\./);
  for (const secret of [SECRET, URL_PASSWORD, URL_TOKEN, '127.0.0.1:']) {
    assert.ok(!stored.includes(secret), `${secret} in the batch record`);
  }

  const end = await waitBatch(stack.url, id, me);
  assert.deepEqual(end.counts, { queued: 0, started: 0, finished: 4, failed: 1, cancelled: 0 });
  await waitDeliveries(deliveries, [id]);
  // A later batch of the same devices and hook, driven by the same two gateways, ends and is
  // delivered: by then a second delivery of the first (or one per job) would have come too.
  const next = await postShowBatch(stack.url, me, fleet.devices, {
    webhook_url: hook,
    webhook_secret: SECRET,
  });
  assert.equal(next.status, 202, next.text);
  const [ofFirst] = await waitDeliveries(deliveries, [id, next.json.batch_id as string]);
  assert.equal(ofFirst!.length, 1, 'one delivery per batch');
  assert.equal(deliveries.length, 2, 'one delivery per batch, none per job');
  const [d] = ofFirst!;
  assert.equal(d!.url, `/batch-hook?token=${URL_TOKEN}`);
  const expected = `sha256=${createHmac('sha256', SECRET).update(d!.body).digest('hex')}`;
  assert.equal(d!.headers['x-svc-signature-256'], expected);
  assert.match(String(d!.headers['x-svc-timestamp']), /^\d+$/);
  const payload = JSON.parse(d!.body);
  assert.equal(payload.batch_id, id);
  assert.equal(payload.status, 'finished');
  assert.equal(payload.total, 5);
  assert.deepEqual(payload.counts, end.counts);
  assert.deepEqual(payload.error_codes, end.error_codes);
  assert.equal(payload.created_at, end.created_at);
  assert.equal(payload.ended_at, end.ended_at);
  assert.equal(payload.results, undefined);
  for (const secret of [SECRET, URL_PASSWORD, URL_TOKEN, fleet.devices[0]!.password]) {
    assert.ok(!d!.body.includes(secret), `${secret} in the delivery`);
  }
  // The jobs carry no webhook of their own.
  const job = await http('GET', `${stack.url}/v2/jobs/${created.json.jobs[0].job_id}`, me);
  assert.equal(job.status, 200, job.text);
  assert.ok(!job.text.includes('batch-hook'), job.text);
});

test('when a batch webhook_url is a loopback address and no setting allows it, then the batch is 422 and nothing is queued', async (t) => {
  const nats = await NatsServerProcess.start();
  const stack = await startInProcessStack(nats.url, {
    actors: 0,
    // The test environment allows loopback targets; this stack does not.
    env: { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_NETWORKS: '' },
  });
  t.after(async () => {
    await stack.stop();
    await nats.stop();
  });
  const me: HttpOptions = { basic: { username: 'u', password: 'p' } };
  for (const webhook_url of [
    'http://127.0.0.1:9/hook',
    'https://10.1.2.3/hook',
    'ftp://x.example/',
  ]) {
    const a = await http('POST', `${stack.url}/v2/batches`, {
      ...me,
      body: {
        kind: 'command',
        commands: ['show version'],
        webhook_url,
        devices: [{ host: '192.0.2.10' }],
      },
    });
    assert.equal(a.status, 422, `${webhook_url}: ${a.text}`);
    assert.deepEqual(a.json.validation_error.json[0].loc, ['body', 'webhook_url']);
  }
  assert.deepEqual((await http('GET', `${stack.url}/v2/batches`, me)).json.batches, []);
  const jobs = await http('GET', `${stack.url}/v2/jobs`, me);
  assert.equal(jobs.json.jobs?.length ?? jobs.json.items?.length ?? 0, 0, jobs.text);
  // A public https target is taken.
  const ok = await http('POST', `${stack.url}/v2/batches`, {
    ...me,
    body: {
      kind: 'command',
      commands: ['show version'],
      webhook_url: 'https://hooks.example.com/batch',
      devices: [{ host: '192.0.2.10' }],
    },
  });
  assert.equal(ok.status, 202, ok.text);
});

test('when a batch with a webhook_url is cancelled, then its one delivery says cancelled with the counts, unsigned without a secret', async (t) => {
  const deliveries: { headers: IncomingHttpHeaders; body: string }[] = [];
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const addr = receiver.address();
  const hook = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/hook`;
  const nats = await NatsServerProcess.start();
  const fleet = await startFleet({ count: 3, commandLatencyMs: 1500 });
  const stack = await startInProcessStack(nats.url, {
    env: { ACTOR_MAX_SESSIONS: '1', WEBHOOK_ALLOW_HTTP: 'true' },
  });
  t.after(async () => {
    await stack.stop();
    await fleet.stop();
    await nats.stop();
    await new Promise((r) => receiver.close(r));
  });
  await waitHealthy(stack.url);
  const me = auth(fleet.devices[0]!);
  const created = await postShowBatch(stack.url, me, fleet.devices, { webhook_url: hook });
  assert.equal(created.status, 202, created.text);
  const id = created.json.batch_id as string;
  await waitUntil(async () => {
    const s = await http('GET', `${stack.url}/v2/batches/${id}`, me);
    assert.equal(s.json.counts.finished, 0, 'cancel must come while the first job runs');
    return s.json.counts.started === 1;
  }, 'the first job of the batch to run');
  assert.equal((await http('DELETE', `${stack.url}/v2/batches/${id}`, me)).status, 200);
  const end = await waitBatch(stack.url, id, me);
  assert.equal(end.status, 'cancelled');
  assert.deepEqual(end.counts, { queued: 0, started: 0, finished: 1, failed: 0, cancelled: 2 });
  await waitDeliveries(deliveries, [id]);
  // A later batch with the same hook ends and is delivered: by then a second delivery of the
  // cancelled one (its running job ended after the cancel) would have come too.
  const next = await postShowBatch(stack.url, me, [fleet.devices[0]!], { webhook_url: hook });
  assert.equal(next.status, 202, next.text);
  const [ofFirst] = await waitDeliveries(deliveries, [id, next.json.batch_id as string]);
  assert.equal(ofFirst!.length, 1);
  assert.equal(deliveries.length, 2);
  const payload = JSON.parse(ofFirst![0]!.body);
  assert.equal(payload.status, 'cancelled');
  assert.deepEqual(payload.counts, end.counts);
  assert.deepEqual(payload.error_codes, { CANCELLED: 2 });
  assert.equal(payload.stopped_reason, 'cancelled by its submitter');
  assert.equal(ofFirst![0]!.headers['x-svc-signature-256'], undefined);
  assert.match(String(ofFirst![0]!.headers['x-svc-timestamp']), /^\d+$/);
});

test('when no gateway saw the jobs of a batch end, then a gateway started later reads them on its sweep and ends the batch', async (t) => {
  const nats = await NatsServerProcess.start();
  const fleet = await startFleet({ count: 3, commandLatencyMs: 1000 });
  const stack = await startInProcessStack(nats.url);
  const nc = await connectNats(nats.url, 'batches-test');
  const laterNc = await connectNats(nats.url, 'gateway-later');
  let later: RunningGateway | null = null;
  t.after(async () => {
    await later?.stop();
    await laterNc.close();
    await stack.stop();
    await nc.close();
    await fleet.stop();
    await nats.stop();
  });
  const me = auth(fleet.devices[0]!);
  const created = await postShowBatch(stack.url, me, fleet.devices);
  assert.equal(created.status, 202, created.text);
  const id = created.json.batch_id as string;
  // The only gateway stops while the jobs run: their end events reach no gateway.
  await stack.gateway.stop();
  const js = jetstream(nc);
  const jobs = await new Kvm(js).open('svc-jobs');
  const status = async (key: string, kv = jobs) => {
    const e = await kv.get(key);
    return e?.operation === 'PUT' ? e.json<{ status: string }>().status : null;
  };
  const ids = created.json.jobs.map((j: { job_id: string }) => j.job_id);
  await waitUntil(
    async () =>
      (await Promise.all(ids.map((j: string) => status(j)))).every((s) => s === 'finished'),
    'every job of the batch to finish',
    { everyMs: 100 },
  );
  const batches = await new Kvm(js).open('svc-batches');
  assert.equal(await status(id, batches), 'running');

  const env = testEnv(nats.url, { BATCH_SWEEP_INTERVAL: '1' });
  later = await startGateway(loadGatewayConfig(env), {
    nc: laterNc,
    sealer: Sealer.fromSetting(env['SVC_ENCRYPTION_KEY']!),
    log: silentLogger('gateway-later'),
  });
  // Watched in the store, not polled through the gateway (a read there would tell it too).
  await waitUntil(async () => (await status(id, batches)) !== 'running', 'the batch to end', {
    timeoutMs: 20_000,
    everyMs: 100,
  });
  const end = (await http('GET', `${later.httpUrl!}/v2/batches/${id}`, me)).json;
  assert.equal(end.status, 'finished');
  assert.deepEqual(end.counts, { queued: 0, started: 0, finished: 3, failed: 0, cancelled: 0 });
});
