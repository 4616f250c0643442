import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
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
 * Guards that hold whatever the caller writes: a device is its canonical address (so
 * `localhost`, `127.0.0.1` and `::ffff:127.0.0.1` are one device), a login attempt counts once,
 * only unreachable devices trip the breaker, and a device never sees two sessions at once.
 */

let nats: NatsServerProcess;
let stack: InProcessStack;
const devices: SimulatedDevice[] = [];

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url, {
    // Two hosts: spellings of one device must still be placed on one of them.
    actors: 2,
    env: {
      BREAKER_THRESHOLD: '3',
      BREAKER_OPEN_SECONDS: '120',
      LOCKOUT_THRESHOLD: '6',
      LOCKOUT_WINDOW: '600',
      JOB_DEDUP_ENABLED: 'false',
    },
  });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  for (const d of devices) await d.stop();
  await nats?.stop();
});

async function device(options: Partial<Parameters<typeof startDevice>[0]> = {}) {
  const d = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo', ...options });
  devices.push(d);
  return d;
}

type Auth = { basic: { username: string; password: string } };
const authOf = (d: SimulatedDevice): Auth => ({
  basic: { username: d.username, password: d.password },
});

async function run(
  d: SimulatedDevice,
  host: string,
  commands: string[],
  options: { auth?: Auth; path?: string; extra?: Record<string, unknown> } = {},
) {
  const auth = options.auth ?? authOf(d);
  const a = await http('POST', `${stack.url}${options.path ?? '/v2/send-command'}`, {
    ...auth,
    body: { host, port: d.port, commands, ...options.extra },
  });
  assert.equal(a.status, 202, a.text);
  return (await waitForJob(stack.url, a.json.job_id, auth)).json;
}

test('when localhost, 127.0.0.1 and ::ffff:127.0.0.1 name one device, then one warm session serves them all', async () => {
  const d = await device();
  for (const host of ['127.0.0.1', 'localhost', '::ffff:127.0.0.1', 'LOCALHOST']) {
    const r = await run(d, host, ['show version']);
    assert.equal(r.status, 'finished', `${host}: ${r.error}`);
  }
  assert.equal(d.stats.handshakes, 1);
  assert.equal(d.stats.maxConcurrentSessions, 1);
});

test('when failed logins go to localhost and 127.0.0.1, then they add up in one lockout, one per job', async () => {
  const d = await device();
  const wrong: Auth = { basic: { username: d.username, password: 'not-the-password' } };
  const hosts = ['localhost', '127.0.0.1', '::ffff:127.0.0.1', 'localhost', '127.0.0.1'];
  for (const host of hosts) {
    const r = await run(d, host, ['show version'], { auth: wrong });
    assert.equal(r.error_code, 'AUTH_FAILED');
  }
  // Five failed logins are five attempts on the device, not ten (a device's own lockout counts
  // them too), and the service's ledger holds five: below the threshold of six.
  assert.equal(d.stats.authFailures, 5);
  const sixth = await run(d, 'localhost', ['show version'], { auth: wrong });
  assert.equal(sixth.error_code, 'AUTH_FAILED');
  const locked = await http('POST', `${stack.url}/v2/send-command`, {
    ...wrong,
    body: { host: '127.0.0.1', port: d.port, commands: ['show version'] },
  });
  assert.equal(locked.status, 403, locked.text);
  assert.match(locked.json.message, /locked out/);
});

test('when connections to localhost and 127.0.0.1 are refused, then one breaker counts them all', async () => {
  const d = await device();
  await d.setFaults({ refuse: true });
  for (const host of ['localhost', '127.0.0.1', '::ffff:127.0.0.1']) {
    const r = await run(d, host, ['show version']);
    assert.equal(r.error_code, 'CONNECTION_REFUSED');
  }
  const open = await run(d, 'localhost', ['show version']);
  assert.equal(open.error_code, 'CIRCUIT_OPEN');
});

test('when five jobs log out of the device, then its breaker stays closed', async () => {
  const d = await device();
  for (let i = 0; i < 5; i++) {
    const r = await run(d, '127.0.0.1', ['logout']);
    assert.notEqual(r.error_code, 'CIRCUIT_OPEN');
  }
  const next = await run(d, '127.0.0.1', ['show version']);
  assert.equal(next.status, 'finished', `${next.error_code}: ${next.error}`);
});

test('when a structured or autodetect job follows a show job, then the device never sees two sessions', async () => {
  const d = await device();
  const first = await run(d, '127.0.0.1', ['show version']);
  assert.equal(first.status, 'finished');
  const structured = await run(d, '127.0.0.1', ['show version'], {
    path: '/v2/send-command-structured',
    extra: { ttp_template: 'Cisco IOS Software, {{ software | ORPHRASE }}' },
  });
  assert.equal(structured.status, 'finished', structured.error);
  const detected = await run(d, 'localhost', ['show version'], {
    extra: { platform: 'autodetect' },
  });
  assert.equal(detected.status, 'finished', detected.error);
  const again = await run(d, '127.0.0.1', ['show version']);
  assert.equal(again.status, 'finished');
  assert.equal(d.stats.maxConcurrentSessions, 1);
});

test('when a device asks a one-time code before the password over keyboard-interactive, then only the password prompt gets the password', async () => {
  const d = await device({
    authMethods: ['keyboard-interactive'],
    keyboardPrompts: ['Verification code: ', 'Password: '],
  });
  const r = await run(d, '127.0.0.1', ['show version']);
  assert.equal(r.status, 'finished', r.error);
  assert.deepEqual(d.stats.authAttempts, [
    { method: 'keyboard-interactive', answers: ['', d.password] },
  ]);
});

test('when a device offers password and keyboard-interactive and the password is wrong, then it is sent once', async () => {
  const d = await device();
  const wrong: Auth = { basic: { username: d.username, password: 'not-the-password' } };
  const r = await run(d, '127.0.0.1', ['show version'], { auth: wrong });
  assert.equal(r.error_code, 'AUTH_FAILED');
  assert.deepEqual(d.stats.authAttempts, [{ method: 'password', answers: ['not-the-password'] }]);
});
