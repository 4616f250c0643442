import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { http, waitForJob, deviceStackForFile } from '../harness/mod.js';
import { connect } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';

const lab = deviceStackForFile({ platform: 'cisco_ios', hostname: 'R1', enable: 'svc-demo' });

const body = (extra: Record<string, unknown> = {}) => ({
  host: '127.0.0.1',
  port: lab.device.port,
  platform: 'cisco_ios',
  commands: ['show version', 'show ip interface brief'],
  ...extra,
});

async function jobCount(): Promise<number> {
  const nc = await connect({ servers: lab.nats.url });
  try {
    const kv = await new Kvm(jetstream(nc)).open('svc-jobs');
    return (await kv.status()).values;
  } finally {
    await nc.close();
  }
}

test('when a job is submitted, then 202 carries every enqueue field and polling ends finished with each output', async () => {
  const submitted = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: body(),
  });
  assert.equal(submitted.status, 202, submitted.text);
  const r = submitted.json;
  assert.match(r.job_id, /^[0-9a-f-]{36}$/);
  assert.equal(typeof r.message, 'string');
  assert.ok(Number.isInteger(r.queue_position) && r.queue_position >= 1);
  assert.ok(!Number.isNaN(Date.parse(r.enqueued_at)));
  assert.equal(r.timeout, 120);
  assert.equal(r.deduplicated, false);
  assert.equal(r.idempotent, false);
  assert.equal(submitted.headers['x-request-id'], r.job_id);

  const done = await waitForJob(lab.stack.url, r.job_id, lab.auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.deepEqual(Object.keys(done.json.results), ['show version', 'show ip interface brief']);
  assert.match(done.json.results['show version'], /Cisco IOS/);
  assert.doesNotMatch(done.json.results['show version'], /R1#|--More--/);
  assert.equal(done.json.error, null);
  assert.ok(done.json.started_at && done.json.ended_at);

  const viaJobs = await http('GET', `${lab.stack.url}/v2/jobs/${r.job_id}`, lab.auth);
  assert.equal(viaJobs.status, 200);
  assert.deepEqual(viaJobs.json.results, done.json.results);
});

test('when X-Request-ID is a UUID v4, then it becomes the job id and is echoed', async () => {
  const id = randomUUID();
  const a = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: body({ commands: ['show version'] }),
    headers: { 'X-Request-ID': id },
  });
  assert.equal(a.status, 202);
  assert.equal(a.json.job_id, id);
  assert.equal(a.headers['x-request-id'], id);
  await waitForJob(lab.stack.url, id, lab.auth);
  const bad = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: body(),
    headers: { 'X-Request-ID': 'not-a-uuid' },
  });
  assert.equal(bad.status, 422);
  assert.deepEqual(bad.json.validation_error.json[0].loc, ['header', 'X-Request-ID']);
});

