// Identity and access under attack: ownership bound to the whole Basic credential, keys that
// are what their signed token says, admin scope, brute-force limits, CSRF, audit attribution.
// Real nats-server, real HTTP to a real gateway, SSH device simulator.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import { loadGatewayConfig, startGateway, type RunningGateway } from '@svc/gateway';
import { Buckets, Sealer, decodeJson, encodeJson } from '@svc/proto';
import { AuditLog } from '@svc/telemetry';
import { connectNats } from '@svc/nats';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  NatsServerProcess,
  http,
  silentLogger,
  startInProcessStack,
  testEnv,
  waitForJob,
  waitHealthy,
  type HttpOptions,
  type InProcessStack,
} from '../harness/mod.js';

const ADMIN_SECRET = 'identity-admin-secret-7c1d';
const ENV = {
  SVC_ADMIN_SECRET: ADMIN_SECRET,
  SVC_JWT_SECRET: 'identity-jwt-secret-that-is-long-enough-0123456789',
  SVC_CONTEXTS: 'default,lab',
  AUTH_FAILURE_LIMIT: '10',
};
const admin: HttpOptions = { basic: { username: 'admin', password: ADMIN_SECRET } };

let nats: NatsServerProcess;
let stack: InProcessStack;
let gateway: RunningGateway;
let gatewayNc: NatsConnection;
let device: SimulatedDevice;
let G: string;
/** Audit lines of the gateway under test, parsed. */
const auditLines: Record<string, unknown>[] = [];

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({
    platform: 'cisco_ios',
    hostname: 'ID1',
    enable: 'svc-demo',
    faults: { hang: '^show clock$' },
  });
  stack = await startInProcessStack(nats.url, { env: ENV });
  await waitHealthy(stack.url);
  gatewayNc = await connectNats(nats.url, 'gateway-audited');
  const env = testEnv(nats.url, ENV);
  const audit = new AuditLog('gateway', {
    write(line: string) {
      auditLines.push(JSON.parse(line) as Record<string, unknown>);
    },
  });
  gateway = await startGateway(loadGatewayConfig(env), {
    nc: gatewayNc,
    sealer: Sealer.fromSetting(env['SVC_ENCRYPTION_KEY']!),
    log: silentLogger('gateway'),
    audit,
  });
  G = gateway.httpUrl!;
});

after(async () => {
  await gateway?.stop();
  await gatewayNc?.close();
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

const body = (extra: Record<string, unknown> = {}) => ({
  host: '127.0.0.1',
  port: device.port,
  platform: 'cisco_ios',
  commands: ['show version'],
  ...extra,
});
const basic = (password: string): HttpOptions => ({
  basic: { username: device.username, password },
});

async function createKey(
  role: string,
  extra: Record<string, unknown> = {},
  auth: HttpOptions = admin,
): Promise<{ key_id: string; token: string; expires_at: string; contexts: string[] }> {
  const answer = await http('POST', `${G}/v2/api-keys`, { ...auth, body: { role, ...extra } });
  assert.equal(answer.status, 201, answer.text);
  return answer.json;
}

async function submit(auth: HttpOptions, extra: Record<string, unknown> = {}): Promise<string> {
  const answer = await http('POST', `${G}/v2/send-command`, { ...auth, body: body(extra) });
  assert.equal(answer.status, 202, answer.text);
  return answer.json.job_id as string;
}

/** A request from another loopback source address (brute-force counters are per address). */
function fromSource(
  source: string,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(path, G), { method, headers, localAddress: source }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(method === 'POST' ? '{}' : undefined);
  });
}

