// Access and trust: API keys (create, list, revoke, rotate, expiry, forgeries), roles on every
// route, ownership of every job route, revocation seen at once by a second gateway instance,
// replay, and TLS versions. Real nats-server, real HTTP, SSH device simulator.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tlsConnect } from 'node:tls';
import { SignJWT, UnsecuredJWT, decodeJwt } from 'jose';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import { loadGatewayConfig, startGateway, type RunningGateway } from '@svc/gateway';
import { Sealer } from '@svc/proto';
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
  type HttpAnswer,
  type HttpOptions,
  type InProcessStack,
  waitUntil,
} from '../harness/mod.js';

const ADMIN_SECRET = 'roles-admin-secret-0b5e';
const JWT_SECRET = 'roles-jwt-secret-that-is-long-enough-0123456789';
const ENV = {
  SVC_ADMIN_SECRET: ADMIN_SECRET,
  SVC_JWT_SECRET: JWT_SECRET,
  SVC_CONTEXTS: 'default,lab',
  RATE_LIMIT_DEVICE_PER_MINUTE: '0',
};
const admin: HttpOptions = { basic: { username: 'admin', password: ADMIN_SECRET } };

let nats: NatsServerProcess;
let stack: InProcessStack;
/** A second gateway on the same NATS, started without the admin secret. */
let second: RunningGateway;
let secondNc: NatsConnection;
let device: SimulatedDevice;
let A: string;
let B: string;

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', hostname: 'SEC1', enable: 'svc-demo' });
  stack = await startInProcessStack(nats.url, { env: ENV });
  await waitHealthy(stack.url);
  secondNc = await connectNats(nats.url, 'gateway-b');
  const envB = testEnv(nats.url, { ...ENV, SVC_ADMIN_SECRET: '' });
  second = await startGateway(loadGatewayConfig(envB), {
    nc: secondNc,
    sealer: Sealer.fromSetting(envB['SVC_ENCRYPTION_KEY']!),
    log: silentLogger('gateway-b'),
  });
  A = stack.url;
  B = second.httpUrl!;
});

