// The job's named operations against a real NATS server: over random sequences, each one moves
// the record only as the state machine allows (null otherwise, nothing written) and publishes
// exactly one event for each move it made, in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { jetstreamManager } from '@nats-io/jetstream';
import { DefaultTopology, Streams, Subjects, SvcError, type JobStatus } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { commandEnvelope } from '@svc/proto/test-fixtures';
import { NatsServerProcess, waitUntil } from '../harness/mod.js';

type Op = 'start' | 'finish' | 'failQueued' | 'failStarted' | 'cancel' | 'cancelQueued';
const OPS: Op[] = ['start', 'finish', 'failQueued', 'failStarted', 'cancel', 'cancelQueued'];

/** What the table lets `op` do from `status`: the status after, or null (refused). */
function modelOf(op: Op, status: JobStatus): JobStatus | null {
  switch (op) {
    case 'start':
      return status === 'queued' ? 'started' : null;
    case 'finish':
      return status === 'started' ? 'finished' : null;
    case 'failQueued':
      return status === 'queued' ? 'failed' : null;
    case 'failStarted':
      return status === 'started' ? 'failed' : null;
    case 'cancel':
      return status === 'queued' || status === 'started' ? 'cancelled' : null;
    case 'cancelQueued':
      return status === 'queued' ? 'cancelled' : null;
  }
}

test('over random sequences of named operations, the record follows the state machine and each move publishes its one event', async (t) => {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, 'test-jobs-lifecycle');
  t.after(async () => {
    await nc.close();
    await nats.stop();
  });
  const stores = await ensureTopology(nc, DefaultTopology);
  const jobs = await Jobs.open(nc, stores, { transientRetryMs: 2000 });
  // On the connection that publishes: once a flush returns, every event it sent is here.
  const events = new Map<string, JobStatus[]>();
  const sub = nc.subscribe('svc.events.job.>', {
    callback: (_err, msg) => {
      const [jobId, status] = msg.subject.split('.').slice(3);
      events.set(jobId!, [...(events.get(jobId!) ?? []), status as JobStatus]);
    },
  });
  t.after(() => sub.unsubscribe());

  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(fc.constantFrom(...OPS), { maxLength: 6 }), async (ops) => {
      const jobId = `lifecycle-${n++}`;
      const envelope = commandEnvelope(jobId);
      const queued = await jobs.enqueue(envelope);
      envelope.record_revision = queued.revision;
      let model: JobStatus = 'queued';
      const expected: JobStatus[] = ['queued'];
      for (const op of ops) {
        // An operation recognises its own earlier write by its millisecond time stamp (a retry
        // after a lost answer): each one here starts on a later millisecond than the last.
        const last = Date.now();
        while (Date.now() === last) await new Promise((r) => setImmediate(r));
        const next = modelOf(op, model);
        const stored = await jobs.get(jobId);
        assert.ok(stored);
        const error = new SvcError('INTERNAL', 'x');
        const written =
          op === 'start'
            ? ((await jobs.start(envelope, 'host-1'))?.record ?? null)
            : op === 'finish'
              ? await jobs.finish(stored, { results: { 'show version': 'ok' } })
              : op === 'failQueued'
                ? await jobs.fail(jobId, 'queued', error)
                : op === 'failStarted'
                  ? await jobs.fail(jobId, 'started', error)
                  : op === 'cancel'
                    ? ((await jobs.cancel(jobId, 'job cancelled'))?.record ?? null)
                    : ((await jobs.cancel(jobId, 'job cancelled', ['queued']))?.record ?? null);
        assert.equal(written?.status ?? null, next, `${op} from ${model}`);
        if (next !== null) {
          model = next;
          expected.push(next);
        }
        assert.equal((await jobs.get(jobId))?.record.status, model, `${op}: record`);
      }
      await nc.flush();
      assert.deepEqual(events.get(jobId), expected);
    }),
    { numRuns: 40 },
  );
});

// Issue 26: a job's events come from its operations without a stored message per state beyond
// the record; live subscribers and a follower of the record still see every status.
test('when job events are not kept (the default), a subscriber and a follower of the record see every status while SVC_EVENTS stores none of them; with JOB_EVENTS_REPLAY the stream keeps each', async (t) => {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, 'test-jobs-events-kept');
  t.after(async () => {
    await nc.close();
    await nats.stop();
  });
  const jsm = await jetstreamManager(nc);
  const live: string[] = [];
  const sub = nc.subscribe('svc.events.job.>', {
    callback: (_err, m) => void live.push(m.subject),
  });
  t.after(() => sub.unsubscribe());

  /** Runs a job of a batch through queued, started, finished; returns what its follower saw. */
  const runJob = async (jobs: Jobs, jobId: string): Promise<JobStatus[]> => {
    const envelope = { ...commandEnvelope(jobId), batch_id: `batch-${jobId}` };
    const queued = await jobs.enqueue(envelope);
    envelope.record_revision = queued.revision;
    const follower = await jobs.follow(jobId, (err) => assert.fail(String(err)));
    const seen: JobStatus[] = [];
    const records = follower.records[Symbol.asyncIterator]();
    // The follower's first record (the current one) before the job moves on.
    const first = await records.next();
    if (!first.done) seen.push(first.value.record.status);
    const followed = (async () => {
      for (let r = await records.next(); !r.done; r = await records.next()) {
        seen.push(r.value.record.status);
        if (r.value.record.status === 'finished') follower.stop();
      }
    })();
    const started = await jobs.start(envelope, 'host-1');
    assert.ok(started);
    await jobs.finish(started, { results: { 'show version': 'ok' } });
    await followed;
    return seen;
  };
  /** Messages SVC_EVENTS stores on the subjects `filter` matches (counted per subject). */
  const stored = async (filter: string) => {
    const { state } = await jsm.streams.info(Streams.events, { subjects_filter: filter });
    return Object.values(state.subjects ?? {}).reduce((a, b) => a + b, 0);
  };

  const jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology), {
    transientRetryMs: 2000,
  });
  assert.deepEqual(await runJob(jobs, 'not-kept'), ['queued', 'started', 'finished']);
  await nc.flush();
  assert.deepEqual(
    live,
    ['queued', 'started', 'finished'].map((s) => `svc.events.job.not-kept.${s}`),
  );
  // The batch's events, published after each job event on the same connection, are stored: once
  // the three are, a stored job event would be too.
  await waitUntil(
    async () => (await stored('svc.events.batch.>')) === 3,
    'the first batch events stored',
  );
  assert.equal(await stored('>'), 3, 'only the batch events are stored');

  // A setting for outside JetStream followers that replay job events (docs/events.md).
  await ensureTopology(nc, { ...DefaultTopology, jobEventsKept: true });
  await runJob(jobs, 'kept');
  await waitUntil(
    async () => (await stored('svc.events.batch.>')) === 6,
    'the second batch events stored',
  );
  assert.equal(await stored('svc.events.job.>'), 3, 'each state of the job is stored');
  // A later service that leaves the setting off removes nothing an operator chose to keep.
  await ensureTopology(nc, DefaultTopology);
  const info = await jsm.streams.info(Streams.events);
  assert.ok(info.config.subjects?.includes(Subjects.eventsAll), 'the subject stays');
});