test('a second Basic password is a stranger on every job route', async () => {
  const owner = basic(device.password);
  const stranger = basic(`${device.password}-not`);
  const jobId = await submit(owner);
  assert.equal((await waitForJob(G, jobId, owner)).json.status, 'finished');

  // The stored owner id names neither the user nor the password: it is one HMAC-SHA256 digest
  // (43 base64url characters) and nothing else. (A check that the digest does not contain the
  // 3-letter user name failed once by chance: "svc" occurred inside a random digest.)
  const kv = await new Kvm(gatewayNc).open(Buckets.jobs);
  const stored = decodeJson<{ owner: string }>((await kv.get(jobId))!.value);
  assert.match(stored.owner, /^basic:[A-Za-z0-9_-]{43}$/);
  assert.ok(!stored.owner.includes(device.password), stored.owner);

  for (const path of [
    `/v2/jobs/${jobId}`,
    `/v2/send-command/${jobId}`,
    `/v2/jobs/${jobId}/stream`,
    `/v1/send_command/${jobId}`,
  ]) {
    assert.equal((await http('GET', `${G}${path}`, stranger)).status, 403, path);
  }
  assert.equal((await http('GET', `${G}/v2/jobs/${jobId}`, owner)).status, 200);
  const list = await http('GET', `${G}/v2/jobs?per_page=100`, stranger);
  assert.equal(list.status, 200);
  assert.ok(!list.json.jobs.some((j: { job_id: string }) => j.job_id === jobId));
  const ownList = await http('GET', `${G}/v2/jobs?per_page=100`, owner);
  assert.ok(ownList.json.jobs.some((j: { job_id: string }) => j.job_id === jobId));

  // A failed job (wrong device password) is the failing credential's, not the user name's.
  const wrong = basic('wrong-device-password-1');
  const failedId = await submit(wrong);
  assert.equal((await waitForJob(G, failedId, wrong)).json.status, 'failed');
  const other = basic('wrong-device-password-2');
  const failedList = await http('GET', `${G}/v2/jobs/failed`, other);
  assert.equal(failedList.status, 200);
  assert.ok(!failedList.json.jobs.some((j: { job_id: string }) => j.job_id === failedId));
  const ownFailed = await http('GET', `${G}/v2/jobs/failed`, wrong);
  assert.ok(ownFailed.json.jobs.some((j: { job_id: string }) => j.job_id === failedId));
  assert.equal((await http('POST', `${G}/v2/jobs/${failedId}/replay`, other)).status, 403);
  assert.equal((await http('DELETE', `${G}/v2/send-command/${failedId}`, other)).status, 403);
});

test('when BASIC_AUTH_ENABLED=false, then Basic callers get 401 on job routes', async () => {
  const nc = await connectNats(nats.url, 'gateway-nobasic');
  const env = testEnv(nats.url, { ...ENV, BASIC_AUTH_ENABLED: 'false' });
  const g = await startGateway(loadGatewayConfig(env), {
    nc,
    sealer: Sealer.fromSetting(env['SVC_ENCRYPTION_KEY']!),
    log: silentLogger('gateway-nobasic'),
  });
  try {
    const answer = await http('POST', `${g.httpUrl!}/v2/send-command`, {
      ...basic(device.password),
      body: body(),
    });
    assert.equal(answer.status, 401, answer.text);
  } finally {
    await g.stop();
    await nc.close();
  }
});

test("a KV edit of a key's role or contexts changes nothing", async () => {
  const operator = await createKey('operator', { contexts: ['lab'] });
  const kv = await new Kvm(gatewayNc).open(Buckets.apiKeys);
  const entry = (await kv.get(operator.key_id))!;
  const meta = decodeJson<Record<string, unknown>>(entry.value);
  await kv.put(operator.key_id, encodeJson({ ...meta, role: 'admin', contexts: ['*'] }));
  const bearer = { bearer: operator.token };
  const made = await http('POST', `${G}/v2/api-keys`, { ...bearer, body: { role: 'viewer' } });
  assert.equal(made.status, 403, made.text);
  const inDefault = await http('POST', `${G}/v2/send-command`, {
    ...bearer,
    body: body({ username: device.username, password: device.password }),
  });
  assert.equal(inDefault.status, 403, inDefault.text);
  // Rotation would re-sign the entry's scope: it refuses an edited one.
  const rotated = await http('POST', `${G}/v2/api-keys/${operator.key_id}/rotate`, admin);
  assert.equal(rotated.status, 409, rotated.text);
  // A KV edit can still revoke: deleting the entry refuses the token.
  await kv.delete(operator.key_id);
  assert.equal((await http('GET', `${G}/v2/jobs`, bearer)).status, 401);
});

