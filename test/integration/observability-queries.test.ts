import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

// Jobs of context `idle` are never run (no actor host serves it): they stay queued.
const ENV = {
  SVC_CONTEXTS: 'default,idle',
  WORKER_CONTEXTS: 'default',
  JOB_DEDUP_ENABLED: 'false',
  RATE_LIMIT_DEVICE_PER_MINUTE: '0',
};

let nats: NatsServerProcess;
let stack: InProcessStack;
let device: SimulatedDevice;
let auth: { basic: { username: string; password: string } };
const other = { basic: { username: 'other-user', password: 'other-pass' } };

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  auth = { basic: { username: device.username, password: device.password } };
  stack = await startInProcessStack(nats.url, { env: ENV });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

const jobBody = (extra: Record<string, unknown> = {}) => ({
  host: '127.0.0.1',
  port: device.port,
  platform: 'cisco_ios',
  commands: ['show version'],
  ...extra,
});

async function submit(who: typeof auth, extra: Record<string, unknown> = {}): Promise<string> {
  const a = await http('POST', `${stack.url}/v2/send-command`, { ...who, body: jobBody(extra) });
  assert.equal(a.status, 202, a.text);
  return a.json.job_id as string;
}

test('when a caller has more jobs than a page, then /v2/jobs pages, filters by status and tag, and counts right', async () => {
  const queued: string[] = [];
  for (let i = 0; i < 23; i++)
    queued.push(await submit(auth, { context: 'idle', tags: { batch: 'q' } }));
  const finished: string[] = [];
  for (let i = 0; i < 3; i++) finished.push(await submit(auth, { tags: { batch: 'f' } }));
  for (const id of finished) await waitForJob(stack.url, id, auth);
  await submit(other, { context: 'idle', tags: { batch: 'q' } });

  const first = await http('GET', `${stack.url}/v2/jobs`, auth);
  assert.equal(first.status, 200, first.text);
  assert.equal(first.json.jobs.length, 20);
  assert.deepEqual(first.json.pagination, { page: 1, per_page: 20, total: 26, pages: 2 });
  for (const j of first.json.jobs) {
    assert.deepEqual(Object.keys(j).sort(), ['created_at', 'ended_at', 'job_id', 'status', 'tags']);
  }
  const second = await http('GET', `${stack.url}/v2/jobs?page=2`, auth);
  assert.equal(second.json.jobs.length, 6);
  const all = [...first.json.jobs, ...second.json.jobs].map((j: { job_id: string }) => j.job_id);
  assert.equal(new Set(all).size, 26);
  assert.deepEqual(new Set(all), new Set([...queued, ...finished]));
  const beyond = await http('GET', `${stack.url}/v2/jobs?page=9`, auth);
  assert.deepEqual(beyond.json.jobs, []);

  const small = await http('GET', `${stack.url}/v2/jobs?per_page=5&page=3`, auth);
  assert.deepEqual(small.json.pagination, { page: 3, per_page: 5, total: 26, pages: 6 });
  assert.equal(small.json.jobs.length, 5);

  const done = await http('GET', `${stack.url}/v2/jobs?status=finished`, auth);
  assert.equal(done.json.pagination.total, 3);
  assert.ok(
    done.json.jobs.every(
      (j: { status: string; ended_at: string | null }) => j.status === 'finished' && j.ended_at,
    ),
  );
  const waiting = await http('GET', `${stack.url}/v2/jobs?status=queued&per_page=100`, auth);
  assert.equal(waiting.json.pagination.total, 23);
  assert.equal(waiting.json.jobs.length, 23);

  const tagged = await http('GET', `${stack.url}/v2/jobs?tag=batch:f`, auth);
  assert.equal(tagged.json.pagination.total, 3);
  assert.deepEqual(tagged.json.jobs[0].tags, { batch: 'f' });
  const both = await http('GET', `${stack.url}/v2/jobs?tag=batch:q&status=finished`, auth);
  assert.equal(both.json.pagination.total, 0);
  assert.equal(both.json.pagination.pages, 0);

  const theirs = await http('GET', `${stack.url}/v2/jobs`, other);
  assert.equal(theirs.json.pagination.total, 1);

  const v1 = await http('GET', `${stack.url}/v1/jobs?per_page=2`, auth);
  assert.equal(v1.status, 200);
  assert.equal(v1.json.pagination.total, 26);
  assert.ok(v1.headers['deprecation'] && v1.headers['sunset']);
});

