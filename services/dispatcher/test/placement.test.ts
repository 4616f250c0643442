import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ACTOR_CAPABILITIES,
  ActorCapability,
  requiredCapabilities,
  type HostDrain,
  type WorkerHeartbeat,
} from '@svc/proto';
import { Placement, rendezvousScore, type JobToPlace } from '../src/placement.js';

const LIVENESS_MS = 1000;
const T0 = Date.parse('2026-01-01T00:00:00Z');

function beat(hostId: string, at: number, draining = false): WorkerHeartbeat {
  return {
    host_id: hostId,
    contexts: ['default'],
    capacity: 10,
    busy: 0,
    active_jobs: 0,
    started_at: new Date(T0).toISOString(),
    last_beat: new Date(at).toISOString(),
    pool_size: 0,
    pool_hits: 0,
    pool_misses: 0,
    draining,
  };
}

/** A device whose preferred host (rendezvous) among a and b is `a`. */
function deviceOn(host: 'a' | 'b', skip = 0): string {
  for (let i = 0; ; i++) {
    const key = `default|10.0.0.${i}|22`;
    const prefersA = rendezvousScore(key, 'a') > rendezvousScore(key, 'b');
    if (prefersA === (host === 'a') && skip-- === 0) return key;
  }
}

/**
 * Records of jobs (ended ones are settled, at T0); and `place`, which places one job of a
 * device in the default context by them (a new job unless `handBack`).
 */
function ledger(p: Placement) {
  const ended = new Set<string>();
  const isSettled = (jobId: string) => Promise.resolve(ended.has(jobId) ? T0 : null);
  const place = (
    device: string,
    id: string,
    now: number,
    job: Partial<Omit<JobToPlace, 'id'>> = {},
  ) => p.place('default', device, { id, handBack: false, ...job }, isSettled, now);
  return { ended, place };
}

/** Hosts `a` and `b` beating at T0 in `p`, and a ledger (above) placing on them. */
function twoHosts(p = new Placement(LIVENESS_MS)) {
  p.update('a', beat('a', T0));
  p.update('b', beat('b', T0));
  return { p, ...ledger(p) };
}

test('when a device has jobs not yet ended on a host that went silent, then its next jobs go behind them on that host, not to a live host', async () => {
  const { p, place } = twoHosts();
  const device = deviceOn('a');
  assert.equal(await place(device, 'j1', T0), 'a');
  // `a` stops beating: suspect. j1 has not ended, so j2 must not run elsewhere before it.
  p.update('b', beat('b', T0 + 5000));
  const later = T0 + 5000;
  assert.equal(await place(device, 'j2', later), 'a');
});

test('when a device on a silent host has no job left to end, then it moves to a live host at once', async () => {
  const { p, ended, place } = twoHosts();
  const device = deviceOn('a');
  assert.equal(await place(device, 'j1', T0), 'a');
  ended.add('j1');
  p.update('b', beat('b', T0 + 5000));
  assert.equal(await place(device, 'j2', T0 + 5000), 'b');
});

test("when a host is drained, then a device's new job waits until the last of its earlier jobs is handed back, and goes after them to the same host", async () => {
  const { p, place } = twoHosts();
  const device = deviceOn('a');
  for (const id of ['j1', 'j2', 'j3']) {
    assert.equal(await place(device, id, T0), 'a');
  }
  // The reaper marks `a` draining and hands back j2 and j3 (j1 had started: WORKER_LOST).
  p.update('a', beat('a', T0, true));
  const now = T0 + 100;
  p.update('b', beat('b', now));
  assert.equal(await place(device, 'j4', now), null);
  assert.equal(await place(device, 'j2', now, { handBack: true }), 'b');
  p.handedBack(device, { id: 'j2', handBack: true }, 'b');
  // j3, the last job placed on `a`, is not back yet: j4 still waits.
  assert.equal(await place(device, 'j4', now), null);
  assert.equal(await place(device, 'j3', now, { handBack: true }), 'b');
  // Decided but not yet published: j4 still waits.
  assert.equal(await place(device, 'j4', now), null);
  p.handedBack(device, { id: 'j3', handBack: true }, 'b');
  assert.equal(await place(device, 'j4', now), 'b');
});

/** The reaper's record of a drain of `host` (`LockKeys.drain`). */
function drain(host: string, handedBack: string[] | null): HostDrain {
  return {
    host_id: host,
    state: handedBack === null ? 'draining' : 'done',
    handed_back: handedBack ?? [],
    started_at: new Date(T0).toISOString(),
    ended_at: handedBack === null ? null : new Date(T0).toISOString(),
  };
}

