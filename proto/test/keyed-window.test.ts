import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyedWindow } from '../src/keyed-window.js';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('tasks of one key run one after the other in the order given, even when an earlier one is slower', async () => {
  const window = new KeyedWindow(8, () => undefined);
  const ended: string[] = [];
  let runningOfA = 0;
  let mostOfA = 0;
  const taskOfA = (name: string, ms: number) => async () => {
    runningOfA++;
    mostOfA = Math.max(mostOfA, runningOfA);
    await tick(ms);
    runningOfA--;
    ended.push(name);
  };
  await window.add('a', taskOfA('a1', 30));
  await window.add('a', taskOfA('a2', 1));
  await window.add('a', taskOfA('a3', 10));
  await window.drain();
  assert.deepEqual(ended, ['a1', 'a2', 'a3']);
  assert.equal(mostOfA, 1);
});

test('tasks of different keys overlap, at most `limit` at once', async () => {
  const window = new KeyedWindow(3, () => undefined);
  let running = 0;
  let most = 0;
  const started: string[] = [];
  for (let i = 0; i < 10; i++) {
    await window.add(`k${i}`, async () => {
      started.push(`k${i}`);
      running++;
      most = Math.max(most, running);
      await tick(5);
      running--;
    });
    assert.ok(window.size < 3, 'add resolves only once the window has room');
  }
  await window.drain();
  assert.equal(most, 3);
  assert.equal(started.length, 10);
  assert.equal(window.size, 0);
});

test('a failed task is reported and does not stop the next task of its key', async () => {
  const errors: unknown[] = [];
  const window = new KeyedWindow(4, (err) => errors.push(err));
  const ran: string[] = [];
  await window.add('a', async () => {
    await tick(5);
    throw new Error('publish failed');
  });
  await window.add('a', () => {
    ran.push('second');
    return Promise.resolve();
  });
  await window.drain();
  assert.deepEqual(ran, ['second']);
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /publish failed/);
});