test('keys mint only within their own scope; revoking a key revokes the keys it minted', async () => {
  const labAdmin = await createKey('admin', { contexts: ['lab'], ttl: 3600 });
  const as = { bearer: labAdmin.token };
  const wide = await http('POST', `${G}/v2/api-keys`, { ...as, body: { contexts: ['*'] } });
  assert.equal(wide.status, 403, wide.text);
  const other = await http('POST', `${G}/v2/api-keys`, { ...as, body: { contexts: ['default'] } });
  assert.equal(other.status, 403, other.text);
  const child = await createKey('operator', { ttl: 0 }, as);
  assert.deepEqual(child.contexts, ['lab']);
  assert.ok(Date.parse(child.expires_at) <= Date.parse(labAdmin.expires_at), child.expires_at);
  const grandchild = await createKey(
    'viewer',
    {},
    { bearer: (await createKey('admin', {}, as)).token },
  );
  assert.equal((await http('GET', `${G}/v2/jobs`, { bearer: child.token })).status, 200);

  assert.equal((await http('DELETE', `${G}/v2/api-keys/${labAdmin.key_id}`, admin)).status, 204);
  assert.equal((await http('GET', `${G}/v2/jobs`, { bearer: child.token })).status, 401);
  assert.equal((await http('GET', `${G}/v2/jobs`, { bearer: grandchild.token })).status, 401);
});

test('an admin of lab gets 403 on default jobs; an admin of default may read and cancel them', async () => {
  const operator = await createKey('operator', { contexts: ['default', 'lab'] });
  const creds = { username: device.username, password: device.password };
  const jobId = await submit({ bearer: operator.token }, creds);
  await waitForJob(G, jobId, { bearer: operator.token });
  const labAdmin = { bearer: (await createKey('admin', { contexts: ['lab'] })).token };
  assert.equal((await http('GET', `${G}/v2/jobs/${jobId}`, labAdmin)).status, 403);
  assert.equal((await http('GET', `${G}/v2/jobs/${jobId}/stream`, labAdmin)).status, 403);
  assert.equal((await http('DELETE', `${G}/v2/send-command/${jobId}`, labAdmin)).status, 403);
  const list = await http('GET', `${G}/v2/jobs?per_page=100`, labAdmin);
  assert.ok(!list.json.jobs.some((j: { job_id: string }) => j.job_id === jobId));

  const defaultAdmin = { bearer: (await createKey('admin', { contexts: ['default'] })).token };
  assert.equal((await http('GET', `${G}/v2/jobs/${jobId}`, defaultAdmin)).status, 200);
  const listed = await http('GET', `${G}/v2/jobs?per_page=100`, defaultAdmin);
  assert.ok(listed.json.jobs.some((j: { job_id: string }) => j.job_id === jobId));
  // Replay stays the submitter's, admins included.
  assert.equal(
    (await http('POST', `${G}/v2/jobs/${jobId}/replay`, { ...defaultAdmin, body: creds })).status,
    403,
  );
});

test('text/plain and form bodies get 415, on v2 and v1; nothing is queued', async () => {
  const auth = basic(device.password);
  for (const [path, type] of [
    ['/v2/send-command', 'text/plain'],
    ['/v2/send-command', 'application/x-www-form-urlencoded'],
    ['/v2/send-config', 'multipart/form-data; boundary=x'],
    ['/v1/send_command', 'text/plain'],
  ] as const) {
    const answer = await http('POST', `${G}${path}`, {
      ...auth,
      headers: { 'content-type': type },
      body: JSON.stringify(body()),
    });
    assert.equal(answer.status, 415, `${path} ${type}: ${answer.text}`);
  }
  const ok = await http('POST', `${G}/v2/send-command`, {
    ...auth,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: JSON.stringify(body()),
  });
  assert.equal(ok.status, 202, ok.text);
});

