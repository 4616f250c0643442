// The reaper reaps an actor host silent past WORKER_STALE_THRESHOLD: it removes its heartbeat
// by compare-and-set on the stale beat it read, then fails the host's started jobs
// (WORKER_LOST). A host that beats again between the read and the removal was only slow (a
// frozen NATS node resuming, a long pause): the removal does not take. A reap that went on all
// the same would fail jobs the host was still running on their devices: their records would say
// WORKER_LOST while the devices ran them. Here the reaper reaches a real nats-server through a
// relay; the host's new beat is written as the removal passes, and the removal is dropped (it
// would have been refused: the beat moved on).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buckets, WorkerHeartbeat, decodeMessage, encodeJson } from '@svc/proto';
import { commandEnvelope } from '@svc/proto/test-fixtures';
import { reaperBehindRelay, staleHeartbeat } from '../harness/mod.js';

test('when a silent actor host beats again as the reaper removes its heartbeat, then it is not reaped and its running job is not failed', async (t) => {
  const { reaper, filter, stores, jobs } = await reaperBehindRelay(t);
  const host = 'host-slow';
  const envelope = commandEnvelope('job-running');
  await jobs.enqueue(envelope, { announce: false });
  assert.ok(await jobs.start(envelope, host), 'the job started on the host');
  const stale = staleHeartbeat(host, 1);
  const workers = stores[Buckets.workers];
  await workers.put(host, encodeJson(stale));

  const beatsAgain: Promise<unknown>[] = [];
  filter.drop((subject) => {
    if (subject !== `$KV.${Buckets.workers}.${host}`) return false;
    if (beatsAgain.length > 0) return true;
    beatsAgain.push(
      workers.put(
        host,
        encodeJson({ ...stale, last_beat: new Date().toISOString() } satisfies WorkerHeartbeat),
      ),
    );
    return true;
  });
  const reaped = await reaper.cycle();
  assert.equal(beatsAgain.length, 1, "the reaper's removal passed the relay");
  await Promise.all(beatsAgain);

  assert.deepEqual(reaped, [], 'a host that beat again is not reaped');
  const job = await jobs.get(envelope.job_id);
  assert.equal(job?.record?.status, 'started', JSON.stringify(job?.record));
  const beat = await workers.get(host);
  assert.equal(beat?.operation, 'PUT', 'its heartbeat is kept');
  assert.equal(decodeMessage(WorkerHeartbeat, beat.value).draining, false);
});
