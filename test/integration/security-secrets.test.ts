// Secrets stay secret: after jobs that succeed, fail on a wrong password, push configuration
// with an enable secret and send signed webhooks, no device password, enable secret, webhook
// secret, API token or admin secret appears in the NATS store files, the logs of any service
// (DEBUG level), the failed-job records or the webhook deliveries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import { loadGatewayConfig, startGateway, type RunningGateway } from '@svc/gateway';
import { loadDispatcherConfig, startDispatcher, type RunningDispatcher } from '@svc/dispatcher';
import {
  loadDeviceActorConfig,
  startDeviceActorService,
  type RunningDeviceActorService,
} from '@svc/device-actor';
import { loadReaperConfig, startReaper, type RunningReaper } from '@svc/reaper';
import { Sealer } from '@svc/proto';
import { AuditLog, createLogger } from '@svc/telemetry';
import { connectNats } from '@svc/nats';
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import {
  NatsServerProcess,
  http,
  settledStoreFiles,
  waitUntil,
  testEnv,
  waitForJob,
  waitHealthy,
  captureLogs,
} from '../harness/mod.js';

const PASSWORD = 'Dev1ce-Pa55word-7c1e9a';
const WRONG_PASSWORD = 'Wr0ng-Pa55word-55d0b3';
const ENABLE = 'En4ble-Secr3t-93fa10';
const WEBHOOK_SECRET = 'W3bhook-Secr3t-0aa4e2';
const ADMIN_SECRET = 'Adm1n-Secr3t-d41c77';
const JWT_SECRET = 'Jwt-Secr3t-long-enough-for-hs256-2f9e0c41b7';
// A webhook URL may carry credentials of its own (user info, a token in the query).
const WEBHOOK_URL_PASSWORD = 'H00k-Url-Pa55-8e1f02';
const WEBHOOK_URL_TOKEN = 'Url-T0ken-4b7d21c9';

interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
}

let nats: NatsServerProcess;
let device: SimulatedDevice;
let receiver: Server;
let receiverUrl: string;
const deliveries: Delivery[] = [];
const connections: NatsConnection[] = [];
let gateway: RunningGateway;
let dispatcher: RunningDispatcher;
let actor: RunningDeviceActorService;
let reaper: RunningReaper;
let url: string;

/** Every log line of every service, DEBUG and up, audit included. */
const { sink, lines: logLines } = captureLogs();

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({
    platform: 'cisco_ios',
    hostname: 'SECRET1',
    password: PASSWORD,
    enable: ENABLE,
  });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const addr = receiver.address();
  receiverUrl = `http://hook:${WEBHOOK_URL_PASSWORD}@127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/hook?token=${WEBHOOK_URL_TOKEN}`;

  const env = testEnv(nats.url, {
    LOG_LEVEL: 'DEBUG',
    WEBHOOK_ALLOW_HTTP: 'true',
    SVC_ADMIN_SECRET: ADMIN_SECRET,
    SVC_JWT_SECRET: JWT_SECRET,
  });
  const sealer = Sealer.fromSetting(env['SVC_ENCRYPTION_KEY']!);
  const nc = async (name: string) => {
    const c = await connectNats(nats.url, name);
    connections.push(c);
    return c;
  };
  const log = (service: string) => createLogger(service, 'DEBUG', sink);
  const audit = (service: string) => new AuditLog(service, sink);
  reaper = await startReaper(loadReaperConfig(env), {
    nc: await nc('reaper'),
    log: log('reaper'),
    audit: audit('reaper'),
  });
  dispatcher = await startDispatcher(loadDispatcherConfig(env), {
    nc: await nc('dispatcher'),
    log: log('dispatcher'),
  });
  actor = await startDeviceActorService(loadDeviceActorConfig(env), {
    nc: await nc('actor'),
    log: log('device-actor'),
    sealer,
    audit: audit('device-actor'),
  });
  gateway = await startGateway(loadGatewayConfig(env), {
    nc: await nc('gateway'),
    sealer,
    log: log('gateway'),
    audit: audit('gateway'),
  });
  url = gateway.httpUrl!;
  await waitHealthy(url);
});

