import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import { JOB_SHARDS } from '@svc/proto';
import { startAll } from '@svc/launcher';
import {
  NatsServerProcess,
  ServiceProcess,
  http,
  lintExposition,
  silentLogger,
  testEnv,
  waitForJob,
  waitHealthy,
  type LintProblem,
  waitUntil,
} from '../harness/mod.js';

/** The two gauges the specification names with a `_total` suffix: their one allowed problem. */
const SPEC_GAUGES = ['svc_failed_jobs_total', 'svc_workers_total'];
const allowed = (p: LintProblem) =>
  SPEC_GAUGES.includes(p.metric) &&
  p.problem === 'non-counter metrics should not have "_total" suffix';

let nats: NatsServerProcess;
let device: SimulatedDevice;
const procs: Record<string, ServiceProcess> = {};

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  const env = testEnv(nats.url, {
    LOG_LEVEL: 'INFO',
    JOB_DEDUP_ENABLED: 'false',
    SVC_BUILD_COMMIT: 'abc1234',
  });
  for (const name of ['reaper', 'dispatcher', 'device-actor', 'gateway']) {
    procs[name] = ServiceProcess.start(name, env);
  }
});

after(async () => {
  for (const p of Object.values(procs)) await p.kill('SIGTERM');
  await device?.stop();
  await nats?.stop();
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

async function scrape(url: string): Promise<{ text: string; samples: Sample[] }> {
  const a = await http('GET', url);
  assert.equal(a.status, 200, `${url}: ${a.text}`);
  assert.match(String(a.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  const samples: Sample[] = [];
  for (const line of a.text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { text: a.text, samples };
}

const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);

/** Scrapes until `ready` holds (metrics move asynchronously: events, heartbeats). */
async function scrapeUntil(url: string, ready: (s: Sample[]) => boolean, what: string) {
  let last = '';
  return waitUntil(
    async () => {
      const got = await scrape(url);
      last = got.text;
      return ready(got.samples) && got;
    },
    `${url}: ${what}`,
    { timeoutMs: 20_000, everyMs: 200 },
  ).catch(() => assert.fail(`${url}: ${what} never showed\n${last}`));
}

/** Opens an SSE stream; resolves with the response once headers arrived. */
function openStream(url: string, auth: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { authorization: auth } }, resolve);
    req.on('error', reject);
    req.end();
  });
}

