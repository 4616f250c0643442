// A shard taken over twice while one of its jobs waits (owner A dies, B takes the shard and
// fences the job to its epoch, B dies before starting it, C takes the shard): C must fence the
// job to its own epoch too. The fence allowed only the copy the record named (a hand-back's
// rule), so C's fence, made from the envelope as stored (placement 0), was refused for good and C
// waited on the job forever, and every later job of its device behind it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DefaultTopology } from '@svc/proto';
import { ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { commandEnvelope } from '@svc/proto/test-fixtures';
import { natsWithClientForTest } from '../harness/mod.js';

test('when a shard is taken over twice while a job waits, then each new owner fences the job to its epoch and only the last one may start it', async (t) => {
  const { nc } = await natsWithClientForTest(t, 'test-shard-fence');
  const jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology));
  const envelope = commandEnvelope('fenced-twice');
  const queued = await jobs.enqueue(envelope, { announce: false });

  const byB = await jobs.fence(envelope.job_id, 2, queued);
  assert.equal(byB?.placement, 2, 'fenced to the second owner');
  const read = await jobs.get(envelope.job_id);
  const byC = await jobs.fence(envelope.job_id, 3, read!);
  assert.equal(byC?.placement, 3, 'fenced to the third owner');
  // An earlier owner's fence never moves it back.
  assert.equal(
    (await jobs.fence(envelope.job_id, 2, (await jobs.get(envelope.job_id))!))?.placement,
    3,
  );

  // Only the third owner's copy starts it: not the stored envelope, not the second owner's.
  assert.equal(await jobs.start(envelope, 'host-a'), null);
  assert.equal(await jobs.start({ ...envelope, placement: 2 }, 'host-b'), null);
  const started = await jobs.start({ ...envelope, placement: 3 }, 'host-c');
  assert.equal(started?.record.status, 'started');
  assert.equal(started?.record.actor_host, 'host-c');
});
