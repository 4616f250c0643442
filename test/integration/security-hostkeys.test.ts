import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { generateHostKey, startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

/**
 * Whom the service talks to: the first host key seen for a device is pinned (trust on first
 * use, context `default`); a changed key fails the job with HOST_KEY_MISMATCH before any
 * password is sent. Context `strict` only trusts keys an admin loaded; context `open` checks
 * nothing (explicit). Admins list, load and forget pinned keys.
 */

const ADMIN_SECRET = 'hostkey-admin-secret-0123456789';
let nats: NatsServerProcess;
let stack: InProcessStack;
const devices: SimulatedDevice[] = [];
const admin = { basic: { username: 'admin', password: ADMIN_SECRET } };

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url, {
    env: {
      SVC_CONTEXTS: 'default,strict,open',
      WORKER_CONTEXTS: 'default,strict,open',
      HOST_KEY_POLICY: 'tofu,strict=strict,open=off',
      SVC_ADMIN_SECRET: ADMIN_SECRET,
      JOB_DEDUP_ENABLED: 'false',
      CONNECTION_POOL_ENABLED: 'false',
    },
  });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  for (const d of devices) await d.stop();
  await nats?.stop();
});

async function device(port = 0) {
  const d = await startDevice({
    platform: 'cisco_ios',
    enable: 'svc-demo',
    port,
    hostKey: generateHostKey(),
  });
  devices.push(d);
  return d;
}

/** The same device (port) restarted with a new host key: what a man in the middle looks like. */
async function replaceKey(d: SimulatedDevice) {
  await d.stop();
  return device(d.port);
}

const authOf = (d: SimulatedDevice) => ({ basic: { username: d.username, password: d.password } });

async function run(d: SimulatedDevice, context = 'default') {
  const a = await http('POST', `${stack.url}/v2/send-command`, {
    ...authOf(d),
    body: { host: '127.0.0.1', port: d.port, commands: ['show version'], context },
  });
  assert.equal(a.status, 202, a.text);
  return (await waitForJob(stack.url, a.json.job_id, authOf(d))).json;
}

function fingerprint(openssh: string): string {
  const blob = Buffer.from(openssh.split(' ')[1]!, 'base64');
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

test('when a device host key changes after it was pinned, then the job fails with HOST_KEY_MISMATCH and the password is never sent', async () => {
  const first = await device();
  assert.equal((await run(first)).status, 'finished');
  const impostor = await replaceKey(first);
  const r = await run(impostor);
  assert.equal(r.status, 'failed');
  assert.equal(r.error_code, 'HOST_KEY_MISMATCH');
  assert.equal(r.error_retryable, false);
  assert.ok(r.error.includes(fingerprint(first.hostPublicKey)), r.error);
  assert.ok(r.error.includes(fingerprint(impostor.hostPublicKey)), r.error);
  assert.deepEqual(impostor.stats.authAttempts, []);
  assert.equal(impostor.stats.handshakes, 0);

  // The admin sees the pin, forgets it, and the next job pins the new key.
  const list = await http('GET', `${stack.url}/v2/host-keys`, admin);
  assert.equal(list.status, 200, list.text);
  const pin = list.json.host_keys.find(
    (k: { host: string; port: number }) => k.host === '127.0.0.1' && k.port === first.port,
  );
  assert.equal(pin.fingerprint, fingerprint(first.hostPublicKey));
  assert.equal(pin.context, 'default');
  assert.equal(pin.source, 'tofu');
  const forget = await http(
    'DELETE',
    `${stack.url}/v2/host-keys/default/127.0.0.1/${first.port}`,
    admin,
  );
  assert.equal(forget.status, 204, forget.text);
  assert.equal((await run(impostor)).status, 'finished');
});

test('when a context is strict, then only a key an admin loaded is trusted', async () => {
  const d = await device();
  const unknown = await run(d, 'strict');
  assert.equal(unknown.error_code, 'HOST_KEY_UNKNOWN');
  assert.deepEqual(d.stats.authAttempts, []);
  const bad = await http('PUT', `${stack.url}/v2/host-keys/strict/127.0.0.1/${d.port}`, {
    ...admin,
    body: { public_key: 'ssh-ed25519 not-base64!' },
  });
  assert.equal(bad.status, 422, bad.text);
  const load = await http('PUT', `${stack.url}/v2/host-keys/strict/127.0.0.1/${d.port}`, {
    ...admin,
    body: { public_key: `${d.hostPublicKey} router-1` },
  });
  assert.equal(load.status, 200, load.text);
  assert.equal(load.json.fingerprint, fingerprint(d.hostPublicKey));
  assert.equal(load.json.source, 'admin');
  assert.equal((await run(d, 'strict')).status, 'finished');
  // Operators do not manage keys.
  const denied = await http('GET', `${stack.url}/v2/host-keys`, authOf(d));
  assert.equal(denied.status, 401);
});

test('when a context turns host-key checks off, then a changed key is accepted', async () => {
  const d = await device();
  assert.equal((await run(d, 'open')).status, 'finished');
  const other = await replaceKey(d);
  assert.equal((await run(other, 'open')).status, 'finished');
});

test('when a host-key route names a port, then it is read as an integer from text and anything but 1-65535 is a 422 at path.port', async () => {
  // A TEST-NET address: the routes only read and write the store, no device is contacted.
  const key = (await device()).hostPublicKey;
  const at = (context: string, port: string) =>
    `${stack.url}/v2/host-keys/${context}/192.0.2.55/${port}`;
  const load = (context: string, port: string) =>
    http('PUT', at(context, port), { ...admin, body: { public_key: key } });

  for (const [port, want] of [
    ['2222', 2222],
    ['00022', 22],
    ['65535', 65535],
    ['%2022', 22],
  ] as const) {
    const a = await load('default', port);
    assert.equal(a.status, 200, `${port}: ${a.text}`);
    assert.equal(a.json.port, want, port);
  }
  assert.equal((await http('DELETE', at('default', '00022'), admin)).status, 204);
  assert.equal((await http('DELETE', at('default', '22'), admin)).status, 404);

  const portIssue = {
    message: 'validation failed',
    validation_error: {
      json: [{ loc: ['path', 'port'], msg: 'port must be 1-65535', type: 'value_error' }],
    },
  };
  // Not the decimal text of a port (the OpenAPI's `^[0-9]{1,5}$` before, an integer now).
  for (const port of ['0', '65536', '-1', 'ssh', '22.5', '0x16', '1e3', '%20']) {
    for (const method of ['PUT', 'DELETE']) {
      const a =
        method === 'PUT'
          ? await load('default', port)
          : await http(method, at('default', port), admin);
      assert.equal(a.status, 422, `${method} ${port}: ${a.text}`);
      assert.deepEqual(a.json, portIssue, `${method} ${port}`);
    }
  }
  // The port is judged after the caller and the context, and before the body.
  assert.equal((await http('DELETE', at('default', '0'))).status, 401);
  assert.equal((await http('DELETE', at('nowhere', '0'), admin)).status, 404);
  const both = await http('PUT', at('default', '0'), { ...admin, body: { public_key: 'x' } });
  assert.deepEqual(both.json, portIssue);
  const pinned = await http('GET', `${stack.url}/v2/host-keys`, admin);
  assert.deepEqual(
    pinned.json.host_keys
      .filter((k: { host: string }) => k.host === '192.0.2.55')
      .map((k: { port: number }) => k.port)
      .sort((a: number, b: number) => a - b),
    [2222, 65535],
  );
});
