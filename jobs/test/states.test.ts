import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { SvcError, isTerminal, type JobRecord, type JobStatus } from '@svc/proto';
import { commandSpec } from '@svc/proto/test-fixtures';
import { JobStore, type RecordWrite } from '../src/store.js';
import {
  IllegalTransition,
  JOB_TRANSITIONS,
  hasLeft,
  mayMove,
  type NextOf,
} from '../src/states.js';
import type { Jobs } from '../src/jobs.js';

const STATUSES = Object.keys(JOB_TRANSITIONS) as JobStatus[];

/** Just what `JobStore` reads and writes of a bucket: get, and writes that compare-and-set. */
function memoryBucket(): { kv: KV; write: RecordWrite } {
  const entries = new Map<string, { value: Uint8Array; revision: number }>();
  let seq = 0;
  return {
    kv: {
      get: (key: string) => {
        const e = entries.get(key);
        return Promise.resolve(e ? { ...e, operation: 'PUT', key } : null);
      },
    } as unknown as KV,
    write: (key, value, _summary, revision) => {
      if ((entries.get(key)?.revision ?? 0) !== revision) {
        return Promise.reject(new Error('wrong last sequence'));
      }
      entries.set(key, { value, revision: ++seq });
      return Promise.resolve(seq);
    },
  };
}

/** A store on a bucket in memory. */
function memoryStore(): JobStore {
  const { kv, write } = memoryBucket();
  return new JobStore(kv, {} as NatsConnection, undefined, undefined, undefined, write);
}

function queued(jobId: string): JobRecord {
  return {
    job_id: jobId,
    status: 'queued',
    owner: 'basic:u',
    username: 'u',
    spec: commandSpec,
    enqueued_at: '2026-01-01T00:00:00.000Z',
    started_at: null,
    ended_at: null,
    results: null,
    error: null,
    error_code: null,
    error_retryable: null,
    detected_platform: null,
    actor_host: null,
    dedup_key: null,
  };
}

test('the table: queued → started | cancelled | failed, started → finished | failed | cancelled, nothing out of a terminal status', () => {
  for (const from of STATUSES) {
    for (const to of STATUSES) {
      const legal =
        (from === 'queued' && ['started', 'cancelled', 'failed'].includes(to)) ||
        (from === 'started' && ['finished', 'failed', 'cancelled'].includes(to));
      assert.equal(mayMove(from, to), legal, `${from} → ${to}`);
    }
    assert.equal(JOB_TRANSITIONS[from].length === 0, isTerminal(from), from);
  }
});

test('a job has left queued once started or ended, started once ended, and never an end', () => {
  const left = (current: JobStatus) => STATUSES.filter((status) => hasLeft(current, status));
  assert.deepEqual(left('queued'), []);
  assert.deepEqual(left('started'), ['queued']);
  for (const end of ['finished', 'failed', 'cancelled'] as const) {
    assert.deepEqual(left(end), ['queued', 'started'], end);
  }
});

test('over random sequences of changes, the store writes exactly the moves of the table and rejects every other one, writing nothing', async () => {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(fc.constantFrom(...STATUSES), { maxLength: 12 }), async (wanted) => {
      const store = memoryStore();
      const jobId = `job-${n++}`;
      await store.create(queued(jobId));
      let model: JobStatus = 'queued';
      for (const to of wanted) {
        const change = (current: JobRecord): JobRecord => ({ ...current, status: to });
        if (to === model || mayMove(model, to)) {
          const written = await store.transition(jobId, change);
          assert.equal(written?.status, to);
          model = to;
        } else {
          await assert.rejects(
            store.transition(jobId, change),
            (err: unknown) =>
              err instanceof IllegalTransition && err.from === model && err.to === to,
          );
        }
        assert.equal((await store.get(jobId))?.record.status, model);
      }
    }),
    { numRuns: 200 },
  );
});

test('move changes a job only from the statuses it names', async () => {
  const store = memoryStore();
  await store.create(queued('m1'));
  assert.equal(await store.move('m1', ['started'], 'finished'), null, 'not started: unchanged');
  const started = await store.move('m1', ['queued'], 'started', () => ({ actor_host: 'h1' }));
  assert.equal(started?.record.status, 'started');
  assert.equal(started?.record.actor_host, 'h1');
  const finished = await store.move('m1', ['started'], 'finished');
  assert.equal(finished?.record.status, 'finished');
  assert.equal(
    await store.move('m1', ['queued', 'started'], 'failed'),
    null,
    'finished: unchanged',
  );
  assert.equal((await store.get('m1'))?.record.status, 'finished');
  // A store written by something else: the guard holds for any change handed to transition.
  await assert.rejects(
    store.transition('m1', (current) => ({ ...current, status: 'failed' })),
    IllegalTransition,
  );
});

// Compiled, never run: the lines marked below must not type-check (tsc fails the build if an
// expected error goes away).
export function illegalMovesDoNotCompile(store: JobStore, jobs: Jobs): void {
  // @ts-expect-error nothing moves out of a terminal status
  void store.move('j', ['finished'], 'failed');
  // @ts-expect-error a queued job is not finished without starting
  void store.move('j', ['queued'], 'finished');
  // @ts-expect-error fail() only from queued or started
  void jobs.fail('j', 'finished', new SvcError('INTERNAL', 'x'));
  // @ts-expect-error cancel() only from queued or started
  void jobs.cancel('j', 'x', ['failed']);
  // @ts-expect-error cancelled has no next status
  const none: NextOf<'cancelled'> = 'queued';
  void none;
  // And the legal ones do.
  void store.move('j', ['queued'], 'started');
  void store.move('j', ['queued', 'started'], 'cancelled');
  void jobs.fail('j', 'queued', new SvcError('INTERNAL', 'x'));
  void jobs.cancel('j', 'x', ['queued']);
}

test('when a record key is not a valid KV key, then the store writes nothing and says why', async () => {
  // No connection behind it: the key is refused before anything is published.
  const store = new JobStore(memoryBucket().kv, {} as NatsConnection);
  for (const key of ['a.>', 'a..b', 'a b', '*']) {
    await assert.rejects(store.create(queued(key)), /not a valid job record key/, key);
  }
});
