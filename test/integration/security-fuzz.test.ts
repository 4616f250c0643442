// Property-based abuse of every route: thousands of malformed bodies, headers and paths against
// an in-process gateway over plain HTTP. Never a 5xx, never a crash, nothing queued.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import fc from 'fast-check';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { loadGatewayConfig, startGateway, type RunningGateway } from '@svc/gateway';
import { Sealer } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { NatsServerProcess, http, silentLogger, testEnv } from '../harness/mod.js';

const ADMIN_SECRET = 'fuzz-admin-secret';
const JWT_SECRET = 'fuzz-jwt-secret-long-enough-0123456789abcdef';

let nats: NatsServerProcess;
let nc: NatsConnection;
let gateway: RunningGateway;
let url: string;
let operatorToken: string;
let viewerToken: string;
const knownJobId = '5b0a1c52-4c7e-4b53-9d0e-2f8b7c3a1d11';

before(async () => {
  nats = await NatsServerProcess.start();
  nc = await connectNats(nats.url, 'fuzz-gateway');
  const env = testEnv(nats.url, { SVC_ADMIN_SECRET: ADMIN_SECRET, SVC_JWT_SECRET: JWT_SECRET });
  gateway = await startGateway(loadGatewayConfig(env), {
    nc,
    sealer: Sealer.fromSetting(env['SVC_ENCRYPTION_KEY']!),
    log: silentLogger('gateway'),
  });
  url = gateway.httpUrl!;
  const admin = { basic: { username: 'admin', password: ADMIN_SECRET } };
  operatorToken = (
    await http('POST', `${url}/v2/api-keys`, { ...admin, body: { role: 'operator' } })
  ).json.token;
  viewerToken = (await http('POST', `${url}/v2/api-keys`, { ...admin, body: { role: 'viewer' } }))
    .json.token;
  assert.ok(operatorToken && viewerToken);
});

after(async () => {
  await gateway?.stop();
  await nc?.close();
  await nats?.stop();
});

async function queued(): Promise<{ jobs: number; stream: number }> {
  const kv = await new Kvm(jetstream(nc)).open('svc-jobs');
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info('SVC_JOBS');
  return { jobs: (await kv.status()).values, stream: info.state.messages };
}

// ---- generators ---------------------------------------------------------------------------

const weird = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.constantFrom(
    '',
    ' ',
    '..',
    '.',
    '*',
    '>',
    'a.b',
    '%',
    '%00',
    '\u0000',
    'null',
    '[]',
    '{}',
    '-1',
    '1e309',
  ),
);
const segment = fc.oneof(
  weird.map((s) => {
    try {
      return encodeURIComponent(s);
    } catch {
      return '%ED%A0%80'; // a lone surrogate: encoded by hand
    }
  }),
  fc.constantFrom('%', '%zz', '%C0%AF', '..%2F..', '%2e%2e'),
);
const anyJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 4 });
/** Header values a client can send at all (visible ASCII, spaces, tabs). */
const headerValue = fc.string({ maxLength: 64 }).filter((s) => /^[\t\x20-\x7e]*$/.test(s));

