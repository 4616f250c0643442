import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CliSession } from '../src/device/drivers/cli-session.js';
import { SessionPool, type PoolKeyParts } from '../src/device/session-pool.js';

/** The part of a session the pool touches: whether it may be reused, and its close. */
class FakeSession {
  closed = false;
  constructor(readonly name: string) {}
  get reusable(): boolean {
    return !this.closed;
  }
  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

const session = (name: string) => new FakeSession(name) as unknown as CliSession & FakeSession;
const parts = (host: string, password = 'pw', username = 'admin'): PoolKeyParts => ({
  host,
  port: 22,
  username,
  password,
  enable: null,
});
const alive = () => Promise.resolve(true);

test('when the pool is full, then the session idle longest is closed and the others stay warm', async () => {
  const pool = new SessionPool({ maxSize: 2 });
  const [a, b, c] = [session('a'), session('b'), session('c')];
  pool.release(parts('10.0.0.1'), 'cisco_ios', a);
  pool.release(parts('10.0.0.2'), 'cisco_ios', b);
  pool.release(parts('10.0.0.3'), 'cisco_ios', c);
  assert.equal(pool.size, 2);
  assert.equal(a.closed, true);
  assert.equal(await pool.acquire(parts('10.0.0.1'), 'cisco_ios', alive), null);
  assert.equal(await pool.acquire(parts('10.0.0.2'), 'cisco_ios', alive), b);
  assert.equal(await pool.acquire(parts('10.0.0.3'), 'cisco_ios', alive), c);
  assert.equal(pool.size, 0);
  await pool.close();
});

test('when a device has several warm sessions, then a job takes the newest and another user or device is not served', async () => {
  const pool = new SessionPool({ maxSize: 10 });
  const [old, fresh, other] = [session('old'), session('fresh'), session('other')];
  pool.release(parts('10.0.0.1'), 'cisco_ios', old);
  pool.release(parts('10.0.0.9'), 'cisco_ios', other);
  pool.release(parts('10.0.0.1'), 'cisco_ios', fresh);
  assert.equal(await pool.acquire(parts('10.0.0.1', 'pw', 'operator'), 'cisco_ios', alive), null);
  assert.equal(await pool.acquire(parts('10.0.0.1'), 'cisco_ios', alive), fresh);
  assert.equal(await pool.acquire(parts('10.0.0.1'), 'cisco_ios', alive), old);
  assert.equal(pool.size, 1);
  assert.equal(other.closed, false);
  await pool.close();
  assert.equal(other.closed, true);
});

test('when the password changed, then the sessions of the old one are closed and none is served', async () => {
  const pool = new SessionPool({ maxSize: 10 });
  const before = session('before');
  pool.release(parts('10.0.0.1', 'old-pw'), 'cisco_ios', before);
  assert.equal(await pool.acquire(parts('10.0.0.1', 'new-pw'), 'cisco_ios', alive), null);
  assert.equal(before.closed, true);
  assert.equal(pool.size, 0);
  assert.deepEqual([pool.hits, pool.misses], [0, 1]);
});

test('when a warm session fails its check or was of another platform, then it is closed and the job opens a new one', async () => {
  const pool = new SessionPool({ maxSize: 10 });
  const [stale, ios] = [session('stale'), session('ios')];
  pool.release(parts('10.0.0.1'), 'cisco_ios', stale);
  pool.release(parts('10.0.0.2'), 'cisco_ios', ios);
  assert.equal(
    await pool.acquire(parts('10.0.0.1'), 'cisco_ios', () => Promise.resolve(false)),
    null,
  );
  assert.equal(stale.closed, true);
  assert.equal(await pool.acquire(parts('10.0.0.2'), 'juniper_junos', alive), null);
  assert.equal(ios.closed, true);
  assert.equal(pool.size, 0);
  assert.deepEqual([pool.hits, pool.misses], [0, 2]);
});

test('when a device is closed, then its warm sessions at that address go and the others stay', async () => {
  const pool = new SessionPool({ maxSize: 10 });
  const [mine, theirs] = [session('mine'), session('theirs')];
  pool.release(parts('10.0.0.1'), 'cisco_ios', mine);
  pool.release(parts('10.0.0.2'), 'cisco_ios', theirs);
  await pool.closeDevice({ host: '10.0.0.1', port: 22 });
  assert.equal(mine.closed, true);
  assert.equal(theirs.closed, false);
  assert.equal(await pool.acquire(parts('10.0.0.2'), 'cisco_ios', alive), theirs);
  assert.equal(pool.size, 0);
});

test('when the sessions of the addresses a shard names are closed, then they go and the others stay', async () => {
  const pool = new SessionPool({ maxSize: 10 });
  const [mine, theirs] = [session('mine'), session('theirs')];
  pool.release(parts('Router-1.example'), 'cisco_ios', mine);
  pool.release(parts('10.0.0.2'), 'cisco_ios', theirs);
  const asked: string[] = [];
  await pool.closeWhere((host, port) => {
    asked.push(`${host}:${port}`);
    return host === 'router-1.example';
  });
  assert.deepEqual(asked.sort(), ['10.0.0.2:22', 'router-1.example:22']);
  assert.equal(mine.closed, true);
  assert.equal(theirs.closed, false);
  assert.equal(pool.size, 1);
});