after(async () => {
  await gateway?.stop();
  await actor?.stop();
  await dispatcher?.stop();
  await reaper?.stop();
  await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
  await new Promise((r) => receiver?.close(r));
  await device?.stop();
  await nats?.stop();
});

test('when jobs succeed, fail and notify, then no secret is left in the store, logs, failed records or webhooks', async () => {
  const admin = { basic: { username: 'admin', password: ADMIN_SECRET } };
  const key = await http('POST', `${url}/v2/api-keys`, { ...admin, body: { role: 'operator' } });
  assert.equal(key.status, 201);
  const token: string = key.json.token;
  const bearer = { bearer: token };
  const basic = { basic: { username: device.username, password: PASSWORD } };
  const target = { host: '127.0.0.1', port: device.port, platform: 'cisco_ios' };

  const submissions: [
    string,
    { basic?: { username: string; password: string }; bearer?: string },
    Record<string, unknown>,
    string,
  ][] = [
    [
      '/v2/send-command',
      basic,
      {
        commands: ['show version'],
        enable: ENABLE,
        webhook_url: receiverUrl,
        webhook_secret: WEBHOOK_SECRET,
      },
      'finished',
    ],
    [
      '/v2/send-command',
      bearer,
      {
        commands: ['show ip interface brief'],
        username: device.username,
        password: PASSWORD,
        enable: ENABLE,
        webhook_url: receiverUrl,
        webhook_secret: WEBHOOK_SECRET,
      },
      'finished',
    ],
    [
      '/v2/send-config',
      bearer,
      {
        commands: ['interface Gi0/1', 'description secret-test'],
        username: device.username,
        password: PASSWORD,
        enable: ENABLE,
        save_config: true,
      },
      'finished',
    ],
    [
      '/v2/send-command',
      bearer,
      {
        commands: ['show ip interface brief'],
        username: device.username,
        password: WRONG_PASSWORD,
        enable: ENABLE,
        webhook_url: receiverUrl,
        webhook_secret: WEBHOOK_SECRET,
      },
      'failed',
    ],
    [
      '/v2/send-command',
      { basic: { username: device.username, password: WRONG_PASSWORD } },
      { commands: ['show version'], webhook_url: receiverUrl },
      'failed',
    ],
  ];
  const ids: string[] = [];
  for (const [path, auth, extra, expected] of submissions) {
    const a = await http('POST', `${url}${path}`, { ...auth, body: { ...target, ...extra } });
    assert.equal(a.status, 202, a.text);
    const done = await waitForJob(url, a.json.job_id, auth);
    assert.equal(done.json.status, expected, done.text);
    ids.push(a.json.job_id);
  }
  // A replay of a failed job with the right password, and a key rotation: more token material.
  const replay = await http('POST', `${url}/v2/jobs/${ids[3]}/replay`, {
    ...bearer,
    body: {
      username: device.username,
      password: PASSWORD,
      enable: ENABLE,
      webhook_secret: WEBHOOK_SECRET,
    },
  });
  assert.equal(replay.status, 202, replay.text);
  assert.equal((await waitForJob(url, replay.json.job_id, bearer)).json.status, 'finished');
  const rotated = await http('POST', `${url}/v2/api-keys/${key.json.key_id}/rotate`, admin);
  assert.equal(rotated.status, 200);

  // Webhooks: one per job that asked, signed when a secret was given, results never sent.
  const withHook = [ids[0], ids[1], ids[3], ids[4], replay.json.job_id];
  await waitUntil(() => deliveries.length >= withHook.length, 'a delivery per job with a hook', {
    timeoutMs: 10_000,
  });
  assert.equal(deliveries.length, withHook.length, 'one delivery per job with a webhook_url');
  for (const d of deliveries) {
    const payload = JSON.parse(d.body);
    assert.deepEqual(Object.keys(payload).sort(), [
      'completed_at',
      'enqueued_at',
      'job_id',
      'status',
    ]);
    assert.ok(withHook.includes(payload.job_id));
    assert.match(String(d.headers['x-svc-timestamp']), /^\d{10}$/);
    const signature = d.headers['x-svc-signature-256'];
    if (payload.job_id === ids[4]) {
      assert.equal(signature, undefined, 'no secret, no signature');
    } else {
      const expected = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(d.body).digest('hex')}`;
      assert.equal(signature, expected);
    }
    assert.equal(
      payload.status,
      payload.job_id === ids[3] || payload.job_id === ids[4] ? 'failed' : 'finished',
    );
  }

  // Failed-job records, through the API and straight from the bucket.
  const failedApi = await http('GET', `${url}/v2/jobs/failed`, bearer);
  const kvm = new Kvm(jetstream(connections[0]!));
  const failedKv = await kvm.open('svc-failed');
  const failedValues: string[] = [];
  for await (const k of await failedKv.keys()) {
    const e = await failedKv.get(k);
    if (e) failedValues.push(new TextDecoder().decode(e.value));
  }
  assert.ok(failedValues.length >= 2, 'failed jobs were recorded');
  const records = await Promise.all(
    ids.map((id, i) =>
      http(
        'GET',
        `${url}/v2/jobs/${id}`,
        i === 0 || i === 4
          ? i === 0
            ? basic
            : { basic: { username: device.username, password: WRONG_PASSWORD } }
          : bearer,
      ),
    ),
  );

  // The store files, once every write so far is in them (a marker written after them shows).
  const storeFiles = await settledStoreFiles(nats.url, nats.storeDir);
  assert.ok(storeFiles.length > 0);

  const secrets: [string, string][] = [
    ['device password', PASSWORD],
    ['wrong password', WRONG_PASSWORD],
    ['enable secret', ENABLE],
    ['webhook secret', WEBHOOK_SECRET],
    ['webhook URL password', WEBHOOK_URL_PASSWORD],
    ['webhook URL token', WEBHOOK_URL_TOKEN],
    ['admin secret', ADMIN_SECRET],
    ['JWT secret', JWT_SECRET],
    ['API token', token],
    ['rotated API token', rotated.json.token],
    ['token signature', token.split('.')[2]!],
  ];
  const basicHeader = Buffer.from(`${device.username}:${PASSWORD}`).toString('base64');
  secrets.push(['Basic header', basicHeader]);
  const places: [string, string[]][] = [
    ['logs', logLines],
    ['failed-job records (API)', [failedApi.text]],
    ['failed-job records (KV)', failedValues],
    ['job records (API)', records.map((r) => r.text)],
    [
      'webhook deliveries',
      deliveries.map(
        (d) => d.body + JSON.stringify({ ...d.headers, 'x-svc-signature-256': undefined }),
      ),
    ],
  ];
  assert.ok(logLines.length > 20, `logs were captured (${logLines.length} lines)`);
  assert.ok(
    logLines.some((l) => l.includes('"level":"DEBUG"')),
    'DEBUG lines were captured',
  );
  for (const [name, secret] of secrets) {
    for (const [place, texts] of places) {
      const hit = texts.find((t) => t.includes(secret));
      assert.equal(hit, undefined, `${name} found in ${place}: ${hit?.slice(0, 300)}`);
    }
    const needle = Buffer.from(secret, 'utf8');
    const file = storeFiles.findIndex((b) => b.includes(needle));
    assert.equal(file, -1, `${name} found in a NATS store file`);
  }
  // Positive control: the store does hold job data (so the scan looks at the right bytes).
  assert.ok(
    storeFiles.some((b) => b.includes(Buffer.from(ids[0]!))),
    'job ids are in the store files',
  );
});