/** A submission body that is invalid by construction: one field of the valid shape is broken. */
const validBase = {
  host: '127.0.0.1',
  port: 22,
  platform: 'cisco_ios',
  commands: ['show version'],
};
const brokenField = fc.oneof(
  fc.record({
    commands: fc.oneof(
      fc.constant([]),
      fc.constant(null),
      weird,
      fc.array(fc.integer(), { minLength: 1 }),
    ),
  }),
  fc.record({
    port: fc.oneof(fc.integer({ min: -5, max: 0 }), fc.integer({ min: 65536 }), weird, fc.double()),
  }),
  fc.record({
    host: fc.oneof(
      fc.constant('bad host!'),
      fc.constant(''),
      fc.integer(),
      fc.constant('300.1.1.1'),
    ),
  }),
  fc.record({ platform: fc.oneof(fc.constant('cisco_foo'), fc.integer(), fc.constant('')) }),
  fc.record({ context: fc.oneof(fc.constant('mars'), fc.integer(), fc.constant('')) }),
  fc.record({
    tags: fc.oneof(fc.constant(['x']), fc.dictionary(weird, weird, { minKeys: 11, maxKeys: 12 })),
  }),
  fc.record({ conn_timeout: fc.oneof(fc.double({ max: 0.99, noNaN: true }), weird) }),
  fc.record({
    webhook_url: fc.oneof(
      fc.constant('http://127.0.0.1/h'),
      fc.constant('ftp://x'),
      fc.constant('not a url'),
    ),
  }),
  fc.record({ expect_string: fc.constant('([') }),
  fc.record({ webhook_secret: fc.string({ minLength: 1 }), webhook_url: fc.constant(null) }),
);
const submissionBody = fc.oneof(
  fc
    .tuple(
      brokenField,
      fc.dictionary(
        fc.constantFrom(
          'enable',
          'username',
          'password',
          'read_timeout',
          'ip',
          'device_type',
          'extra',
        ),
        anyJson,
        { maxKeys: 3 },
      ),
    )
    .map(([broken, noise]) => JSON.stringify({ ...validBase, ...noise, ...broken })),
  anyJson.map((v) => JSON.stringify(v)),
  weird,
  fc.constant(''),
  fc.constant('{'),
);

