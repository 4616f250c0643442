// The gateway's access log (issue 24, finding 2): one line per request through Fastify's pino
// logger, refused and failed requests included, scrapes at debug, never a credential.
// Real nats-server, real HTTP, SSH device simulator.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitHealthy,
  type InProcessStack,
  waitUntil,
  captureLogs,
} from '../harness/mod.js';

const { sink, records: lines } = captureLogs();

let nats: NatsServerProcess;
let stack: InProcessStack;
let device: SimulatedDevice;

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios' });
  stack = await startInProcessStack(nats.url, { logSink: sink });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

/** The access-log line of the request that answered with this X-Request-ID. */
async function accessLine(requestId: string): Promise<Record<string, unknown>> {
  // The line is written when the response has been sent: the answer can arrive first.
  return waitUntil(
    () => lines.find((l) => l['logger'] === 'svc.access' && l['request_id'] === requestId),
    `the access line of ${requestId}`,
    { timeoutMs: 5_000, everyMs: 5 },
  );
}

test('when requests are refused, missing, invalid or accepted, then each leaves one access line with method, path, status, duration, request id and caller id, and no credential', async () => {
  const secretPassword = 'Pw-access-log-never-logged';
  const auth = { basic: { username: device.username, password: secretPassword } };

  const unauthenticated = await http('GET', `${stack.url}/v2/send-command/nope?token=QuerySecret1`);
  assert.equal(unauthenticated.status, 401);
  const missing = await http('GET', `${stack.url}/no/such/route`, auth);
  assert.equal(missing.status, 404);
  const invalid = await http('POST', `${stack.url}/v2/send-command`, { ...auth, body: '{"x":' });
  assert.equal(invalid.status, 422);
  const accepted = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: { host: device.host, port: device.port, commands: ['show version'] },
  });
  assert.equal(accepted.status, 202, accepted.text);

  for (const [answer, method, path, status] of [
    [unauthenticated, 'GET', '/v2/send-command/nope', 401],
    [missing, 'GET', '/no/such/route', 404],
    [invalid, 'POST', '/v2/send-command', 422],
    [accepted, 'POST', '/v2/send-command', 202],
  ] as const) {
    const id = String(answer.headers['x-request-id']);
    const line = await accessLine(id);
    assert.equal(line['level'], 'INFO', JSON.stringify(line));
    assert.equal(line['method'], method);
    assert.equal(line['path'], path);
    assert.equal(line['status'], status);
    assert.equal(typeof line['duration_ms'], 'number');
    assert.equal(
      lines.filter((l) => l['logger'] === 'svc.access' && l['request_id'] === id).length,
      1,
      'one line per request',
    );
  }
  const acceptedLine = await accessLine(String(accepted.headers['x-request-id']));
  // The caller as the audit log names it (job.submitted's `caller`).
  const submitted = lines.find(
    (l) => l['event_type'] === 'job.submitted' && l['job_id'] === accepted.json.job_id,
  );
  assert.ok(submitted, 'audit line of the submission');
  assert.equal(acceptedLine['caller'], submitted['caller']);
  assert.match(String(acceptedLine['caller']), /^basic:/);
  assert.equal((await accessLine(String(unauthenticated.headers['x-request-id'])))['caller'], null);

  const all = lines.map((l) => JSON.stringify(l)).join('\n');
  assert.ok(!all.includes(secretPassword), 'no password in any line');
  assert.ok(!all.includes('QuerySecret1'), 'no query string in any line');
  assert.ok(!/Basic [A-Za-z0-9+/=]{8,}/.test(all), 'no Authorization header in any line');
});

test('when /healthcheck and /metrics are scraped, then their access lines are at debug', async () => {
  const health = await http('GET', `${stack.url}/healthcheck`);
  const metrics = await http('GET', `${stack.url}/metrics`);
  assert.equal(metrics.status, 200);
  const h = await accessLine(String(health.headers['x-request-id']));
  const m = await accessLine(String(metrics.headers['x-request-id']));
  assert.equal(h['level'], 'DEBUG');
  assert.equal(h['path'], '/healthcheck');
  assert.equal(m['level'], 'DEBUG');
  assert.equal(m['status'], 200);
});
