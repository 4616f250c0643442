import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  generateHostKey,
  startDevice,
  startJumpHost,
  type JumpHost,
  type SessionCounter,
  type SimulatedDevice,
  type StartJumpHostOptions,
} from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

/**
 * Breakers and lockouts count what each party did: a failure at a jump host (it refuses the
 * connection, refuses to forward, rejects its own credentials) is charged to that jump host,
 * never to the device behind it, so that nobody can take a device offline for its owner by
 * routing made-up jobs through a broken bastion.
 */

const JUMP_PASSWORD = 'Jump-Pa55word-77c1d0';
let nats: NatsServerProcess;
let stack: InProcessStack;
const started: { stop(): Promise<void> }[] = [];

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url, {
    env: {
      BREAKER_THRESHOLD: '3',
      BREAKER_OPEN_SECONDS: '120',
      LOCKOUT_THRESHOLD: '3',
      LOCKOUT_WINDOW: '600',
      JOB_DEDUP_ENABLED: 'false',
      CONNECTION_POOL_ENABLED: 'false',
    },
  });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  for (const s of started) await s.stop();
  await nats?.stop();
});

async function device(): Promise<SimulatedDevice> {
  const d = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  started.push(d);
  return d;
}

async function jumpHost(options: StartJumpHostOptions = {}): Promise<JumpHost> {
  const j = await startJumpHost({ password: JUMP_PASSWORD, ...options });
  started.push(j);
  return j;
}

type Auth = { basic: { username: string; password: string } };
const ownerOf = (d: SimulatedDevice): Auth => ({
  basic: { username: d.username, password: d.password },
});
/** A stranger: made-up Basic credentials are enough to submit. */
const stranger: Auth = { basic: { username: 'mallory', password: 'made-up-password' } };

async function run(d: SimulatedDevice, auth: Auth, extra: Record<string, unknown> = {}) {
  const a = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: { host: '127.0.0.1', port: d.port, commands: ['show version'], ...extra },
  });
  assert.equal(a.status, 202, a.text);
  return (await waitForJob(stack.url, a.json.job_id, auth)).json;
}

const via = (host: string, port: number, password = JUMP_PASSWORD) => ({
  ssh: { jump_hosts: [{ host, port, username: 'jump', password }] },
});

test("when jobs go through a jump host that refuses the connection, then the jump host's breaker opens, not the device's, and the owner's direct job works", async () => {
  const d = await device();
  const gone = await startJumpHost();
  const port = gone.port;
  await gone.stop(); // nothing listens there any more: every connection is refused
  for (let i = 0; i < 3; i++) {
    const r = await run(d, stranger, via('127.0.0.1', port));
    assert.equal(r.error_code, 'CONNECTION_REFUSED', r.error);
    assert.match(r.error, new RegExp(`jump host 127\\.0\\.0\\.1:${port}`));
  }
  // The jump host has a breaker of its own, keyed like a device.
  const fourth = await run(d, stranger, via('127.0.0.1', port));
  assert.equal(fourth.error_code, 'CIRCUIT_OPEN', fourth.error);
  assert.match(fourth.error, new RegExp(`jump host 127\\.0\\.0\\.1:${port}`));
  const direct = await run(d, ownerOf(d));
  assert.equal(direct.status, 'finished', `${direct.error_code}: ${direct.error}`);
  assert.equal(d.stats.authFailures, 0);
});

test("when jobs go through a bastion that refuses forwarding, then the device's breaker stays closed", async () => {
  const d = await device();
  const bastion = await jumpHost({ refuseForwarding: true });
  for (let i = 0; i < 3; i++) {
    const r = await run(d, stranger, via(bastion.host, bastion.port));
    assert.equal(r.status, 'failed');
    assert.match(r.error, /could not reach/);
  }
  assert.equal(bastion.stats.forwards.length, 3);
  const direct = await run(d, ownerOf(d));
  assert.equal(direct.status, 'finished', `${direct.error_code}: ${direct.error}`);
  assert.equal(d.stats.handshakes, 1, 'only the direct job reached the device');
});