after(async () => {
  await second?.stop();
  await secondNc?.close();
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

const deviceCreds = () => ({ username: device.username, password: device.password });
const body = (extra: Record<string, unknown> = {}) => ({
  host: '127.0.0.1',
  port: device.port,
  platform: 'cisco_ios',
  commands: ['show version'],
  ...extra,
});

async function createKey(
  role: string,
  extra: Record<string, unknown> = {},
  url = A,
  auth: HttpOptions = admin,
): Promise<{ key_id: string; token: string; [k: string]: unknown }> {
  const a = await http('POST', `${url}/v2/api-keys`, { ...auth, body: { role, ...extra } });
  assert.equal(a.status, 201, a.text);
  return a.json;
}

test('when SVC_ADMIN_SECRET is unset and no admin key exists, then key management is disabled (403)', async () => {
  const a = await http('GET', `${B}/v2/api-keys`, admin);
  assert.equal(a.status, 403, a.text);
  assert.match(a.json.message, /disabled/);
  const c = await http('POST', `${B}/v2/api-keys`, { ...admin, body: {} });
  assert.equal(c.status, 403);
});

test('when keys are managed, then create/list/revoke/rotate follow the spec and the token is shown once', async () => {
  const none = await http('GET', `${A}/v2/api-keys`);
  assert.equal(none.status, 401);
  const wrong = await http('GET', `${A}/v2/api-keys`, {
    basic: { username: 'admin', password: 'nope' },
  });
  assert.equal(wrong.status, 401);
  const notAdminUser = await http('GET', `${A}/v2/api-keys`, {
    basic: { username: 'root', password: ADMIN_SECRET },
  });
  assert.equal(notAdminUser.status, 401);

  const created = await http('POST', `${A}/v2/api-keys`, { ...admin, body: '' });
  assert.equal(created.status, 201, created.text);
  const k = created.json;
  assert.match(k.key_id, /^key_[0-9a-f]{24}$/);
  assert.equal(k.role, 'admin', 'role defaults to admin');
  assert.deepEqual(k.contexts, ['*']);
  const ttl = (Date.parse(k.expires_at) - Date.now()) / 1000;
  assert.ok(Math.abs(ttl - 7_776_000) < 30, `default ttl 90 days, got ${ttl}`);
  const claims = decodeJwt(k.token);
  assert.equal(claims.sub, k.key_id);
  assert.equal(claims['role'], 'admin');
  assert.deepEqual(claims['ctx'], ['*']);
  assert.ok(
    typeof claims.jti === 'string' &&
      typeof claims.iat === 'number' &&
      typeof claims.exp === 'number',
  );

  const forever = await createKey('viewer', { ttl: 0, contexts: ['lab'], created_by: 'alice' });
  assert.equal(forever.expires_at, '9999-12-31T23:59:59.000Z');
  assert.equal(decodeJwt(forever.token).exp, undefined, 'no exp claim when ttl is 0');

  const list = await http('GET', `${A}/v2/api-keys`, admin);
  assert.equal(list.status, 200);
  const item = list.json.keys.find((x: { key_id: string }) => x.key_id === forever.key_id);
  assert.deepEqual(Object.keys(item).sort(), [
    'contexts',
    'created_at',
    'created_by',
    'expires_at',
    'key_id',
    'role',
  ]);
  assert.equal(item.created_by, 'alice');
  assert.doesNotMatch(list.text, /eyJ/, 'no token in the list');

  for (const bad of [
    { role: 'root' },
    { ttl: -1 },
    { ttl: '60' },
    { contexts: ['mars'] },
    { contexts: [] },
    { extra: 1 },
  ]) {
    const a = await http('POST', `${A}/v2/api-keys`, { ...admin, body: bad });
    assert.equal(a.status, 422, `${JSON.stringify(bad)}: ${a.text}`);
  }
  assert.equal(
    (await http('DELETE', `${A}/v2/api-keys/key_000000000000000000000000`, admin)).status,
    404,
  );
  assert.equal((await http('DELETE', `${A}/v2/api-keys/..%2F..`, admin)).status, 404);
  assert.equal((await http('POST', `${A}/v2/api-keys/nope/rotate`, admin)).status, 404);

  // An admin key manages keys on the instance without the admin secret, once it knows the key.
  await eventually(
    async () => (await http('GET', `${B}/v2/api-keys`, { bearer: k.token })).status === 200,
  );
  const byKey = await createKey('operator', {}, B, { bearer: k.token });
  assert.equal(byKey.created_by, undefined, 'create answer has no created_by');
  const listed = await http('GET', `${B}/v2/api-keys`, { bearer: k.token });
  assert.equal(
    listed.json.keys.find((x: { key_id: string }) => x.key_id === byKey.key_id).created_by,
    `key:${k.key_id}`,
  );
  // Basic admin still fails on B: its secret is unset.
  assert.equal((await http('GET', `${B}/v2/api-keys`, admin)).status, 401);
});

test('when a key is revoked or rotated on one instance, then the other refuses the old token at once', async () => {
  const op = await createKey('operator');
  assert.equal((await http('GET', `${B}/v2/jobs`, { bearer: op.token })).status, 200);
  const rotated = await http('POST', `${A}/v2/api-keys/${op.key_id}/rotate`, admin);
  assert.equal(rotated.status, 200, rotated.text);
  assert.equal(rotated.json.key_id, op.key_id);
  assert.notEqual(rotated.json.token, op.token);
  assert.equal(
    (await http('GET', `${B}/v2/jobs`, { bearer: op.token })).status,
    401,
    'old token refused at once',
  );
  assert.equal((await http('GET', `${B}/v2/jobs`, { bearer: rotated.json.token })).status, 200);

  const revoked = await http('DELETE', `${A}/v2/api-keys/${op.key_id}`, admin);
  assert.equal(revoked.status, 204);
  const after = await http('GET', `${B}/v2/jobs`, { bearer: rotated.json.token });
  assert.equal(after.status, 401, 'revoked token refused at once on the second instance');
  assert.equal((await http('GET', `${A}/v2/jobs`, { bearer: rotated.json.token })).status, 401);
  assert.equal((await http('POST', `${A}/v2/api-keys/${op.key_id}/rotate`, admin)).status, 404);
  assert.equal((await http('DELETE', `${A}/v2/api-keys/${op.key_id}`, admin)).status, 404);
  const list = await http('GET', `${A}/v2/api-keys`, admin);
  assert.ok(!list.json.keys.some((x: { key_id: string }) => x.key_id === op.key_id));
});

test('when a token is expired, forged, unsigned or tampered, then every instance answers 401', async () => {
  const short = await createKey('operator', { ttl: 3 });
  const born = Date.now();
  assert.equal((await http('GET', `${A}/v2/jobs`, { bearer: short.token })).status, 200);
  await new Promise((r) => setTimeout(r, Math.max(0, born + 3300 - Date.now())));
  for (const url of [A, B]) {
    assert.equal(
      (await http('GET', `${url}/v2/jobs`, { bearer: short.token })).status,
      401,
      'expired',
    );
  }
  const live = await createKey('viewer');
  const claims = decodeJwt(live.token);
  const forged = await new SignJWT({ role: 'admin', ctx: ['*'] })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(live.key_id)
    .setJti(String(claims.jti))
    .setIssuedAt()
    .sign(new TextEncoder().encode('another-secret-another-secret-another-secret'));
  const unsigned = new UnsecuredJWT({ role: 'admin', ctx: ['*'] })
    .setSubject(live.key_id)
    .setJti(String(claims.jti))
    .encode();
  const [h, , s] = live.token.split('.');
  const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, role: 'admin' })).toString('base64url')}.${s}`;
  const hs512 = await new SignJWT({ role: 'admin', ctx: ['*'] })
    .setProtectedHeader({ alg: 'HS512' })
    .setSubject(live.key_id)
    .setJti(String(claims.jti))
    .sign(new TextEncoder().encode(JWT_SECRET.padEnd(64, 'x')));
  for (const [name, token] of [
    ['forged', forged],
    ['alg none', unsigned],
    ['tampered', tampered],
    ['other alg', hs512],
    ['garbage', 'not.a.jwt'],
    ['empty parts', '..'],
  ] as const) {
    for (const url of [A, B]) {
      const a = await http('GET', `${url}/v2/jobs`, { bearer: token });
      assert.equal(a.status, 401, `${name}: ${a.text}`);
      const k = await http('GET', `${url}/v2/api-keys`, { bearer: token });
      assert.equal(k.status, 401, `${name} on key routes`);
    }
  }
});

interface Route {
  name: string;
  method: string;
  path: (jobId: string) => string;
  /** Minimum role needed; 'owner' routes also need ownership. */
  role: 'viewer' | 'operator' | 'admin';
  owner: boolean;
  body?: (who: Who) => unknown;
}
type Who = { kind: 'basic' | 'key' };

const credsFor = (who: Who) => (who.kind === 'key' ? deviceCreds() : {});

/** Every job route; `owner` ones must answer 403 to anyone but the submitter (or an admin key). */
const JOB_ROUTES: Route[] = [
  {
    name: 'GET send-command',
    method: 'GET',
    path: (id) => `/v2/send-command/${id}`,
    role: 'viewer',
    owner: true,
  },
  {
    name: 'GET structured',
    method: 'GET',
    path: (id) => `/v2/send-command-structured/${id}`,
    role: 'viewer',
    owner: true,
  },
  {
    name: 'GET jobs/{id}',
    method: 'GET',
    path: (id) => `/v2/jobs/${id}`,
    role: 'viewer',
    owner: true,
  },
  {
    name: 'SSE jobs stream',
    method: 'GET',
    path: (id) => `/v2/jobs/${id}/stream`,
    role: 'viewer',
    owner: true,
  },
  {
    name: 'SSE send-command stream',
    method: 'GET',
    path: (id) => `/v2/send-command/${id}/stream`,
    role: 'viewer',
    owner: true,
  },
  {
    name: 'DELETE send-command',
    method: 'DELETE',
    path: (id) => `/v2/send-command/${id}`,
    role: 'operator',
    owner: true,
  },
  {
    name: 'replay',
    method: 'POST',
    path: (id) => `/v2/jobs/${id}/replay`,
    role: 'operator',
    owner: true,
    body: credsFor,
  },
  {
    name: 'v1 GET send_command',
    method: 'GET',
    path: (id) => `/v1/send_command/${id}`,
    role: 'viewer',
    owner: true,
  },
  {
    name: 'v1 GET structured',
    method: 'GET',
    path: (id) => `/v1/send_command_structured/${id}`,
    role: 'viewer',
    owner: true,
  },
  {
    name: 'v1 DELETE send_command',
    method: 'DELETE',
    path: (id) => `/v1/send_command/${id}`,
    role: 'operator',
    owner: true,
  },
  {
    name: 'v1 replay',
    method: 'POST',
    path: (id) => `/v1/jobs/${id}/replay`,
    role: 'operator',
    owner: true,
    body: credsFor,
  },
];

const OTHER_ROUTES: Route[] = [
  { name: 'GET jobs', method: 'GET', path: () => '/v2/jobs', role: 'viewer', owner: false },
  {
    name: 'GET jobs/failed',
    method: 'GET',
    path: () => '/v2/jobs/failed',
    role: 'viewer',
    owner: false,
  },
  { name: 'v1 contexts', method: 'GET', path: () => '/v1/contexts', role: 'viewer', owner: false },
  { name: 'v1 jobs', method: 'GET', path: () => '/v1/jobs', role: 'viewer', owner: false },
  {
    name: 'v1 jobs/failed',
    method: 'GET',
    path: () => '/v1/jobs/failed',
    role: 'viewer',
    owner: false,
  },
  {
    name: 'POST send-command',
    method: 'POST',
    path: () => '/v2/send-command',
    role: 'operator',
    owner: false,
    body: (w) => body(credsFor(w)),
  },
  {
    name: 'POST send-config',
    method: 'POST',
    path: () => '/v2/send-config',
    role: 'operator',
    owner: false,
    body: (w) => body({ ...credsFor(w), commands: ['interface Gi0/1', 'description x'] }),
  },
  {
    name: 'POST structured',
    method: 'POST',
    path: () => '/v2/send-command-structured',
    role: 'operator',
    owner: false,
    body: (w) => body(credsFor(w)),
  },
  {
    name: 'v1 send_command',
    method: 'POST',
    path: () => '/v1/send_command',
    role: 'operator',
    owner: false,
    body: (w) => body(credsFor(w)),
  },
  { name: 'GET api-keys', method: 'GET', path: () => '/v2/api-keys', role: 'admin', owner: false },
  {
    name: 'POST api-keys',
    method: 'POST',
    path: () => '/v2/api-keys',
    role: 'admin',
    owner: false,
    body: () => ({ role: 'viewer', ttl: 60 }),
  },
];

/** Routes another engineer is adding: reported (not failed) while they answer "no route". */
const missing = new Set<string>();

async function call(
  route: Route,
  jobId: string,
  auth: HttpOptions,
  who: Who,
  url = A,
): Promise<HttpAnswer> {
  const path = route.path(jobId);
  const options: HttpOptions = { ...auth };
  if (route.body) options.body = route.body(who);
  if (route.path('x').includes('stream')) return sseStatus(`${url}${path}`, auth);
  const a = await http(route.method, `${url}${path}`, options);
  if (a.status === 404 && /^no route/.test(String(a.json?.message))) missing.add(route.name);
  return a;
}

/** Status of an SSE request; the stream is closed as soon as the head arrives. */
async function sseStatus(url: string, auth: HttpOptions): Promise<HttpAnswer> {
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (auth.bearer) headers['authorization'] = `Bearer ${auth.bearer}`;
  if (auth.basic) {
    headers['authorization'] =
      'Basic ' + Buffer.from(`${auth.basic.username}:${auth.basic.password}`).toString('base64');
  }
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  const status = res.status;
  let text = '';
  if (!res.headers.get('content-type')?.includes('text/event-stream')) text = await res.text();
  controller.abort();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (
    status === 404 &&
    /^no route/.test(String((json as { message?: string } | undefined)?.message))
  ) {
    missing.add(url.includes('/send-command/') ? 'SSE send-command stream' : 'SSE jobs stream');
  }
  return { status, headers: {}, text, json };
}

test('when each role calls each route, then the role table and ownership hold (matrix)', async (t) => {
  const keys = {
    viewer: await createKey('viewer'),
    operator: await createKey('operator'),
    admin: await createKey('admin'),
  };
  const otherOperator = await createKey('operator');
  const basicOwner: HttpOptions = { basic: deviceCreds() };
  const basicStranger: HttpOptions = { basic: { username: 'mallory', password: device.password } };

  // Jobs owned by the operator key and by the Basic caller, both failed (bad port: fast failure),
  // so that replay is allowed for their owners.
  const failJob = async (auth: HttpOptions, who: Who) => {
    const a = await http('POST', `${A}/v2/send-command`, {
      ...auth,
      body: body({
        ...credsFor(who),
        port: 1,
        conn_timeout: 1,
        commands: [`show clock ${Math.random()}`],
      }),
    });
    assert.equal(a.status, 202, a.text);
    const done = await waitForJob(A, a.json.job_id, auth);
    assert.equal(done.json.status, 'failed', done.text);
    return a.json.job_id as string;
  };
  const keyJob = await failJob({ bearer: keys.operator.token }, { kind: 'key' });
  const basicJob = await failJob(basicOwner, { kind: 'basic' });

  const callers: [string, HttpOptions, Who, 'viewer' | 'operator' | 'admin', string | null][] = [
    ['viewer key', { bearer: keys.viewer.token }, { kind: 'key' }, 'viewer', null],
    ['operator key (owner)', { bearer: keys.operator.token }, { kind: 'key' }, 'operator', keyJob],
    ['other operator key', { bearer: otherOperator.token }, { kind: 'key' }, 'operator', null],
    ['admin key', { bearer: keys.admin.token }, { kind: 'key' }, 'admin', null],
    ['basic owner', basicOwner, { kind: 'basic' }, 'operator', basicJob],
    ['basic stranger', basicStranger, { kind: 'basic' }, 'operator', null],
  ];
  const rank = { viewer: 0, operator: 1, admin: 2 };
  for (const [who, auth, kind, role, own] of callers) {
    await t.test(who, async () => {
      for (const route of JOB_ROUTES) {
        for (const jobId of [keyJob, basicJob]) {
          // Replay creates jobs: only the decisive cases are called.
          const isOwner = jobId === own;
          const roleOk = rank[role] >= rank[route.role];
          const adminSees =
            kind.kind === 'key' && role === 'admin' && route.name.indexOf('replay') < 0;
          const expectAllowed = roleOk && (isOwner || adminSees);
          const a = await call(route, jobId, auth, kind);
          if (missing.has(route.name)) continue;
          if (!roleOk) {
            assert.equal(a.status, 403, `${who} ${route.name}: ${a.text}`);
          } else if (!expectAllowed) {
            assert.equal(
              a.status,
              403,
              `${who} ${route.name} on a job of another caller: ${a.text}`,
            );
          } else {
            assert.ok(
              [200, 202, 204, 400, 409].includes(a.status), // 400: v1 cancel of an ended job
              `${who} ${route.name} on its own job: ${a.status} ${a.text}`,
            );
          }
        }
      }
      for (const route of OTHER_ROUTES) {
        const a = await call(route, '', auth, kind);
        if (missing.has(route.name)) continue;
        const isKeyRoute = route.path('').startsWith('/v2/api-keys');
        const roleOk = rank[role] >= rank[route.role] && (!isKeyRoute || kind.kind === 'key');
        if (roleOk) assert.ok(a.status < 300, `${who} ${route.name}: ${a.status} ${a.text}`);
        else
          assert.ok([401, 403].includes(a.status), `${who} ${route.name}: ${a.status} ${a.text}`);
        if (
          route.name === 'GET jobs' &&
          a.status === 200 &&
          !(kind.kind === 'key' && role === 'admin')
        ) {
          const ids = (a.json.jobs as { job_id: string }[]).map((j) => j.job_id);
          for (const id of [keyJob, basicJob])
            if (id !== own) assert.ok(!ids.includes(id), `${who} sees ${id}`);
        }
        if (
          route.name === 'GET jobs/failed' &&
          a.status === 200 &&
          !(kind.kind === 'key' && role === 'admin')
        ) {
          const ids = (a.json.jobs as { job_id: string }[]).map((j) => j.job_id);
          for (const id of [keyJob, basicJob])
            if (id !== own) assert.ok(!ids.includes(id), `${who} sees failed ${id}`);
        }
      }
    });
  }
  // No authentication at all: 401 everywhere (the stream routes included).
  for (const route of [...JOB_ROUTES, ...OTHER_ROUTES]) {
    const a = await call(route, keyJob, {}, { kind: 'basic' });
    if (missing.has(route.name)) continue;
    assert.equal(a.status, 401, `anonymous ${route.name}: ${a.text}`);
  }
  if (missing.size > 0) t.diagnostic(`routes not registered yet: ${[...missing].join(', ')}`);
});

test('when a key is limited to contexts, then other contexts are 403 and unknown ones 422', async () => {
  const lab = await createKey('operator', { contexts: ['lab'] });
  const denied = await http('POST', `${A}/v2/send-command`, {
    bearer: lab.token,
    body: body({ ...deviceCreds() }),
  });
  assert.equal(denied.status, 403, denied.text);
  const unknown = await http('POST', `${A}/v2/send-command`, {
    bearer: lab.token,
    body: body({ ...deviceCreds(), context: 'mars' }),
  });
  assert.equal(unknown.status, 422);
  assert.deepEqual(unknown.json.validation_error.json[0].loc, ['body', 'context']);
  const noCreds = await http('POST', `${A}/v2/send-command`, {
    bearer: lab.token,
    body: body({ context: 'lab' }),
  });
  assert.equal(noCreds.status, 422, 'Bearer callers must give device credentials');
  const locs = noCreds.json.validation_error.json.map((i: { loc: string[] }) => i.loc.join('.'));
  assert.ok(locs.includes('body.username') && locs.includes('body.password'), locs.join());
});

test('when a failed job is replayed, then only its submitter gets a new job run with current credentials', async () => {
  const op = await createKey('operator');
  const auth = { bearer: op.token };
  const failed = await http('POST', `${A}/v2/send-command`, {
    ...auth,
    body: body({ username: device.username, password: 'wrong-password-1', enable: device.enable }),
  });
  assert.equal(failed.status, 202);
  const done = await waitForJob(A, failed.json.job_id, auth);
  assert.equal(done.json.status, 'failed');
  assert.equal(done.json.error_code, 'AUTH_FAILED');

  const noCreds = await http('POST', `${A}/v2/jobs/${failed.json.job_id}/replay`, auth);
  assert.equal(noCreds.status, 422);
  const stranger = await createKey('operator');
  const other = await http('POST', `${A}/v2/jobs/${failed.json.job_id}/replay`, {
    bearer: stranger.token,
    body: deviceCreds(),
  });
  assert.equal(other.status, 403);
  const adminKey = await createKey('admin');
  const byAdmin = await http('POST', `${A}/v2/jobs/${failed.json.job_id}/replay`, {
    bearer: adminKey.token,
    body: deviceCreds(),
  });
  assert.equal(byAdmin.status, 403, 'replay is for the submitter only, admin keys included');
  const viewer = await createKey('viewer');
  assert.equal(
    (
      await http('POST', `${A}/v2/jobs/${failed.json.job_id}/replay`, {
        bearer: viewer.token,
        body: deviceCreds(),
      })
    ).status,
    403,
  );
  assert.equal(
    (
      await http('POST', `${A}/v2/jobs/00000000-0000-4000-8000-000000000000/replay`, {
        ...auth,
        body: deviceCreds(),
      })
    ).status,
    404,
  );

  const replay = await http('POST', `${B}/v2/jobs/${failed.json.job_id}/replay`, {
    ...auth,
    body: { ...deviceCreds(), enable: device.enable },
  });
  assert.equal(replay.status, 202, replay.text);
  assert.notEqual(replay.json.job_id, failed.json.job_id);
  assert.equal(replay.headers['x-request-id'], replay.json.job_id);
  const again = await waitForJob(A, replay.json.job_id, auth);
  assert.equal(again.json.status, 'finished', again.text);
  const finishedReplay = await http('POST', `${A}/v2/jobs/${replay.json.job_id}/replay`, {
    ...auth,
    body: deviceCreds(),
  });
  assert.equal(finishedReplay.status, 409, 'only failed jobs are replayed');
});

test('when a webhook_url is http:// and WEBHOOK_ALLOW_HTTP is off, then the submission is 422', async () => {
  const a = await http('POST', `${A}/v2/send-command`, {
    basic: deviceCreds(),
    body: body({ webhook_url: 'http://127.0.0.1:9/hook', commands: ['show users'] }),
  });
  assert.equal(a.status, 422, a.text);
  assert.deepEqual(a.json.validation_error.json[0].loc, ['body', 'webhook_url']);
  const notUrl = await http('POST', `${A}/v2/send-command`, {
    basic: deviceCreds(),
    body: body({ webhook_url: 'file:///etc/passwd' }),
  });
  assert.equal(notUrl.status, 422);
});

test('when a client offers only TLS 1.1, then the HTTPS listener refuses; TLS 1.2 works', async () => {
  const port = Number(new URL(stack.gateway.httpsUrl).port);
  const attempt = (min: 'TLSv1' | 'TLSv1.2', max: 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3') =>
    new Promise<string>((resolve) => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port,
        minVersion: min,
        maxVersion: max,
        rejectUnauthorized: false,
        // Lets this client offer TLS 1.1 at all (OpenSSL 3 refuses it at the default level).
        ciphers: 'DEFAULT@SECLEVEL=0',
      });
      socket.once('secureConnect', () => {
        const v = socket.getProtocol() ?? 'unknown';
        socket.destroy();
        resolve(v);
      });
      socket.once('error', (err: NodeJS.ErrnoException) =>
        resolve(`error:${err.code ?? err.message}`),
      );
    });
  const old = await attempt('TLSv1', 'TLSv1.1');
  assert.match(old, /^error:/, `TLS 1.1 must be refused, got ${old}`);
  assert.doesNotMatch(old, /ECONNREFUSED/);
  assert.equal(await attempt('TLSv1.2', 'TLSv1.2'), 'TLSv1.2');
});

test('when a TLS 1.2 client offers only CBC or SHA-1 suites, then the handshake fails; ECDHE with AES-GCM or ChaCha20 works, and answers carry HSTS', async () => {
  const port = Number(new URL(stack.gateway.httpsUrl).port);
  const offer = (ciphers: string) =>
    new Promise<string>((resolve) => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port,
        minVersion: 'TLSv1.2',
        maxVersion: 'TLSv1.2',
        rejectUnauthorized: false,
        ciphers: `${ciphers}@SECLEVEL=0`,
      });
      socket.once('secureConnect', () => {
        const name = socket.getCipher().name;
        socket.destroy();
        resolve(name);
      });
      socket.once('error', (err: NodeJS.ErrnoException) =>
        resolve(`error:${err.code ?? err.message}`),
      );
    });
  for (const weak of [
    'ECDHE-ECDSA-AES128-SHA',
    'ECDHE-ECDSA-AES256-SHA',
    'ECDHE-ECDSA-AES128-SHA256',
    'ECDHE-ECDSA-AES256-SHA384',
    'ECDHE-RSA-AES128-SHA',
    'AES128-GCM-SHA256',
    'AES128-SHA',
  ]) {
    assert.match(await offer(weak), /^error:/, `${weak} must be refused`);
  }
  assert.equal(await offer('ECDHE-ECDSA-AES128-GCM-SHA256'), 'ECDHE-ECDSA-AES128-GCM-SHA256');
  assert.equal(await offer('ECDHE-ECDSA-AES256-GCM-SHA384'), 'ECDHE-ECDSA-AES256-GCM-SHA384');
  assert.equal(await offer('ECDHE-ECDSA-CHACHA20-POLY1305'), 'ECDHE-ECDSA-CHACHA20-POLY1305');
  const answer = await http('GET', `${stack.gateway.httpsUrl}/healthcheck`);
  assert.match(String(answer.headers['strict-transport-security']), /^max-age=\d+/);
});

async function eventually(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  await waitUntil(check, 'the condition', { timeoutMs });
}