const invalid: [string, unknown, (string | number)[], string][] = [
  ['port as a string', { port: '22' }, ['body', 'port'], 'int_type'],
  ['port 0', { port: 0 }, ['body', 'port'], 'greater_than_equal'],
  ['port 65536', { port: 65536 }, ['body', 'port'], 'less_than_equal'],
  ['port 22.5', { port: 22.5 }, ['body', 'port'], 'int_type'],
  ['host malformed', { host: 'bad host!' }, ['body', 'host'], 'value_error'],
  ['host bad IPv4', { host: '300.1.1.1' }, ['body', 'host'], 'value_error'],
  ['host a number', { host: 10 }, ['body', 'host'], 'string_type'],
  ['host missing', { host: undefined }, ['body', 'host'], 'missing'],
  ['commands empty', { commands: [] }, ['body', 'commands'], 'too_short'],
  ['commands a string', { commands: 'show version' }, ['body', 'commands'], 'list_type'],
  [
    'commands with a number',
    { commands: ['show version', 5] },
    ['body', 'commands', 1],
    'string_type',
  ],
  ['commands missing', { commands: undefined }, ['body', 'commands'], 'missing'],
  ['conn_timeout below 1', { conn_timeout: 0.5 }, ['body', 'conn_timeout'], 'greater_than_equal'],
  ['read_timeout below 1', { read_timeout: 0 }, ['body', 'read_timeout'], 'greater_than_equal'],
  ['read_timeout a string', { read_timeout: '30' }, ['body', 'read_timeout'], 'float_type'],
  [
    '11 tags',
    { tags: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v'])) },
    ['body', 'tags'],
    'too_long',
  ],
  [
    'tag value too long',
    { tags: { site: 'x'.repeat(65) } },
    ['body', 'tags', 'site'],
    'string_pattern_mismatch',
  ],
  [
    'tag key with a space',
    { tags: { 'bad key': 'v' } },
    ['body', 'tags', 'bad key'],
    'extra_forbidden',
  ],
  ['tags a list', { tags: ['a'] }, ['body', 'tags'], 'dict_type'],
  ['unknown platform', { platform: 'cisco_foo' }, ['body', 'platform'], 'value_error'],
  ['platform a number', { platform: 7 }, ['body', 'platform'], 'string_type'],
  ['unknown context', { context: 'mars' }, ['body', 'context'], 'value_error'],
  ['enable a number', { enable: 1 }, ['body', 'enable'], 'string_type'],
];

test('when the body breaks a rule of the request table, then 422 names the field and nothing is queued', async (t) => {
  const before = await jobCount();
  for (const [name, patch, loc, type] of invalid) {
    await t.test(name, async () => {
      const b: Record<string, unknown> = body(patch as Record<string, unknown>);
      for (const [k, v] of Object.entries(patch as Record<string, unknown>))
        if (v === undefined) delete b[k];
      const a = await http('POST', `${lab.stack.url}/v2/send-command`, { ...lab.auth, body: b });
      assert.equal(a.status, 422, a.text);
      assert.equal(typeof a.json.message, 'string');
      const issues = a.json.validation_error.json as {
        loc: unknown[];
        msg: string;
        type: string;
      }[];
      assert.ok(Array.isArray(issues) && issues.length >= 1);
      for (const i of issues) {
        assert.ok(Array.isArray(i.loc) && typeof i.msg === 'string' && typeof i.type === 'string');
      }
      assert.ok(
        issues.some((i) => JSON.stringify(i.loc) === JSON.stringify(loc) && i.type === type),
        `expected ${JSON.stringify(loc)} ${type}, got ${JSON.stringify(issues)}`,
      );
    });
  }
  for (const raw of ['{not json', '', '[]', 'null', '"text"']) {
    const a = await http('POST', `${lab.stack.url}/v2/send-command`, {
      ...lab.auth,
      body: raw,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(a.status, 422, `${raw}: ${a.text}`);
  }
  assert.equal(await jobCount(), before, 'a rejected request queued a job');
});

test('when the deprecated aliases ip and device_type are used, then the job runs', async () => {
  const a = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: {
      ip: '127.0.0.1',
      device_type: 'cisco_ios',
      port: lab.device.port,
      commands: ['show version'],
    },
  });
  assert.equal(a.status, 202, a.text);
  const done = await waitForJob(lab.stack.url, a.json.job_id, lab.auth);
  assert.equal(done.json.status, 'finished');
});

test("when credentials are missing or a job is unknown or someone else's, then 401, 404 and 403", async () => {
  const none = await http('POST', `${lab.stack.url}/v2/send-command`, { body: body() });
  assert.equal(none.status, 401);
  assert.equal(typeof none.json.message, 'string');
  const garbage = await http('GET', `${lab.stack.url}/v2/send-command/${randomUUID()}`, {
    headers: { authorization: 'Basic !!!' },
  });
  assert.equal(garbage.status, 401);

  const unknown = await http('GET', `${lab.stack.url}/v2/send-command/${randomUUID()}`, lab.auth);
  assert.equal(unknown.status, 404);
  assert.equal(typeof unknown.json.message, 'string');

  const mine = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: body({ commands: ['show version'] }),
  });
  assert.equal(mine.status, 202);
  const other = { basic: { username: 'mallory', password: 'x' } };
  for (const path of [`/v2/send-command/${mine.json.job_id}`, `/v2/jobs/${mine.json.job_id}`]) {
    const a = await http('GET', `${lab.stack.url}${path}`, other);
    assert.equal(a.status, 403, path);
    assert.equal(typeof a.json.message, 'string');
    assert.equal(a.json.results, undefined);
  }
  await waitForJob(lab.stack.url, mine.json.job_id, lab.auth);
});

test('when /healthcheck is read, then it returns the full health record', async () => {
  for (const path of ['/healthcheck', '/v2/healthcheck']) {
    const a = await http('GET', `${lab.stack.url}${path}`);
    assert.equal(a.status, 200);
    const h = a.json;
    assert.equal(h.status, 'healthy');
    assert.equal(typeof h.version, 'string');
    assert.ok(Number.isInteger(h.uptime_seconds));
    assert.equal(h.components.redis.status, 'healthy');
    assert.equal(typeof h.components.queue.status, 'string');
    assert.ok(Number.isInteger(h.components.queue.depth));
    assert.equal(h.components.workers.status, 'healthy');
    assert.equal(h.components.workers.count, 1);
    assert.ok(Number.isInteger(h.components.workers.active_jobs));
    assert.ok(Number.isInteger(h.components.failed_jobs));
  }
});

test('when the device rejects the password, then the job fails with AUTH_FAILED and no password in the error', async () => {
  const wrong = { basic: { username: lab.device.username, password: 'wrong-secret-xyz' } };
  const a = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...wrong,
    body: body({ commands: ['show version'] }),
  });
  assert.equal(a.status, 202);
  const done = await waitForJob(lab.stack.url, a.json.job_id, wrong);
  assert.equal(done.json.status, 'failed');
  assert.equal(done.json.error_code, 'AUTH_FAILED');
  assert.equal(done.json.error_retryable, false);
  assert.doesNotMatch(done.text, /wrong-secret-xyz/);
});