test("when a jump host rejects its own credentials, then the device's user is not locked out", async () => {
  const d = await device();
  const bastion = await jumpHost();
  for (let i = 0; i < 3; i++) {
    const r = await run(d, ownerOf(d), via(bastion.host, bastion.port, 'wrong-jump-password'));
    assert.equal(r.error_code, 'AUTH_FAILED', r.error);
    assert.match(r.error, /on jump host/);
  }
  assert.equal(bastion.stats.authFailures, 3);
  // The device's own account saw nothing; its owner is not locked out by the bastion's refusals.
  const direct = await run(d, ownerOf(d));
  assert.equal(direct.status, 'finished', `${direct.error_code}: ${direct.error}`);
  // The jump host's account has a lockout of its own: the fourth attempt is not sent to it.
  const locked = await run(d, ownerOf(d), via(bastion.host, bastion.port, 'wrong-jump-password'));
  assert.equal(locked.error_code, 'DEVICE_LOCKED_OUT', locked.error);
  assert.match(locked.error, /jump host/);
  assert.equal(bastion.stats.authFailures, 3);
});

test('when one device (one pinned host key) is reached at two addresses, then failed logins at both add up in one lockout', async () => {
  const hostKey = generateHostKey();
  const a = await startDevice({ platform: 'cisco_ios', host: '127.0.0.1', hostKey });
  const b = await startDevice({ platform: 'cisco_ios', host: '127.0.0.2', hostKey });
  started.push(a, b);
  const wrong: Auth = { basic: { username: a.username, password: 'not-the-password' } };
  const at = async (d: SimulatedDevice) => {
    const s = await http('POST', `${stack.url}/v2/send-command`, {
      ...wrong,
      body: { host: d.host, port: d.port, commands: ['show version'] },
    });
    if (s.status !== 202) return { status: s.status, error_code: null };
    return { status: 202, ...(await waitForJob(stack.url, s.json.job_id, wrong)).json };
  };
  // Two failures at the first address, one at the second: three on one device (threshold 3).
  for (const d of [a, a, b]) assert.equal((await at(d)).error_code, 'AUTH_FAILED');
  // The fourth attempt, at either address, is not sent to the device.
  const fourth = await at(b);
  assert.ok(
    fourth.status === 403 || fourth.error_code === 'DEVICE_LOCKED_OUT',
    JSON.stringify(fourth),
  );
  assert.equal(a.stats.authFailures + b.stats.authFailures, 3);
});

test('when one device (one pinned host key) is reached at three addresses, then three jobs through them hold one session at a time, from first contact on', async () => {
  const hostKey = generateHostKey();
  const sessions: SessionCounter = { open: 0, max: 0 };
  const devices = await Promise.all(
    ['127.0.0.3', '127.0.0.4', '127.0.0.5'].map((host) =>
      startDevice({
        platform: 'cisco_ios',
        enable: 'svc-demo',
        host,
        hostKey,
        sessionCounter: sessions,
        commandLatencyMs: 50,
      }),
    ),
  );
  started.push(...devices);
  const owner = ownerOf(devices[0]!);
  const at = async (d: SimulatedDevice, n: number) => {
    const s = await http('POST', `${stack.url}/v2/send-command`, {
      ...owner,
      body: { host: d.host, port: d.port, commands: [`show interface GigabitEthernet0/${n}`] },
    });
    assert.equal(s.status, 202, s.text);
    return (await waitForJob(stack.url, s.json.job_id, owner)).json;
  };
  // Three jobs at once, at three addresses never reached before (no key pinned yet), then three
  // more once each address has pinned the same key.
  for (const round of [0, 1]) {
    const done = await Promise.all(devices.map((d, i) => at(d, round * 3 + i)));
    assert.deepEqual(
      done.map((r) => `${r.status} ${r.error_code ?? ''}`),
      ['finished ', 'finished ', 'finished '],
    );
    assert.equal(sessions.max, 1, `round ${round}`);
  }
  assert.equal(
    devices.reduce((n, d) => n + d.stats.handshakes, 0),
    6,
  );
});