test('when a list query is bad, then 422 names each query parameter', async () => {
  const cases: [string, string, string][] = [
    ['per_page=0', 'per_page', 'greater_than_equal'],
    ['per_page=101', 'per_page', 'less_than_equal'],
    ['per_page=ten', 'per_page', 'int_parsing'],
    ['page=0', 'page', 'greater_than_equal'],
    ['page=1.5', 'page', 'int_parsing'],
    ['status=done', 'status', 'enum'],
    ['tag=nocolon', 'tag', 'value_error'],
    ['tag=bad key:v', 'tag', 'value_error'],
  ];
  for (const [query, field, type] of cases) {
    const a = await http('GET', `${stack.url}/v2/jobs?${encodeURI(query)}`, auth);
    assert.equal(a.status, 422, `${query}: ${a.text}`);
    const issues = a.json.validation_error.json as { loc: string[]; type: string }[];
    assert.ok(
      issues.some(
        (i) => JSON.stringify(i.loc) === JSON.stringify(['query', field]) && i.type === type,
      ),
      `${query}: ${a.text}`,
    );
  }
  const two = await http('GET', `${stack.url}/v2/jobs?page=x&per_page=0`, auth);
  assert.equal(two.json.validation_error.json.length, 2);
  assert.equal((await http('GET', `${stack.url}/v2/jobs`)).status, 401);
});

test('when a job failed, then /v2/jobs/failed lists it for its owner only, without owner or credentials', async () => {
  const wrong = { basic: { username: device.username, password: 'not-the-password' } };
  const id = await submit(wrong);
  const failed = await waitForJob(stack.url, id, wrong);
  assert.equal(failed.json.status, 'failed');
  const list = await http('GET', `${stack.url}/v2/jobs/failed`, wrong);
  assert.equal(list.status, 200);
  const entry = list.json.jobs.find((j: { job_id: string }) => j.job_id === id);
  assert.ok(entry, list.text);
  assert.equal(list.json.total, list.json.jobs.length);
  assert.deepEqual(Object.keys(entry).sort(), [
    'error',
    'error_code',
    'error_retryable',
    'failed_at',
    'func',
    'host',
    'job_id',
    'platform',
    'port',
  ]);
  assert.equal(entry.error_code, 'AUTH_FAILED');
  assert.equal(entry.func, 'send_command');
  assert.equal(entry.port, device.port);
  assert.doesNotMatch(list.text, /not-the-password|owner|basic:/);
  const theirs = await http('GET', `${stack.url}/v2/jobs/failed`, other);
  assert.ok(!theirs.json.jobs.some((j: { job_id: string }) => j.job_id === id));

  const v1 = await http('GET', `${stack.url}/v1/jobs/failed`, wrong);
  assert.equal(v1.status, 200);
  assert.ok(v1.json.jobs.some((j: { job_id: string }) => j.job_id === id));
  assert.ok(v1.headers['deprecation']);

  // Replay through v1, delegated to the v2 replay route: a new job with the caller's credentials.
  // A Basic caller is its whole credential (docs/security.md): the right password is another
  // caller, so only the failing credential may replay, and the re-run fails the same way.
  const stranger = await http('POST', `${stack.url}/v1/jobs/${id}/replay`, auth);
  assert.equal(stranger.status, 403, stranger.text);
  const replay = await http('POST', `${stack.url}/v1/jobs/${id}/replay`, wrong);
  assert.ok(v1.headers['sunset']);
  assert.equal(replay.status, 202, replay.text);
  assert.notEqual(replay.json.job_id, id);
  assert.ok(replay.headers['deprecation'] && replay.headers['sunset']);
  const rerun = await waitForJob(stack.url, replay.json.job_id, wrong);
  assert.equal(rerun.json.status, 'failed');
  assert.equal(rerun.json.error_code, 'AUTH_FAILED');
});

