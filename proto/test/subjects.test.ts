import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Buckets,
  Consumers,
  JOB_SHARDS,
  LockKeys,
  MessageIds,
  SubjectParsers,
  Subjects,
  isJobId,
  jobShardOf,
} from '../src/subjects.js';

const JOB = '0b7a3c52-1f0e-4d7e-9c59-7c1e3c1d2a10';
const BATCH = 'b-9f2c';

test('message ids: one per job envelope, forwarded envelope, event and batch end', () => {
  assert.equal(MessageIds.envelope(JOB), JOB);
  assert.equal(MessageIds.forwarded(JOB), `${JOB}.f`);
  assert.equal(MessageIds.jobEvent(JOB, 'finished'), `${JOB}.finished`);
  assert.equal(MessageIds.batchJobEvent(BATCH, JOB, 'failed'), `${BATCH}.${JOB}.failed`);
  assert.equal(MessageIds.batchEnd(BATCH), `${BATCH}.end`);
  // A forwarded envelope is stored beside its own id in the same stream.
  assert.notEqual(MessageIds.forwarded(JOB), MessageIds.envelope(JOB));
});

test('each subject parser reads back what its builder wrote', () => {
  assert.equal(SubjectParsers.cancel(Subjects.cancel(JOB)), JOB);
  assert.deepEqual(SubjectParsers.jobEvent(Subjects.jobEvent(JOB, 'started')), {
    jobId: JOB,
    status: 'started',
  });
  assert.deepEqual(SubjectParsers.batchEvent(Subjects.batchJobEvent(BATCH, 'finished')), {
    batchId: BATCH,
    job: true,
    status: 'finished',
  });
  assert.deepEqual(SubjectParsers.batchEvent(Subjects.batchEvent(BATCH, 'cancelled')), {
    batchId: BATCH,
    job: false,
    name: 'cancelled',
  });
  assert.equal(SubjectParsers.kvKey(Buckets.jobs, `$KV.${Buckets.jobs}.${JOB}`), JOB);
  assert.equal(
    SubjectParsers.kvKey(Buckets.templates, `$KV.${Buckets.templates}.ctx.name`),
    'ctx.name',
  );
});

test('subjects of another shape parse to null', () => {
  assert.equal(SubjectParsers.cancel('svc.control.cancel'), null);
  assert.equal(SubjectParsers.cancel(`svc.control.cancel.${JOB}.extra`), null);
  assert.equal(SubjectParsers.cancel(`svc.events.job.${JOB}.finished`), null);
  assert.equal(SubjectParsers.jobEvent(`svc.events.job.${JOB}`), null);
  assert.equal(SubjectParsers.jobEvent(`svc.events.batch.${BATCH}.job.finished`), null);
  assert.equal(SubjectParsers.batchEvent(`svc.events.batch.${BATCH}.job`), null);
  assert.equal(SubjectParsers.batchEvent(`svc.events.batch.${BATCH}.other.finished`), null);
  assert.equal(SubjectParsers.batchEvent(`svc.events.batch.${BATCH}..x`), null);
  assert.equal(SubjectParsers.kvKey(Buckets.jobs, `$KV.${Buckets.failed}.${JOB}`), null);
  assert.equal(SubjectParsers.kvKey(Buckets.jobs, `$KV.${Buckets.jobs}.`), null);
});

test('when a header names a job, then only a job id passes (no subject wildcards, line breaks or other text)', () => {
  assert.equal(isJobId('3f1c9a4e-8d1b-4e53-9a51-2f7f3e1f0c11'), true);
  for (const bad of ['', 'job.>', '3f1c9a4e-8d1b-4e53-9a51-2f7f3e1f0c11\nx', 'a b', '*']) {
    assert.equal(isJobId(bad), false, JSON.stringify(bad));
  }
});

test('when a device key picks its shard, then the same key always picks the same shard, every shard is used, and none past the count', () => {
  const counts = new Array<number>(JOB_SHARDS).fill(0);
  for (let i = 0; i < 32 * JOB_SHARDS; i++) {
    const key = `default|10.${i >> 8}.${i & 255}.1|22`;
    const shard = jobShardOf(key);
    assert.equal(jobShardOf(key), shard);
    assert.ok(Number.isInteger(shard) && shard >= 0 && shard < JOB_SHARDS, `shard ${shard}`);
    counts[shard]!++;
  }
  // 32 keys per shard on average: a hash that lumped keys together would leave one far off.
  for (const [shard, n] of counts.entries()) assert.ok(n >= 12 && n <= 56, `shard ${shard}: ${n}`);
});

test('when a shard subject is built and parsed, then it names its context and shard, and a shard out of range is refused', () => {
  assert.equal(Subjects.jobShard('site-a', 7), 'svc.jobs.site-a.7');
  assert.deepEqual(SubjectParsers.jobShard(Subjects.jobShard('site-a', 7)), {
    context: 'site-a',
    shard: 7,
  });
  assert.equal(Subjects.jobShards('site-a'), 'svc.jobs.site-a.*');
  assert.equal(SubjectParsers.jobShard(Subjects.jobs('site-a')), null);
  assert.equal(SubjectParsers.jobShard('svc.jobs.site-a.07'), null);
  assert.equal(SubjectParsers.jobShard(`svc.jobs.site-a.${JOB_SHARDS}`), null);
  assert.throws(() => Subjects.jobShard('site-a', JOB_SHARDS), /not a job shard/);
  assert.throws(() => Subjects.jobShard('site-a', -1), /not a job shard/);
  assert.equal(Consumers.shard('site a', 3), 'shard_site_20a_3');
  assert.equal(LockKeys.shard('site-a', 3), 'shard.site-a.3');
});