test("when a drained host beats again while its drain is under way, then a device's new job waits for the drain's outcome and goes after the jobs it handed back", async () => {
  const { p, place } = twoHosts();
  const device = deviceOn('a');
  assert.equal(await place(device, 'j1', T0), 'a');
  // The reaper starts draining the silent `a` (marks it draining); j2 is held meanwhile.
  p.drainUpdate('a', drain('a', null), T0);
  p.update('a', beat('a', T0, true));
  const now = T0 + 100;
  p.update('b', beat('b', now));
  assert.equal(await place(device, 'j2', now), null);
  // `a` was only frozen: it beats again (its own beat overwrites the mark) before the drain
  // has handed j1 back. j2 must not overtake j1.
  p.update('a', beat('a', now));
  assert.equal(await place(device, 'j2', now), null);
  p.drainUpdate('a', drain('a', ['j1']));
  assert.equal(await place(device, 'j2', now), null);
  const back = await place(device, 'j1', now, { handBack: true });
  assert.notEqual(back, null);
  p.handedBack(device, { id: 'j1', handBack: true }, back!);
  assert.equal(await place(device, 'j2', now), back);
});

test("when the drain of a host that beats again handed back nothing of a device, then the device's new job goes to that host as soon as the drain is done, with no wait", async () => {
  const { p, place } = twoHosts();
  const device = deviceOn('a');
  assert.equal(await place(device, 'j1', T0), 'a');
  p.drainUpdate('a', drain('a', null), T0);
  p.update('a', beat('a', T0, true));
  const now = T0 + 100;
  p.update('a', beat('a', now));
  p.update('b', beat('b', now));
  assert.equal(await place(device, 'j2', now), null);
  // j1 had started on `a` (left there), another device's job was handed back.
  p.drainUpdate('a', drain('a', ['other']));
  assert.equal(await place(device, 'j2', now), 'a');
});

test("when a host's heartbeats pause and resume after its drain is done (a NATS node's failover), then its devices' new jobs go on at once: only a job the drain handed back is waited for", async () => {
  const { p, place } = twoHosts();
  const device = deviceOn('a');
  const other = deviceOn('a', 1);
  assert.equal(await place(device, 'j1', T0), 'a');
  assert.equal(await place(other, 'k1', T0), 'a');
  p.drainUpdate('a', drain('a', null), T0);
  p.update('a', beat('a', T0, true));
  const now = T0 + 100;
  p.update('b', beat('b', now));
  assert.equal(await place(device, 'j2', now), null);
  p.drainUpdate('a', drain('a', ['k1']));
  // Still marked draining: j1 (started there, not handed back) is waited for as before.
  assert.equal(await place(device, 'j2', now), null);
  p.update('a', beat('a', now));
  assert.equal(await place(device, 'j2', now), 'a');
  // k1 is coming back: the other device waits for it even though `a` beats.
  assert.equal(await place(other, 'k2', now), null);
  p.handedBack(other, { id: 'k1', handBack: true }, 'a');
  assert.equal(await place(other, 'k2', now), 'a');
});

test('when a host beats again while the reaper drains it, then no job goes there (neither a new one nor a handed-back copy) until the drain is done: the drain would hand it back again', async () => {
  const p = new Placement(LIVENESS_MS);
  const { place } = ledger(p);
  p.update('a', beat('a', T0));
  const device = deviceOn('a');
  const idle = deviceOn('a', 1);
  assert.equal(await place(device, 'j1', T0), 'a');
  p.drainUpdate('a', drain('a', null), T0);
  p.update('a', beat('a', T0 + 100));
  assert.equal(await place(device, 'j1', T0 + 100, { handBack: true }), null);
  assert.equal(await place(idle, 'k1', T0 + 100), null);
  p.drainUpdate('a', drain('a', ['j1']));
  assert.equal(await place(device, 'j1', T0 + 100, { handBack: true }), 'a');
  assert.equal(await place(idle, 'k1', T0 + 100), 'a');
});

test('when a drain never ends (the reaper died during it), then a device held by it moves on after the wait limit', async () => {
  const { p, place } = twoHosts(new Placement(LIVENESS_MS, 30_000));
  const device = deviceOn('a');
  assert.equal(await place(device, 'j1', T0), 'a');
  p.drainUpdate('a', drain('a', null), T0);
  p.update('a', beat('a', T0 + 100));
  assert.equal(await place(device, 'j2', T0 + 100), null);
  p.update('a', beat('a', T0 + 31_000));
  p.update('b', beat('b', T0 + 31_000));
  assert.equal(await place(device, 'j2', T0 + 31_000), 'a');
});

