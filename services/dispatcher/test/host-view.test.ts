import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ActorCapability, type WorkerHeartbeat } from '@svc/proto';
import { HostView } from '../src/host-view.js';

const LIVENESS_MS = 1000;
const T0 = Date.parse('2026-01-01T00:00:00Z');

function beat(hostId: string, at: number, extra: Partial<WorkerHeartbeat> = {}): WorkerHeartbeat {
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
    draining: false,
    ...extra,
  };
}

test('when a host beats within the liveness it is live, past it suspect, and draining or deleted it is gone', () => {
  const view = new HostView(LIVENESS_MS);
  view.update('a', beat('a', T0));
  view.update('b', beat('b', T0, { draining: true }));
  assert.equal(view.hostState('a', T0 + LIVENESS_MS), 'live');
  assert.equal(view.hostState('a', T0 + LIVENESS_MS + 1), 'suspect');
  assert.equal(view.hostState('b', T0), 'gone');
  assert.deepEqual(view.liveHosts('default', T0), ['a']);
  assert.deepEqual(view.silentHosts('default', T0 + 2 * LIVENESS_MS), ['a']);
  view.update('a', null);
  assert.equal(view.hostState('a', T0), 'gone');
  assert.deepEqual(view.liveHosts('default', T0), []);
});

test('when hosts serve other contexts or lack a capability, then they are not live for that context or need', () => {
  const view = new HostView(LIVENESS_MS);
  view.update('a', beat('a', T0, { capabilities: [ActorCapability.jobShards] }));
  view.update('b', beat('b', T0, { contexts: ['lab'] }));
  assert.deepEqual(view.liveHosts('default', T0), ['a']);
  assert.deepEqual(view.liveHosts('lab', T0), ['b']);
  assert.deepEqual(view.liveHosts('default', T0, [ActorCapability.jobShards]), ['a']);
  assert.deepEqual(view.liveHosts('lab', T0, [ActorCapability.jobShards]), []);
});

test('when the copy of the heartbeats is behind (its watch lost its node), then hosts are judged as of the moment it was last whole, not as silent', () => {
  const view = new HostView(LIVENESS_MS);
  view.update('a', beat('a', T0));
  view.update('b', beat('b', T0));
  // Whole until T0 (+ a beat's wait): then nothing more reached the copy, for 10 s.
  view.heartbeatsCurrentAt = () => T0 + 200;
  const later = T0 + 10_000;
  assert.equal(view.hostState('a', later), 'live');
  assert.deepEqual(view.liveHosts('default', later).sort(), ['a', 'b']);
  // Whole again up to now: the hosts' beats it holds are old, so they are silent.
  view.heartbeatsCurrentAt = () => later;
  assert.equal(view.hostState('a', later), 'suspect');
  assert.deepEqual(view.liveHosts('default', later), []);
});