test('when contexts are listed, then each has its live workers and queue depth, on v1 and v2', async () => {
  await submit(auth, { context: 'idle' });
  for (const path of ['/v2/contexts', '/v1/contexts']) {
    const a = await http('GET', `${stack.url}${path}`, auth);
    assert.equal(a.status, 200, a.text);
    const byName = Object.fromEntries(
      (a.json.contexts as { name: string; workers: number; queue_depth: number }[]).map((c) => [
        c.name,
        c,
      ]),
    );
    assert.deepEqual(Object.keys(byName).sort(), ['default', 'idle']);
    assert.equal(byName['default']!.workers, 1);
    assert.equal(byName['idle']!.workers, 0);
    assert.ok(byName['idle']!.queue_depth >= 1);
    assert.equal(path === '/v1/contexts', Boolean(a.headers['deprecation']));
  }
  assert.equal((await http('GET', `${stack.url}/v2/contexts`)).status, 401);
});

test('when v1 routes are used, then retired fields work, v1 cancel semantics hold and every answer is marked deprecated', async () => {
  const sent = await http('POST', `${stack.url}/v1/send_command`, {
    ...auth,
    body: {
      ip: '127.0.0.1',
      port: device.port,
      device_type: 'cisco_ios',
      commands: ['show version'],
      delay_factor: 2,
    },
  });
  assert.equal(sent.status, 202, sent.text);
  assert.match(String(sent.headers['deprecation']), /^@\d+$/);
  assert.ok(!Number.isNaN(Date.parse(String(sent.headers['sunset']))));
  const id = sent.json.job_id as string;
  await waitForJob(stack.url, id, auth);
  const got = await http('GET', `${stack.url}/v1/send_command/${id}`, auth);
  assert.equal(got.status, 200);
  assert.equal(got.json.status, 'finished');
  assert.ok(got.headers['deprecation']);

  const finishedCancel = await http('DELETE', `${stack.url}/v1/send_command/${id}`, auth);
  assert.equal(finishedCancel.status, 400, finishedCancel.text);
  assert.ok(finishedCancel.headers['deprecation'] && finishedCancel.headers['sunset']);
  const unknown = await http('DELETE', `${stack.url}/v1/send_command/${randomUUID()}`, auth);
  assert.equal(unknown.status, 404);
  assert.ok(unknown.headers['deprecation']);
  const queued = await submit(auth, { context: 'idle' });
  const cancel = await http('DELETE', `${stack.url}/v1/send_command/${queued}`, auth);
  assert.equal(cancel.status, 200, cancel.text);
  assert.equal(cancel.json.job_id, queued);
  const after = await http('GET', `${stack.url}/v2/jobs/${queued}`, auth);
  assert.equal(after.json.status, 'cancelled');

  const bad = await http('POST', `${stack.url}/v1/send_command`, {
    ...auth,
    body: { ip: '127.0.0.1', commands: ['show version'], delay_factor: 'slow' },
  });
  assert.equal(bad.status, 422);
  assert.ok(bad.headers['deprecation']);
  assert.deepEqual(bad.json.validation_error.json[0].loc, ['body', 'delay_factor']);

  const structured = await http('POST', `${stack.url}/v1/send_command_structured`, {
    ...auth,
    body: {
      ip: '127.0.0.1',
      port: device.port,
      device_type: 'cisco_ios',
      commands: ['show version'],
    },
  });
  assert.equal(structured.status, 202, structured.text);
  const sdone = await waitForJob(stack.url, structured.json.job_id, auth);
  assert.equal(sdone.json.status, 'finished');

  const v2 = await http('GET', `${stack.url}/v2/jobs/${id}`, auth);
  assert.equal(v2.headers['deprecation'], undefined);
});

test('when /v2/openapi.json is read without credentials, then it is an OpenAPI 3.1 document of the routes', async () => {
  const a = await http('GET', `${stack.url}/v2/openapi.json`);
  assert.equal(a.status, 200);
  assert.equal(a.json.openapi, '3.1.0');
  for (const p of [
    '/v2/send-command',
    '/v2/jobs',
    '/v2/jobs/failed',
    '/v2/jobs/{job_id}/stream',
    '/v1/send_command',
    '/metrics',
  ]) {
    assert.ok(a.json.paths[p], p);
  }
  assert.ok(a.json.components.schemas.JobSummary);
  assert.equal(a.json.paths['/v1/jobs'].get.deprecated, true);
  assert.doesNotMatch(a.text, /"\$id"/);
});
