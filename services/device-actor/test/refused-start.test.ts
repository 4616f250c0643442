import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JobEnvelope, JobRecord } from '@svc/proto';
import { commandSpec } from '@svc/proto/test-fixtures';
import { refusedStart } from '../src/actor-host/refused-start.js';

// Only what the decision reads: the copy's placement, the record's status, host and placement.
const envelope = { job_id: 'j1', spec: commandSpec, placement: 1 } as JobEnvelope;
const queued = (placement?: number): JobRecord =>
  ({
    job_id: 'j1',
    status: 'queued',
    spec: commandSpec,
    ...(placement === undefined ? {} : { placement }),
  }) as JobRecord;

test('when a start is refused and the record still names this copy, then the copy is started again, never dropped', () => {
  // A read answered "no record" by a server behind its leader refuses the start; the next read
  // finds the job queued for this very copy: dropping it would leave the job queued for good.
  assert.equal(refusedStart(queued(1), envelope, 'h1', false).kind, 'retry');
  assert.equal(refusedStart(queued(), envelope, 'h1', false).kind, 'retry');
});

test('when a start is refused, then the record read after it says why', () => {
  assert.deepEqual(refusedStart(queued(2), envelope, 'h1', false), { kind: 'fenced', later: 2 });
  assert.equal(refusedStart(null, envelope, 'h1', false).kind, 'ended');
  const started: JobRecord = { ...queued(1), status: 'started', actor_host: 'h1' };
  assert.equal(refusedStart(started, envelope, 'h1', false).kind, 'outcome-lost');
  assert.equal(refusedStart(started, envelope, 'h1', true).kind, 'started');
  assert.equal(
    refusedStart({ ...started, actor_host: 'h2' }, envelope, 'h1', false).kind,
    'started',
  );
  assert.equal(
    refusedStart({ ...queued(1), status: 'cancelled' }, envelope, 'h1', false).kind,
    'ended',
  );
});
