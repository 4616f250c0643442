import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JobStatus, RecordSummary } from '@svc/proto';
import { JobCountLedger, type JobCountSink } from '../src/job-counts.js';

const SINCE = Date.parse('2026-11-27T00:00:00.000Z');
const at = (seconds: number) => new Date(SINCE + seconds * 1000).toISOString();

/** A sink that writes down what it is told, one line per call. */
function recorder(): { sink: JobCountSink; said: string[] } {
  const said: string[] = [];
  return {
    said,
    sink: {
      status: (status) => said.push(status),
      queueTime: (seconds) => said.push(`waited ${seconds}`),
      ended: (platform, status, ran) => said.push(`ended ${platform} ${status} ran ${ran}`),
    },
  };
}

function summary(
  status: JobStatus,
  times: { q: number; s?: number; e?: number },
  platform = 'cisco_ios',
): RecordSummary {
  return {
    status,
    platform,
    enqueued_at: at(times.q),
    started_at: times.s === undefined ? null : at(times.s),
    ended_at: times.e === undefined ? null : at(times.e),
  };
}

test('when a job is seen at each of its states, then each state is counted once', () => {
  const { sink, said } = recorder();
  const ledger = new JobCountLedger(SINCE, sink);
  ledger.note('a', summary('queued', { q: 1 }));
  ledger.note('a', summary('queued', { q: 1 })); // a write that changed no state (a placement)
  ledger.note('a', summary('started', { q: 1, s: 3 }));
  ledger.note('a', summary('finished', { q: 1, s: 3, e: 4 }));
  assert.deepEqual(said, [
    'queued',
    'started',
    'waited 2',
    'finished',
    'ended cisco_ios finished ran 1',
  ]);
});

test('when a job went through every state between two reads, then its last write counts them all', () => {
  const { sink, said } = recorder();
  new JobCountLedger(SINCE, sink).note('b', summary('finished', { q: 1, s: 1.5, e: 2 }));
  assert.deepEqual(said, [
    'queued',
    'started',
    'waited 0.5',
    'finished',
    'ended cisco_ios finished ran 0.5',
  ]);
});

test('when a job was seen queued and then ended, then only what followed is counted', () => {
  const { sink, said } = recorder();
  const ledger = new JobCountLedger(SINCE, sink);
  ledger.note('c', summary('queued', { q: 1 }));
  said.length = 0;
  ledger.note('c', summary('failed', { q: 1, s: 2, e: 5 }, 'arista_eos'));
  assert.deepEqual(said, ['started', 'waited 1', 'failed', 'ended arista_eos failed ran 3']);
});

test('when a queued job is cancelled, then it ends without a start or a run time', () => {
  const { sink, said } = recorder();
  new JobCountLedger(SINCE, sink).note('d', summary('cancelled', { q: 1, e: 2 }));
  assert.deepEqual(said, ['queued', 'cancelled', 'ended cisco_ios cancelled ran null']);
});

test('when an ended job is written again (a cancelled job gets its outputs), then nothing more is counted', () => {
  const { sink, said } = recorder();
  const ledger = new JobCountLedger(SINCE, sink);
  ledger.note('e', summary('cancelled', { q: 1, s: 2, e: 3 }));
  const counted = said.length;
  ledger.note('e', summary('cancelled', { q: 1, s: 2, e: 3 }));
  assert.equal(said.length, counted, said.join(', '));
});

test('when a job had states before the counts began, then those are not counted', () => {
  const { sink, said } = recorder();
  const ledger = new JobCountLedger(SINCE, sink);
  ledger.note('f', summary('finished', { q: -5, s: -4, e: 2 }));
  ledger.note('g', summary('started', { q: -5, s: 1 }));
  assert.deepEqual(said, ['finished', 'ended cisco_ios finished ran 6', 'started', 'waited 6']);
});

test('when a job record is deleted before its end, then a later record of that id counts from the start', () => {
  const { sink, said } = recorder();
  const ledger = new JobCountLedger(SINCE, sink);
  ledger.note('h', summary('queued', { q: 1 }));
  ledger.forget('h');
  ledger.note('h', summary('queued', { q: 2 }));
  assert.deepEqual(said, ['queued', 'queued']);
});

test('when a record carries times that are not times, then its states are counted and nothing is timed', () => {
  const { sink, said } = recorder();
  new JobCountLedger(SINCE, sink).note('i', {
    ...summary('finished', { q: 1, s: 2, e: 3 }),
    enqueued_at: 'yesterday',
  });
  assert.deepEqual(said, ['started', 'finished', 'ended cisco_ios finished ran 1']);
});