/** A request exactly as given: no body and no Content-Type unless `headers` has one. */
function bare(
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; json: { message?: string } | undefined }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(path, G), { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: { message?: string } | undefined;
        try {
          json = JSON.parse(text) as { message?: string };
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, json });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

test('a POST, PUT or PATCH without Content-Type: application/json gets 415 even without a body; nothing is rotated or replayed', async () => {
  const adminHeader = {
    authorization: 'Basic ' + Buffer.from(`admin:${ADMIN_SECRET}`).toString('base64'),
  };
  const operator = await createKey('operator');
  const failedId = await submit(basic(device.password), {
    commands: ['show clock'],
    read_timeout: 1,
  });
  assert.equal((await waitForJob(G, failedId, basic(device.password))).json.status, 'failed');
  const basicHeader = {
    authorization:
      'Basic ' + Buffer.from(`${device.username}:${device.password}`).toString('base64'),
  };
  for (const [method, path, headers] of [
    ['POST', `/v2/api-keys/${operator.key_id}/rotate`, adminHeader],
    ['POST', `/v2/api-keys`, adminHeader],
    ['POST', `/v2/jobs/${failedId}/replay`, basicHeader],
    ['POST', `/v1/jobs/${failedId}/replay`, basicHeader],
    ['PUT', `/v2/host-keys/default/127.0.0.1/${device.port}`, adminHeader],
  ] as const) {
    for (const extra of [{}, { 'content-type': 'text/plain' }] as Record<string, string>[]) {
      const answer = await bare(method, path, { ...headers, ...extra });
      assert.equal(answer.status, 415, `${method} ${path} ${JSON.stringify(extra)}`);
      assert.match(answer.json?.message ?? '', /application\/json/);
    }
  }
  // Nothing happened: the key still works, the failed job was not replayed.
  assert.equal((await http('GET', `${G}/v2/jobs`, { bearer: operator.token })).status, 200);
  const replayed = () =>
    auditLines.filter((l) => l['event_type'] === 'job.replayed' && l['replay_of'] === failedId);
  assert.equal(replayed().length, 0, 'no replay was queued');
  // With the header and no body, a replay runs.
  const replay = await bare('POST', `/v2/jobs/${failedId}/replay`, {
    ...basicHeader,
    'content-type': 'application/json',
  });
  assert.equal(replay.status, 202, JSON.stringify(replay.json));
  assert.equal(replayed().length, 1);
});

test('a cancel appears in the audit log with the key id, source address, job id and context', async () => {
  const operator = await createKey('operator', { contexts: ['lab'] });
  // No actor serves lab: the job stays queued until cancelled.
  const jobId = await submit(
    { bearer: operator.token },
    { username: device.username, password: device.password, context: 'lab' },
  );
  const cancel = await http('DELETE', `${G}/v2/send-command/${jobId}`, { bearer: operator.token });
  assert.equal(cancel.status, 204, cancel.text);
  const line = auditLines.find((l) => l['event_type'] === 'job.cancelled' && l['job_id'] === jobId);
  assert.ok(line, JSON.stringify(auditLines.slice(-5)));
  assert.equal(line['caller'], `key:${operator.key_id}`);
  assert.equal(line['context'], 'lab');
  assert.equal(line['source_ip'], '127.0.0.1');
  const submitted = auditLines.find(
    (l) => l['event_type'] === 'job.submitted' && l['job_id'] === jobId,
  );
  assert.equal(submitted?.['caller'], `key:${operator.key_id}`);
  const created = auditLines.find(
    (l) => l['event_type'] === 'apikey.created' && l['key_id'] === operator.key_id,
  );
  assert.equal(created?.['caller'], 'admin');
  assert.ok(!JSON.stringify(auditLines).includes(device.password));
  assert.ok(!JSON.stringify(auditLines).includes(ADMIN_SECRET));
});