const basicHeader = fc
  .tuple(weird, weird)
  .map(([u, p]) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`);
const authHeader = fc.oneof(
  fc.constant<string | undefined>(undefined),
  basicHeader,
  fc.constant('Basic svc:svc-demo'),
  fc.constant('Basic '),
  fc
    .string({ maxLength: 200 })
    .filter((s) => /^[\x21-\x7e]*$/.test(s))
    .map((s) => `Bearer ${s}`),
  fc.constant('Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJrZXlfMDAwIn0.'),
  fc.constant('OPERATOR'),
  fc.constant('VIEWER'),
  fc.constant('BASIC_OK'),
);

interface Req {
  method: string;
  path: string;
  body: string | undefined;
  headers: Record<string, string>;
}

const submitPaths = [
  '/v2/send-command',
  '/v2/send-config',
  '/v2/send-command-structured',
  '/v1/send_command',
  '/v1/send_command_structured',
];

const request: fc.Arbitrary<Req> = fc
  .record({
    method: fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH'),
    path: fc.oneof(
      fc.constantFrom(...submitPaths),
      segment.map((s) => `/v2/send-command/${s}`),
      segment.map((s) => `/v2/send-command-structured/${s}`),
      segment.map((s) => `/v2/jobs/${s}`),
      segment.map((s) => `/v2/jobs/${s}/stream`),
      segment.map((s) => `/v2/jobs/${s}/replay`),
      fc.constant(`/v2/jobs/${knownJobId}/replay`),
      segment.map((s) => `/v1/send_command/${s}`),
      segment.map((s) => `/v1/jobs/${s}/replay`),
      fc.constantFrom(
        '/v2/jobs',
        '/v2/jobs/failed',
        '/v1/jobs',
        '/v1/jobs/failed',
        '/v1/contexts',
        '/v2/api-keys',
      ),
      fc
        .tuple(
          fc.constantFrom('/v2/jobs', '/v2/jobs/failed', '/v1/jobs'),
          fc.dictionary(fc.constantFrom('page', 'per_page', 'status', 'tag'), weird, {
            maxKeys: 3,
          }),
        )
        .map(([p, q]) => `${p}?${new URLSearchParams(q).toString()}`),
      segment.map((s) => `/v2/api-keys/${s}`),
      segment.map((s) => `/v2/api-keys/${s}/rotate`),
      fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => `/${s.join('/')}`),
    ),
    body: fc.option(submissionBody, { nil: undefined }),
    auth: authHeader,
    requestId: fc.option(fc.oneof(headerValue, fc.uuid()), { nil: undefined }),
    idem: fc.option(headerValue, { nil: undefined }),
    contentType: fc.option(
      fc.constantFrom(
        'application/json',
        'text/plain',
        'multipart/form-data; boundary=x',
        'application/x-www-form-urlencoded',
        'x/y',
      ),
      { nil: undefined },
    ),
  })
  .map((r) => {
    const headers: Record<string, string> = {};
    if (r.auth === 'OPERATOR') headers['authorization'] = `Bearer ${operatorToken}`;
    else if (r.auth === 'VIEWER') headers['authorization'] = `Bearer ${viewerToken}`;
    else if (r.auth === 'BASIC_OK')
      headers['authorization'] = `Basic ${Buffer.from('svc:svc-demo').toString('base64')}`;
    else if (r.auth !== undefined) headers['authorization'] = r.auth;
    if (r.requestId !== undefined) headers['x-request-id'] = r.requestId;
    if (r.idem !== undefined) headers['x-idempotency-key'] = r.idem;
    if (r.contentType !== undefined) headers['content-type'] = r.contentType;
    const body = r.method === 'GET' ? undefined : r.body;
    return { method: r.method, path: r.path, body, headers };
  });

/** Streams (SSE) would stay open; the fuzzer only needs their status line. */
async function send(req: Req): Promise<number> {
  if (req.path.endsWith('/stream') && req.method === 'GET') {
    const controller = new AbortController();
    const res = await fetch(`${url}${req.path}`, {
      headers: req.headers,
      signal: controller.signal,
    });
    controller.abort();
    return res.status;
  }
  // Raw HTTP/1.1 over a fresh socket: every status line the server writes is checked, and no
  // client-side parser sits between the server's bytes and the assertion.
  const { port } = new URL(url);
  const payload = req.body === undefined ? Buffer.alloc(0) : Buffer.from(req.body, 'utf8');
  const head = [`${req.method} ${req.path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  for (const [k, v] of Object.entries(req.headers)) head.push(`${k}: ${v}`);
  if (req.body !== undefined) head.push(`Content-Length: ${payload.length}`);
  const raw = Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), payload]);
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(raw));
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', reject);
  });
  const statuses = [...text.matchAll(/(?:^|\r\n)HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
  if (statuses.length === 0)
    throw new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 200))}`);
  // Leftover body bytes that the server parsed as a second request may get their own answer.
  return Math.max(...statuses) >= 500 ? Math.max(...statuses) : statuses[0]!;
}

test('when thousands of malformed requests hit every route, then none is a 5xx and nothing is queued', async () => {
  const before = await queued();
  const seen = new Map<number, number>();
  const recent: Req[] = [];
  const outcome = await fc.check(
    fc.asyncProperty(request, async (req) => {
      let status: number;
      recent.push(req);
      if (recent.length > 3) recent.shift();
      try {
        status = await send(req);
      } catch (err) {
        throw new Error(
          `the request failed: ${String(err)}; last requests ${JSON.stringify(recent)}`,
          {
            cause: err,
          },
        );
      }
      seen.set(status, (seen.get(status) ?? 0) + 1);
      assert.ok(status >= 200 && status < 500, `${req.method} ${req.path} answered ${status}`);
      assert.notEqual(status, 202, `${req.method} ${req.path} queued a job`);
    }),
    { numRuns: 2000, seed: Number(process.env['FUZZ_SEED'] ?? Date.now() % 100_000) },
  );
  // fc.check keeps the error of the counterexample, which fc.assert's report drops.
  assert.ok(
    !outcome.failed,
    `${String(outcome.errorInstance)}; seed ${outcome.seed}, counterexample ${JSON.stringify(outcome.counterexample)}`,
  );
  const after = await queued();
  assert.deepEqual(after, before, 'nothing queued');
  // The gateway is still alive and answers.
  assert.equal((await http('GET', `${url}/v2/jobs`, { bearer: viewerToken })).status, 200);
  const summary = [...seen.entries()]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s}:${n}`)
    .join(' ');
  assert.ok(seen.size > 3, `a variety of answers: ${summary}`);
});
