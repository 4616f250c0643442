import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

/**
 * The service is not a proxy into its own networks: with the default policy, loopback,
 * link-local (cloud metadata), unspecified and multicast addresses are refused, at submission
 * for an address and as a failed job for a name that resolves there; a context's policy can
 * allow them. Webhooks do not go to loopback or private networks unless a setting allows it.
 *
 * This file configures the stack with the DEFAULT policy (the harness normally allows loopback,
 * where the simulated devices live); context `lab` allows loopback explicitly.
 */

let nats: NatsServerProcess;
let stack: InProcessStack;
let d: SimulatedDevice;
let receiver: Server;
let receiverUrl: string;
let hits = 0; // deliveries that reached the receiver
const auth = () => ({ basic: { username: d.username, password: d.password } });

before(async () => {
  nats = await NatsServerProcess.start();
  d = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  receiver = createServer((req, res) => {
    hits++;
    req.resume();
    res.writeHead(204).end();
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const addr = receiver.address();
  receiverUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/hook`;
  stack = await startInProcessStack(nats.url, {
    env: {
      SVC_CONTEXTS: 'default,lab,closed',
      WORKER_CONTEXTS: 'default,lab,closed',
      DEVICE_NETWORKS_ALLOW: 'lab=127.0.0.0/8,lab=::1/128,closed=192.0.2.0/24',
      DEVICE_NETWORKS_DENY: 'lab=127.0.0.9',
      WEBHOOK_ALLOW_NETWORKS: '',
      WEBHOOK_ALLOW_HTTP: 'true',
      JOB_DEDUP_ENABLED: 'false',
    },
  });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await d?.stop();
  await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
  await nats?.stop();
});

function submit(host: string, extra: Record<string, unknown> = {}) {
  return http('POST', `${stack.url}/v2/send-command`, {
    ...auth(),
    body: { host, port: d.port, commands: ['show version'], ...extra },
  });
}

test('when a job targets a loopback, link-local, unspecified or multicast address, then it is 422 at the host field and nothing runs', async () => {
  for (const host of [
    '127.0.0.1',
    '::ffff:127.0.0.1',
    '::1',
    '169.254.169.254',
    '0.0.0.0',
    '::',
    '224.0.0.1',
    'fe80::1',
  ]) {
    const a = await submit(host);
    assert.equal(a.status, 422, `${host}: ${a.text}`);
    const issue = a.json.validation_error.json[0];
    assert.deepEqual(issue.loc, ['body', 'host']);
    assert.match(issue.msg, /refused|not in/);
  }
  assert.equal(d.stats.handshakes + d.stats.authFailures, 0);
});

test('when a name resolves to a refused address, then the job fails with ADDRESS_NOT_ALLOWED and the device is never contacted', async () => {
  for (const host of ['localhost', 'LocalHost']) {
    const a = await submit(host);
    assert.equal(a.status, 202, a.text);
    const r = (await waitForJob(stack.url, a.json.job_id, auth())).json;
    assert.equal(r.status, 'failed');
    assert.equal(r.error_code, 'ADDRESS_NOT_ALLOWED');
    assert.equal(r.error_retryable, false);
    assert.match(r.error, /127\.0\.0\.1.*loopback/);
  }
  assert.equal(d.stats.handshakes + d.stats.authFailures, 0);
});

test('when a context allows loopback, then its jobs reach the device, and its deny entries still refuse', async () => {
  for (const host of ['127.0.0.1', 'localhost']) {
    const a = await submit(host, { context: 'lab' });
    assert.equal(a.status, 202, a.text);
    const r = (await waitForJob(stack.url, a.json.job_id, auth())).json;
    assert.equal(r.status, 'finished', r.error);
  }
  const denied = await submit('127.0.0.9', { context: 'lab' });
  assert.equal(denied.status, 422, denied.text);
  assert.match(denied.json.validation_error.json[0].msg, /DEVICE_NETWORKS_DENY/);
  // An allow-list is the only way in: context `closed` allows 192.0.2.0/24 only.
  const outside = await submit('198.51.100.7', { context: 'closed' });
  assert.equal(outside.status, 422, outside.text);
  assert.match(outside.json.validation_error.json[0].msg, /not in DEVICE_NETWORKS_ALLOW/);
});

test('when a webhook targets a loopback or private address and no setting allows it, then the submission is 422 at webhook_url', async () => {
  for (const url of [receiverUrl, 'http://169.254.169.254/latest', 'https://10.1.2.3/hook']) {
    const a = await submit('127.0.0.1', { context: 'lab', webhook_url: url });
    assert.equal(a.status, 422, `${url}: ${a.text}`);
    assert.deepEqual(a.json.validation_error.json[0].loc, ['body', 'webhook_url']);
  }
  assert.equal(hits, 0);
});