test('every response carries X-Request-ID', async () => {
  for (const [method, path, auth] of [
    ['GET', '/healthcheck', {}],
    ['GET', '/v2/jobs', {}],
    ['GET', '/v2/jobs/00000000-0000-4000-8000-000000000000', basic(device.password)],
    ['GET', '/no/such/route', {}],
  ] as const) {
    const answer = await http(method, `${G}${path}`, auth);
    assert.match(String(answer.headers['x-request-id']), /^[0-9a-f-]{36}$/, `${method} ${path}`);
  }
});

test('a short SVC_ADMIN_SECRET refuses to start', async () => {
  const nc = await connectNats(nats.url, 'gateway-short');
  const env = testEnv(nats.url, { ...ENV, SVC_ADMIN_SECRET: 'short-secret' });
  try {
    await assert.rejects(
      startGateway(loadGatewayConfig(env), {
        nc,
        sealer: Sealer.fromSetting(env['SVC_ENCRYPTION_KEY']!),
        log: silentLogger('gateway-short'),
      }),
      /SVC_ADMIN_SECRET must be at least 16 characters/,
    );
  } finally {
    await nc.close();
  }
});

/** Starts a gateway with extra settings on the shared NATS; `use` runs while it listens. */
async function withGateway(
  extra: Record<string, string>,
  use: (g: RunningGateway) => Promise<void>,
): Promise<void> {
  const nc = await connectNats(nats.url, 'gateway-extra');
  const env = { ...testEnv(nats.url, ENV), ...extra };
  const g = await startGateway(loadGatewayConfig(env), {
    nc,
    sealer: Sealer.fromSetting(env['SVC_ENCRYPTION_KEY']!),
    log: silentLogger('gateway-extra'),
  });
  try {
    await use(g);
  } finally {
    await g.stop();
    await nc.close();
  }
}

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect({ host, port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/** The certificate the HTTPS listener presents (DER, base64). */
function servedCertificate(url: string): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      { host: u.hostname, port: Number(u.port), rejectUnauthorized: false },
      () => {
        const cert = socket.getPeerCertificate().raw.toString('base64');
        socket.destroy();
        resolve(cert);
      },
    );
    socket.on('error', reject);
  });
}

test('the plain-HTTP listener binds 127.0.0.1 unless SVC_BIND says otherwise', async () => {
  await withGateway({ SVC_BIND: '' }, async (g) => {
    const port = Number(new URL(g.httpUrl!).port);
    assert.equal(await accepts('127.0.0.1', port), true);
    assert.equal(await accepts('127.0.0.2', port), false);
  });
  await withGateway({ SVC_BIND: '0.0.0.0' }, async (g) => {
    assert.equal(await accepts('127.0.0.2', Number(new URL(g.httpUrl!).port)), true);
  });
});