test('when the last job on a drained host has ended instead of coming back, then the device moves on', async () => {
  const { p, ended, place } = twoHosts();
  const device = deviceOn('a');
  assert.equal(await place(device, 'j1', T0), 'a');
  p.update('a', beat('a', T0, true));
  assert.equal(await place(device, 'j2', T0), null);
  ended.add('j1'); // failed WORKER_LOST by the reaper, or cancelled
  assert.equal(await place(device, 'j2', T0), 'b');
});

test('when no hand-back comes for the wait limit, then the device moves on rather than waiting for good', async () => {
  const { p, place } = twoHosts(new Placement(LIVENESS_MS, 30_000));
  const device = deviceOn('a');
  assert.equal(await place(device, 'j1', T0), 'a');
  p.update('a', null);
  assert.equal(await place(device, 'j2', T0), null);
  p.update('b', beat('b', T0 + 31_000));
  assert.equal(await place(device, 'j2', T0 + 31_000), 'b');
});

test('when the preferred host of an idle device comes back, then its next job goes there once its warm session has surely closed', async () => {
  const IDLE_MS = 300_000;
  const p = new Placement(LIVENESS_MS, 60_000, IDLE_MS);
  const { ended, place } = ledger(p);
  const device = deviceOn('a');
  // `a` is down at first: the device starts on `b`.
  p.update('b', beat('b', T0));
  assert.equal(await place(device, 'j1', T0), 'b');
  p.update('a', beat('a', T0 + 1000));
  p.update('b', beat('b', T0 + 1000));
  // j1 still running: the device stays (order, one session).
  assert.equal(await place(device, 'j2', T0 + 1000), 'b');
  ended.add('j2');
  // Ended, but `b` may still hold a warm session for it: stays.
  const soon = T0 + 20_000;
  p.update('a', beat('a', soon));
  p.update('b', beat('b', soon));
  assert.equal(await place(device, 'j3', soon), 'b');
  ended.add('j3');
  const later = T0 + IDLE_MS + 30_000;
  p.update('a', beat('a', later));
  p.update('b', beat('b', later));
  assert.equal(await place(device, 'j4', later), 'a');
});

test('when rebalancing is off, then a device stays on its host while that host is live', async () => {
  const p = new Placement(LIVENESS_MS);
  const { ended, place } = ledger(p);
  const device = deviceOn('a');
  p.update('b', beat('b', T0));
  assert.equal(await place(device, 'j1', T0), 'b');
  ended.add('j1');
  const later = T0 + 10_000_000;
  p.update('a', beat('a', later));
  p.update('b', beat('b', later));
  assert.equal(await place(device, 'j2', later), 'b');
});

/** A heartbeat of a host of this release (it lists its capabilities). */
function capableBeat(hostId: string, at: number): WorkerHeartbeat {
  return { ...beat(hostId, at), capabilities: [...ACTOR_CAPABILITIES] };
}

test('when a job requires a capability, then it is placed only on a host whose heartbeat lists it; a host of an earlier release still gets the jobs that need none', async () => {
  const p = new Placement(LIVENESS_MS);
  const { place } = ledger(p);
  // `a` is an earlier release (no capabilities in its heartbeat) and the device's preferred host.
  p.update('a', beat('a', T0));
  p.update('b', capableBeat('b', T0));
  const plain = deviceOn('a');
  assert.equal(await place(plain, 'j1', T0), 'a');
  const dry = `${deviceOn('a')}|dry`;
  const requires = requiredCapabilities({ dry_run: true } as never);
  assert.deepEqual(requires, ['config_workflows']);
  assert.equal(await place(dry, 'j2', T0, { requires }), 'b');
  // With no capable host live, the job waits (null) rather than going to `a`.
  p.update('b', null);
  assert.equal(await place(`${dry}2`, 'j3', T0, { requires }), null);
  assert.equal(await place(`${dry}2`, 'j3', T0, { handBack: true, requires }), null);
});

