import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EndedJobs } from '../src/actor-host/ended-jobs.js';
import { Mailbox } from '../src/actor-host/mailbox.js';

test('when more jobs end than are remembered, then the oldest is forgotten first and one seen again is kept', () => {
  const ended = new EndedJobs(2);
  ended.add('j1');
  ended.add('j2');
  ended.add('j1'); // seen again: now the newest
  ended.add('j3');
  assert.equal(ended.has('j2'), false);
  assert.equal(ended.has('j1'), true);
  assert.equal(ended.has('j3'), true);
});

test('when a waiting job is taken out of turn, then the others keep their order and it never runs from the queue', async () => {
  const ran: string[] = [];
  let release!: () => void;
  const first = new Promise<void>((r) => (release = r));
  let idle!: () => void;
  const idled = new Promise<void>((r) => (idle = r));
  const box = new Mailbox<string>(
    1,
    async (id) => {
      ran.push(id);
      if (id === 'a') await first;
    },
    idle,
  );
  for (const id of ['a', 'b', 'c', 'd']) box.push(id);
  assert.equal(
    box.takeFirst((id) => id === 'c'),
    'c',
  );
  assert.equal(
    box.takeFirst((id) => id === 'x'),
    undefined,
  );
  release();
  await idled;
  assert.deepEqual(ran, ['a', 'b', 'd']);
});
