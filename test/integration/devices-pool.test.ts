import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SvcError } from '@svc/proto';
import { createDeviceRunner, SessionPool } from '@svc/device-actor';
import {
  generateHostKey,
  jobFor,
  startDevice,
  type SessionCounter,
  type SimulatedDevice,
} from '@svc/test/support';
import { waitUntil } from '../harness/mod.js';

function setup(
  t: { after(fn: () => Promise<void>): void },
  options: { exclude?: string[]; maxSize?: number } = {},
) {
  const pool = new SessionPool({ idleTtlMs: 60_000, maxSize: options.maxSize ?? 10 });
  t.after(() => pool.close());
  return { pool, run: createDeviceRunner({ pool, poolExclude: options.exclude ?? [] }) };
}

async function device(
  t: { after(fn: () => Promise<void>): void },
  platform = 'cisco_ios',
  port?: number,
): Promise<SimulatedDevice> {
  const dev = await startDevice(port === undefined ? { platform } : { platform, port });
  t.after(() => dev.stop());
  return dev;
}

test('when a second job comes for the same device, then it reuses the warm session', async (t) => {
  const { pool, run } = setup(t);
  const dev = await device(t);
  const a = await run(jobFor(dev, { commands: ['show version'] }));
  const b = await run(jobFor(dev, { commands: ['show ip interface brief'] }));
  assert.equal(a.pooled, false);
  assert.equal(b.pooled, true);
  assert.equal(dev.stats.handshakes, 1);
  assert.equal(pool.hits, 1);
  assert.equal(pool.misses, 1);
  assert.equal(pool.size, 1);
  // enable and paging-off ran once: the warm session kept its state.
  assert.equal(dev.stats.commands.filter((c) => c.command === 'enable').length, 1);
});

test('when the warm session went stale, then a new one is opened and the job succeeds', async (t) => {
  const { pool, run } = setup(t);
  const first = await startDevice({ platform: 'cisco_ios' });
  await run(jobFor(first, { commands: ['show version'] }));
  const port = first.port;
  await first.stop(); // closes the warm session under the pool's feet
  const second = await device(t, 'cisco_ios', port);
  const out = await run(jobFor(second, { commands: ['show version'] }));
  assert.equal(out.pooled, false);
  assert.ok(String(out.results['show version']).startsWith('Cisco IOS Software'));
  assert.equal(pool.misses, 2);
  assert.equal(pool.hits, 0);
});

test('when the password changes, then the old warm sessions are closed', async (t) => {
  const { pool, run } = setup(t);
  const dev = await device(t);
  await run(jobFor(dev, { commands: ['show version'] }));
  assert.equal(pool.size, 1);
  await assert.rejects(
    run(jobFor(dev, { password: 'rotated-password', commands: ['show version'] })),
    (err: unknown) => err instanceof SvcError && err.code === 'AUTH_FAILED',
  );
  assert.equal(pool.size, 0);
  await waitUntil(() => dev.stats.sessionsOpen === 0, 'the old session to be closed');
});

test('when a host or platform is excluded, or the job is structured or autodetect, then no pooling', async (t) => {
  const dev = await device(t);
  const byHost = setup(t, { exclude: [dev.host] });
  await byHost.run(jobFor(dev, { commands: ['show version'] }));
  assert.equal((await byHost.run(jobFor(dev, { commands: ['show version'] }))).pooled, false);
  assert.equal(byHost.pool.size, 0);
  const byPlatform = setup(t, { exclude: ['cisco_ios'] });
  await byPlatform.run(jobFor(dev, { commands: ['show version'] }));
  assert.equal(byPlatform.pool.size, 0);
  const other = setup(t);
  await other.run(jobFor(dev, { kind: 'structured', commands: ['show version'] }));
  await other.run(jobFor(dev, { platform: 'autodetect', commands: ['show version'] }));
  assert.equal(other.pool.size, 0);
  assert.equal(other.pool.hits + other.pool.misses, 0);
});

test('when more devices than the pool size are used, then the oldest idle session is evicted', async (t) => {
  const { pool, run } = setup(t, { maxSize: 1 });
  const a = await device(t);
  const b = await device(t);
  await run(jobFor(a, { commands: ['show version'] }));
  await run(jobFor(b, { commands: ['show version'] }));
  assert.equal(pool.size, 1);
  assert.equal((await run(jobFor(b, { commands: ['show version'] }))).pooled, true);
  assert.equal((await run(jobFor(a, { commands: ['show version'] }))).pooled, false);
});

test('when a pooled job fails, then its session is not returned', async (t) => {
  const { pool, run } = setup(t);
  const dev = await device(t);
  await assert.rejects(run(jobFor(dev, { commands: ['show nonsense'] })));
  assert.equal(pool.size, 0);
});

test('when one device (one host key) is reached at two addresses, then its warm session at one is closed before a session at the other logs in', async (t) => {
  const { pool, run } = setup(t);
  const hostKey = generateHostKey();
  const sessions: SessionCounter = { open: 0, max: 0 };
  const [a, b] = await Promise.all(
    ['127.0.0.8', '127.0.0.9'].map((host) =>
      startDevice({ platform: 'cisco_ios', host, hostKey, sessionCounter: sessions }),
    ),
  );
  t.after(() => a!.stop());
  t.after(() => b!.stop());
  // What the actor claims for a job: the device key of its pinned host key.
  const device = 'default|hostkey:SHA256:one-device';
  // Both addresses pinned already: the claim holds the key before the job connects.
  await run(jobFor(a!, { commands: ['show version'], claim: { held: device } }));
  assert.equal(pool.size, 1);
  await run(jobFor(b!, { commands: ['show version'], claim: { held: device } }));
  assert.equal(sessions.max, 1);
  // First contact: the key is known only once the handshake accepted it.
  const claim: { held: string | null } = { held: null };
  const verifyHostKey = (): Promise<null> => {
    claim.held = device;
    return Promise.resolve(null);
  };
  await run(jobFor(a!, { commands: ['show ip interface brief'], claim, verifyHostKey }));
  assert.equal(sessions.max, 1);
  assert.equal(a!.stats.handshakes + b!.stats.handshakes, 3);
  assert.equal(pool.size, 1);
});
