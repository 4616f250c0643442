import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as turn } from 'node:timers/promises';
import { Mailbox } from '../src/actor-host/mailbox.js';
import { RunningJobs } from '../src/actor-host/running-jobs.js';

// A shard's release and a host's stop wait on these signals instead of polling: each must
// resolve when the last job ends, and not before.

/** A promise with its resolver, to end a job when the test says so. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

test("when a device's jobs end, then whenIdle resolves once the last has ended, not before", async () => {
  const ends = [deferred(), deferred()];
  let next = 0;
  const mailbox = new Mailbox<number>(
    1,
    () => ends[next++]!.promise,
    () => undefined,
  );
  await mailbox.whenIdle(); // nothing runs: at once
  mailbox.push(1);
  mailbox.push(2);
  let idle = false;
  void mailbox.whenIdle().then(() => (idle = true));
  ends[0]!.resolve();
  await turn(); // the first job's end is handled: the second runs now
  assert.equal(idle, false);
  assert.equal(mailbox.running, 1);
  ends[1]!.resolve();
  await mailbox.whenIdle();
  assert.equal(idle, true);
  assert.equal(mailbox.running, 0);
});

test('when the running jobs end, then whenEmpty resolves once the last is deleted, not before', async () => {
  const running = new RunningJobs();
  await running.whenEmpty(); // nothing runs: at once
  running.set('a', new AbortController());
  running.set('b', new AbortController());
  let empty = false;
  void running.whenEmpty().then(() => (empty = true));
  running.delete('a');
  running.delete('missing'); // not running: no signal
  await turn();
  assert.equal(empty, false);
  running.delete('b');
  await running.whenEmpty();
  assert.equal(empty, true);
  assert.equal(running.size, 0);
});