test('when every service runs as its own process, then each serves /metrics that a promtool-style lint passes (only the two SPEC gauges named _total), with runtime metrics, build info, failures by error_code, open SSE streams and sessions per actor host', async () => {
  const gatewayUrl = await procs['gateway']!.httpUrl();
  await waitHealthy(gatewayUrl);
  const urls: Record<string, string> = { gateway: `${gatewayUrl}/metrics` };
  for (const name of ['dispatcher', 'device-actor', 'reaper']) {
    urls[name] = await procs[name]!.metricsUrl();
  }
  const basic = { username: device.username, password: device.password };
  const auth = { basic };
  const submit = async (body: Record<string, unknown>, as = auth) => {
    const a = await http('POST', `${gatewayUrl}/v2/send-command`, {
      ...as,
      body: { host: '127.0.0.1', port: device.port, platform: 'cisco_ios', ...body },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };

  // One job that runs, one that fails to log in.
  const ok = await submit({ commands: ['show version'] });
  assert.equal((await waitForJob(gatewayUrl, ok, auth)).json.status, 'finished');
  const wrong = { basic: { ...basic, password: 'wrong-password-xyz' } };
  const refused = await submit({ commands: ['show clock'] }, wrong);
  assert.equal((await waitForJob(gatewayUrl, refused, wrong)).json.status, 'failed');

  // One that hangs on the device until its read timeout, followed by an SSE stream meanwhile.
  await device.setFaults({ hang: '^show hang$' });
  const hanging = await submit({ commands: ['show hang'], read_timeout: 8 });
  const authHeader = `Basic ${Buffer.from(`${basic.username}:${basic.password}`).toString('base64')}`;
  const stream = await openStream(`${gatewayUrl}/v2/jobs/${hanging}/stream`, authHeader);
  assert.equal(stream.statusCode, 200);
  const streamEnded = new Promise<void>((resolve) => {
    stream.on('data', () => undefined);
    stream.on('end', resolve);
    stream.on('close', resolve);
  });
  await scrapeUntil(
    urls['gateway']!,
    (s) => value(s, 'svc_sse_streams_open') === 1,
    'an open SSE stream',
  );
  await scrapeUntil(
    urls['device-actor']!,
    (s) => value(s, 'svc_actor_sessions_busy') === 1,
    'a busy session on the actor host',
  );
  await streamEnded;
  assert.equal((await waitForJob(gatewayUrl, hanging, auth)).json.status, 'failed');
  await device.setFaults({});

  const gateway = await scrapeUntil(
    urls['gateway']!,
    (s) => value(s, 'svc_sse_streams_open') === 0,
    'the SSE stream closed',
  );
  const actor = await scrapeUntil(
    urls['device-actor']!,
    (s) =>
      value(s, 'svc_job_failures_total', { error_code: 'AUTH_FAILED' }) === 1 &&
      value(s, 'svc_job_failures_total', { error_code: 'READ_TIMEOUT' }) === 1,
    'failures by error_code',
  );
  const dispatcher = await scrape(urls['dispatcher']!);
  const reaper = await scrapeUntil(
    urls['reaper']!,
    (s) => value(s, 'svc_reaper_cycles_total') >= 1,
    'a reaper cycle',
  );
  const all = { gateway, 'device-actor': actor, dispatcher, reaper };

  for (const [name, { text, samples }] of Object.entries(all)) {
    // The lint: nothing beyond the two gauges the specification names.
    const problems = lintExposition(text);
    assert.deepEqual(
      problems.filter((p) => !allowed(p)),
      [],
      `${name}: ${JSON.stringify(problems, null, 1)}`,
    );
    // Default process and Node.js runtime metrics.
    for (const m of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_version_info',
    ]) {
      assert.ok(
        samples.some((s) => s.name === m),
        `${name}: ${m}`,
      );
    }
    // Samples only after a first garbage collection: the family is declared from the start.
    assert.match(text, /# TYPE nodejs_gc_duration_seconds histogram/, name);
    // Build info: version, Node version, commit, component.
    const info = samples.filter((s) => s.name === 'svc_build_info');
    assert.equal(info.length, 1, name);
    assert.deepEqual(info[0]!.labels, {
      version: '0.1.0',
      node_version: process.version,
      commit: 'abc1234',
      component: name,
    });
    assert.equal(info[0]!.value, 1);
  }
  // Only the gateway carries the SPEC gauges, and their HELP says what they are.
  const problems = lintExposition(gateway.text).filter(allowed);
  assert.deepEqual(problems.map((p) => p.metric).sort(), SPEC_GAUGES);
  for (const g of SPEC_GAUGES) {
    assert.match(gateway.text, new RegExp(`# HELP ${g} .*A gauge despite the _total suffix`));
    assert.match(gateway.text, new RegExp(`# TYPE ${g} gauge`));
  }
  // The Grafana dashboard queries only metrics that these services declare.
  const dashboard = JSON.parse(
    await readFile(new URL('../../../deploy/grafana/svc-dashboard.json', import.meta.url), 'utf8'),
  ) as { panels: { targets?: { expr: string }[] }[] };
  const declared = Object.values(all)
    .map((s) => s.text)
    .join('\n');
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  assert.ok(exprs.length > 10);
  for (const expr of exprs) {
    for (const m of expr.matchAll(/\b((?:svc|process|nodejs)_[a-z0-9_]+)\b/g)) {
      const family = m[1]!.replace(/_(bucket|sum|count)$/, '');
      assert.match(declared, new RegExp(`^# TYPE ${family} `, 'm'), `dashboard: ${expr}`);
    }
  }
  // Per service.
  assert.equal(value(dispatcher.samples, 'svc_dispatcher_leading', { context: 'default' }), 1);
  // Every shard of the context has an owner, assigned by this dispatcher (the only one).
  assert.ok(
    value(dispatcher.samples, 'svc_dispatcher_shards_assigned_total', { context: 'default' }) >=
      JOB_SHARDS,
  );
  assert.ok(value(actor.samples, 'svc_actor_session_slots') >= 1);
  assert.equal(value(actor.samples, 'svc_actor_sessions_busy'), 0);
  assert.ok(value(actor.samples, 'svc_actor_jobs_total', { status: 'finished' }) >= 1);
  assert.ok(value(actor.samples, 'svc_actor_jobs_total', { status: 'failed' }) >= 2);
  // No credential ever reaches a label.
  for (const { text } of Object.values(all)) assert.doesNotMatch(text, /wrong-password-xyz/);
});

test('when all services run in one process (npm start), then the gateway serves one registry with the collectors of every service and one set of runtime metrics, lint-clean', async () => {
  // A NATS server of its own: the first test's dispatcher would hold the context lease.
  const own = await NatsServerProcess.start();
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-allinone-metrics-'));
  const svc = await startAll({ env: testEnv(own.url), dataDir, log: silentLogger });
  try {
    const { text, samples } = await scrapeUntil(
      `${svc.httpUrl!}/metrics`,
      (s) => value(s, 'svc_dispatcher_leading', { context: 'default' }) === 1,
      'the dispatcher leading',
    );
    assert.deepEqual(
      lintExposition(text).filter((p) => !allowed(p)),
      [],
      'all-in-one /metrics',
    );
    for (const m of [
      'svc_http_requests_total',
      'svc_sse_streams_open',
      'svc_actor_session_slots',
      'svc_dispatcher_leading',
      'svc_reaper_cycles_total',
      'svc_job_failures_total',
    ]) {
      assert.ok(text.includes(`# TYPE ${m} `), m);
    }
    const info = samples.filter((s) => s.name === 'svc_build_info');
    assert.equal(info.length, 1);
    assert.equal(info[0]!.labels['component'], 'all-in-one');
    assert.equal(samples.filter((s) => s.name === 'process_start_time_seconds').length, 1);
  } finally {
    await svc.stop();
    await own.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('when exposition text breaks the conventions, then the lint reports each problem', () => {
  const bad = [
    '# HELP jobs_done Jobs.',
    '# TYPE jobs_done counter',
    'jobs_done 1',
    '# TYPE open_total gauge',
    'open_total 2',
    '# HELP latency_milliseconds Latency.',
    '# TYPE latency_milliseconds gauge',
    'latency_milliseconds 3',
    '# HELP dup Dup.',
    '# TYPE dup gauge',
    'dup{a="1"} 1',
    'dup{a="1"} 2',
    'orphan 1',
    '# HELP h H.',
    '# TYPE h histogram',
    'h_bucket{le="1"} 1',
    'h_sum 1',
    'h_count 1',
  ].join('\n');
  const found = lintExposition(bad).map((p) => `${p.metric}: ${p.problem}`);
  for (const expected of [
    'jobs_done: counter metrics should have "_total" suffix',
    'open_total: no HELP text',
    'open_total: non-counter metrics should not have "_total" suffix',
    'latency_milliseconds: use base unit "seconds" instead of "milliseconds"',
    'dup: duplicate series dup{a="1"}',
    'orphan: sample without HELP/TYPE of its family',
    'h[]: histogram series lacks its +Inf bucket, _sum or _count',
  ]) {
    assert.ok(found.includes(expected), `${expected} in ${JSON.stringify(found, null, 1)}`);
  }
});