test('when a device sits on a host of an earlier release and a job needs a capability, then it waits for the device jobs there to end, then moves to a capable host', async () => {
  const p = new Placement(LIVENESS_MS);
  const { ended, place } = ledger(p);
  p.update('a', beat('a', T0));
  p.update('b', capableBeat('b', T0));
  const device = deviceOn('a');
  assert.equal(await place(device, 'j1', T0), 'a');
  const requires = [ActorCapability.configWorkflows];
  assert.equal(await place(device, 'j2', T0, { requires }), null, 'behind j1');
  ended.add('j1');
  assert.equal(await place(device, 'j2', T0, { requires }), 'b');
  // The device is on `b` now: its next plain job follows it there, in order.
  assert.equal(await place(device, 'j3', T0), 'b');
});

test('when addresses of one device (one pinned host key) are placed, then they prefer the host of that key, and an address placed before its pin moves there once idle', async () => {
  const { p, ended, place } = twoHosts(new Placement(LIVENESS_MS, 60_000, 330_000));
  // Two addresses whose own keys prefer different hosts, and a host key that prefers b.
  const onA = deviceOn('a');
  const onB = deviceOn('b');
  let device = 'default|hostkey:SHA256:0';
  for (let i = 1; rendezvousScore(device, 'b') < rendezvousScore(device, 'a'); i++) {
    device = `default|hostkey:SHA256:${i}`;
  }
  // First contact at onA: no key pinned yet, it goes where its address prefers.
  assert.equal(await place(onA, 'j1', T0), 'a');
  // Both addresses pinned now: onB goes to the key's host; onA stays behind its job on a.
  p.prefer(onB, device);
  assert.equal(await place(onB, 'j2', T0), 'b');
  p.prefer(onA, device);
  assert.equal(await place(onA, 'j3', T0), 'a');
  // Once onA has had no job for the rebalance idle time, it joins the device's host.
  ended.add('j3');
  const later = T0 + 330_000;
  p.update('a', beat('a', later));
  p.update('b', beat('b', later));
  assert.equal(await place(onA, 'j4', later), 'b');
});

test('when a new leader places a device the previous leader put on a live host other than its preferred one, then it keeps the device there, and places by rendezvous once that host is gone', async () => {
  const { p, place } = twoHosts(new Placement(LIVENESS_MS, 60_000, 330_000));
  const device = deviceOn('a');
  const recorded = new Map([[device, 'b']]);
  p.knownHost = (key) => recorded.get(key) ?? null;
  assert.equal(await place(device, 'j1', T0), 'b');
  // A leader that led before and took the lead again forgets its own view; the record stays.
  p.forgetDevices('default');
  p.update('b', beat('b', T0, true));
  assert.equal(await place(device, 'j2', T0), 'a');
});

test("when a device's jobs are placed, then each names the job placed before it, across a move to another host and a placement repeated", async () => {
  const { p, ended, place } = twoHosts();
  const device = deviceOn('a');
  assert.equal(await place(device, 'j1', T0), 'a');
  assert.equal(p.jobBefore(device, 'j1'), undefined, 'the first job waits for none');
  assert.equal(await place(device, 'j2', T0), 'a');
  assert.equal(p.jobBefore(device, 'j2'), 'j1');
  // A redelivered j2 placed again still names j1, never itself.
  assert.equal(await place(device, 'j2', T0), 'a');
  assert.equal(p.jobBefore(device, 'j2'), 'j1');
  // `a` leaves once j2 has ended: j3 moves to `b` and names j2, which ran on `a`.
  ended.add('j2');
  p.update('a', null);
  assert.equal(await place(device, 'j3', T0 + 10), 'b');
  assert.equal(p.jobBefore(device, 'j3'), 'j2');
  assert.equal(p.jobBefore(device, 'j2'), undefined, 'only the last job is answered');
});

test('when the copy of the heartbeats is behind (its watch lost its node), then hosts are judged as of the moment it was last whole, not as silent', async () => {
  const { p, place } = twoHosts();
  const device = deviceOn('a');
  // Whole until T0 (+ a beat's wait): then nothing more reached the copy, for 10 s.
  p.heartbeatsCurrentAt = () => T0 + 200;
  const later = T0 + 10_000;
  assert.equal(p.hostState('a', later), 'live');
  assert.deepEqual(p.liveHosts('default', later).sort(), ['a', 'b']);
  assert.equal(await place(device, 'j1', later), 'a');
  // Whole again up to now: the hosts' beats it holds are old, so they are silent.
  p.heartbeatsCurrentAt = () => later;
  assert.equal(p.hostState('a', later), 'suspect');
  assert.deepEqual(p.liveHosts('default', later), []);
});
