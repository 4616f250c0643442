import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import { loadGatewayConfig, startGateway } from '@svc/gateway';
import { Sealer } from '@svc/proto';
import { connectNats } from '@svc/nats';
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

let nats: NatsServerProcess;
let stack: InProcessStack;
let device: SimulatedDevice;
let auth: { basic: { username: string; password: string } };

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  auth = { basic: { username: device.username, password: device.password } };
  stack = await startInProcessStack(nats.url, { env: { JOB_DEDUP_ENABLED: 'false' } });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

/** The SPEC's metrics: name → [type, labels]. */
const SPEC_METRICS: Record<string, [string, string[]]> = {
  svc_http_requests_total: ['counter', ['method', 'endpoint', 'status']],
  svc_http_request_duration_seconds: ['histogram', ['method', 'endpoint']],
  svc_queue_depth: ['gauge', []],
  svc_queue_jobs_total: ['counter', ['status']],
  svc_queue_processing_time_seconds: ['histogram', []],
  svc_workers_active: ['gauge', []],
  svc_workers_busy: ['gauge', []],
  svc_workers_total: ['gauge', []],
  svc_jobs_duration_seconds: ['histogram', ['platform']],
  svc_jobs_total: ['counter', ['platform', 'status']],
  svc_failed_jobs_total: ['gauge', []],
  svc_connection_pool_size: ['gauge', []],
  svc_connection_pool_hits_total: ['counter', []],
  svc_connection_pool_misses_total: ['counter', []],
};

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parse(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (t) types.set(t[1]!, t[2]!);
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `unparsable line ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { types, samples };
}

const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);

test('when jobs have run, then /metrics (no auth) has every SPEC metric with its type and labels, and values moved', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const a = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: {
        host: '127.0.0.1',
        port: device.port,
        platform: 'cisco_ios',
        commands: ['show version'],
      },
    });
    assert.equal(a.status, 202);
    ids.push(a.json.job_id as string);
    await waitForJob(stack.url, a.json.job_id as string, auth);
  }
  const wrong = { basic: { username: device.username, password: 'wrong-password-xyz' } };
  const f = await http('POST', `${stack.url}/v2/send-command`, {
    ...wrong,
    body: { host: '127.0.0.1', port: device.port, platform: 'cisco_ios', commands: ['show clock'] },
  });
  await waitForJob(stack.url, f.json.job_id as string, wrong);
  await http('GET', `${stack.url}/v2/send-command/${ids[0]!}`, auth);

  // Heartbeats (0.5 s) carry the pool counters; the job counts catch up at each scrape.
  let parsed = parse('');
  let text = '';
  await waitUntil(
    async () => {
      const a = await http('GET', `${stack.url}/metrics`);
      assert.equal(a.status, 200);
      assert.match(String(a.headers['content-type']), /^text\/plain/);
      text = a.text;
      parsed = parse(text);
      const s = parsed.samples;
      return (
        value(s, 'svc_jobs_total', { platform: 'cisco_ios', status: 'finished' }) >= 3 &&
        value(s, 'svc_jobs_total', { status: 'failed' }) >= 1 &&
        value(s, 'svc_connection_pool_hits_total') + value(s, 'svc_connection_pool_misses_total') >=
          3
      );
    },
    'the job and pool counters',
    { timeoutMs: 15_000, everyMs: 250 },
  ).catch((err: unknown) => {
    // Past the deadline the assertions below name what is missing.
    if (!(err instanceof Error && err.message.startsWith('timed out waiting'))) throw err;
  });
  const { types, samples } = parsed;
  for (const [name, [type, labels]] of Object.entries(SPEC_METRICS)) {
    assert.equal(types.get(name), type, `${name} type`);
    const own = samples.filter((s) => s.name === name || s.name.startsWith(`${name}_`));
    assert.ok(own.length > 0, `${name} has samples`);
    for (const s of own) {
      const keys = Object.keys(s.labels).filter((k) => k !== 'le');
      assert.deepEqual(
        keys.sort(),
        [...labels].sort(),
        `${name} labels ${JSON.stringify(s.labels)}`,
      );
    }
  }
  assert.ok(
    value(samples, 'svc_http_requests_total', {
      method: 'POST',
      endpoint: '/v2/send-command',
      status: '202',
    }) >= 4,
  );
  assert.ok(
    value(samples, 'svc_http_requests_total', {
      method: 'GET',
      endpoint: '/v2/send-command/:job_id',
      status: '200',
    }) >= 1,
  );
  assert.ok(
    value(samples, 'svc_http_request_duration_seconds_count', {
      method: 'POST',
      endpoint: '/v2/send-command',
    }) >= 4,
  );
  assert.ok(value(samples, 'svc_queue_jobs_total', { status: 'queued' }) >= 4);
  assert.ok(value(samples, 'svc_queue_jobs_total', { status: 'started' }) >= 4);
  assert.ok(value(samples, 'svc_queue_processing_time_seconds_count') >= 4);
  assert.ok(value(samples, 'svc_jobs_duration_seconds_count', { platform: 'cisco_ios' }) >= 4);
  assert.ok(value(samples, 'svc_jobs_total', { platform: 'cisco_ios', status: 'finished' }) >= 3);
  assert.ok(value(samples, 'svc_jobs_total', { platform: 'cisco_ios', status: 'failed' }) >= 1);
  assert.ok(value(samples, 'svc_failed_jobs_total') >= 1);
  assert.equal(value(samples, 'svc_workers_active'), 1);
  assert.ok(value(samples, 'svc_workers_total') >= 1);
  assert.ok(
    value(samples, 'svc_connection_pool_hits_total') +
      value(samples, 'svc_connection_pool_misses_total') >=
      3,
  );
  assert.ok(value(samples, 'svc_connection_pool_hits_total') >= 1, 'warm sessions were reused');
  // Never a raw URL, a job id or a credential in a label.
  assert.doesNotMatch(text, new RegExp(ids[0]!));
  assert.doesNotMatch(text, /wrong-password-xyz|authorization/i);
});

test('when NATS is unreachable, then /healthcheck answers 503 degraded', async () => {
  const own = await NatsServerProcess.start();
  const nc = await connectNats(own.url, 'gateway-health');
  const gateway = await startGateway(loadGatewayConfig(testEnv(own.url)), {
    nc,
    sealer: Sealer.fromSetting(TEST_ENCRYPTION_KEY),
    log: silentLogger('gateway'),
  });
  try {
    const up = await http('GET', `${gateway.httpUrl!}/healthcheck`);
    assert.equal(up.status, 200);
    assert.equal(up.json.status, 'no_workers');
    await own.stop();
    const down = await http('GET', `${gateway.httpUrl!}/healthcheck`);
    assert.equal(down.status, 503, down.text);
    assert.equal(down.json.status, 'degraded');
    assert.equal(down.json.components.redis.status, 'unhealthy');
    const alias = await http('GET', `${gateway.httpUrl!}/v2/healthcheck`);
    assert.equal(alias.status, 503);
    // Metrics still answer (last known cluster values) while the store is away.
    const metrics = await http('GET', `${gateway.httpUrl!}/metrics`);
    assert.equal(metrics.status, 200);
  } finally {
    await gateway.stop();
    await nc.close().catch(() => undefined);
    await own.stop();
  }
});