test('the generated certificate and key persist in SVC_DATA_DIR and are reused', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-tls-'));
  try {
    let first = '';
    await withGateway({ SVC_DATA_DIR: dir }, async (g) => {
      first = await servedCertificate(g.httpsUrl);
    });
    assert.equal(((await stat(join(dir, 'tls', 'key.pem'))).mode & 0o077).toString(8), '0');
    await withGateway({ SVC_DATA_DIR: dir }, async (g) => {
      assert.equal(await servedCertificate(g.httpsUrl), first);
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a replay passes the same guards as a submission (MAX_QUEUE_DEPTH)', async () => {
  const wrong = basic('wrong-device-password-replay');
  const owner = basic(device.password);
  const failedId = await submit(wrong);
  assert.equal((await waitForJob(G, failedId, wrong)).json.status, 'failed');
  await withGateway({ MAX_QUEUE_DEPTH: '1' }, async (g) => {
    const url = g.httpUrl!;
    // `show clock` hangs on the simulator: this job holds the only place of the queue.
    const holder = await http('POST', `${url}/v2/send-command`, {
      ...owner,
      body: body({ commands: ['show clock'] }),
    });
    assert.equal(holder.status, 202, holder.text);
    const holderId = holder.json.job_id as string;
    try {
      const full = await http('POST', `${url}/v2/send-command`, {
        ...wrong,
        body: body({ commands: ['show users'] }),
      });
      assert.equal(full.status, 503, full.text);
      const replay = await http('POST', `${url}/v2/jobs/${failedId}/replay`, wrong);
      assert.equal(replay.status, 503, replay.text);
    } finally {
      await http('DELETE', `${url}/v2/send-command/${holderId}`, owner);
    }
  });
});

test('a failed job whose record outlived JOB_TTL_SUCCESS is still read and replayed while the failed registry lists it', async () => {
  const wrong = basic('wrong-device-password-expiry');
  const failedId = await submit(wrong, { commands: ['show inventory'] });
  assert.equal((await waitForJob(G, failedId, wrong)).json.status, 'failed');
  // What the bucket's TTL (JOB_TTL_SUCCESS) does to the record, long before JOB_TTL_FAILED.
  const jobsKv = await new Kvm(gatewayNc).open(Buckets.jobs);
  await jobsKv.purge(failedId);
  const listed = await http('GET', `${G}/v2/jobs/failed`, wrong);
  assert.equal(listed.status, 200, listed.text);
  assert.ok(
    (listed.json.jobs as { job_id: string }[]).some((j) => j.job_id === failedId),
    'the registry still lists the job',
  );
  const read = await http('GET', `${G}/v2/jobs/${failedId}`, wrong);
  assert.equal(read.status, 200, read.text);
  assert.equal(read.json.status, 'failed');
  assert.equal(read.json.error_code, 'AUTH_FAILED');
  const own = await http('POST', `${G}/v2/jobs/${failedId}/replay`, wrong);
  assert.equal(own.status, 202, own.text);
  assert.notEqual(own.json.job_id, failedId);
});

// Runs last: it locks the user name `admin` for the rest of the minute.
test('the 11th wrong admin secret within a minute gets 429; bad Bearer tokens too; audited', async () => {
  const wrongAdmin = {
    authorization: 'Basic ' + Buffer.from('admin:wrong-secret-guess').toString('base64'),
    'content-type': 'application/json',
  };
  for (let i = 1; i <= 10; i++) {
    const answer = await fromSource('127.0.0.2', 'POST', '/v2/api-keys', wrongAdmin);
    assert.equal(answer.status, 401, `attempt ${i}`);
  }
  const eleventh = await fromSource('127.0.0.2', 'POST', '/v2/api-keys', wrongAdmin);
  assert.equal(eleventh.status, 429);
  assert.ok(Number(eleventh.headers['retry-after']) >= 1);
  // The user name is limited too, from any address, and on the other gateway as well.
  const elsewhere = await http('POST', `${stack.url}/v2/api-keys`, {
    ...admin,
    body: { role: 'viewer' },
  });
  assert.equal(elsewhere.status, 429, elsewhere.text);

  const badBearer = { authorization: 'Bearer not.a.token', 'content-type': 'application/json' };
  for (let i = 1; i <= 10; i++) {
    const answer = await fromSource('127.0.0.3', 'GET', '/v2/jobs', badBearer);
    assert.equal(answer.status, 401, `bearer attempt ${i}`);
  }
  assert.equal((await fromSource('127.0.0.3', 'GET', '/v2/jobs', badBearer)).status, 429);

  const failures = auditLines.filter(
    (l) => l['event_type'] === 'auth.failed' && l['source_ip'] === '127.0.0.2',
  );
  assert.ok(failures.length >= 10, String(failures.length));
  assert.ok(!JSON.stringify(failures).includes('wrong-secret-guess'));
});
