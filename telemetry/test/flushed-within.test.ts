import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { flushedWithin } from '../src/logging.js';

/** A destination that keeps what it is given and counts its flushes; `flushed` resolves at each. */
function recording() {
  const lines: string[] = [];
  let flushes = 0;
  let onFlush: () => void = () => undefined;
  return {
    lines,
    flushes: () => flushes,
    flushed: () => new Promise<void>((resolve) => (onFlush = resolve)),
    write(line: string) {
      lines.push(line);
    },
    flush() {
      flushes++;
      onFlush();
    },
  };
}

/** The flush timer never keeps a process alive: the test does, while it waits. */
function keepAlive(t: TestContext): void {
  const timer = setInterval(() => undefined, 60_000);
  t.after(() => clearInterval(timer));
}

test('when lines are written, then the buffer is flushed once within the period, and again only after later lines', async (t) => {
  keepAlive(t);
  const dest = recording();
  const out = flushedWithin(dest, 20);
  const first = dest.flushed();
  out.write('a\n');
  out.write('b\n');
  await first;
  assert.deepEqual(dest.lines, ['a\n', 'b\n']);
  assert.equal(dest.flushes(), 1, 'two lines, one flush');
  const second = dest.flushed();
  out.write('c\n');
  await second;
  assert.equal(dest.flushes(), 2);
});

test('when no line is written, then nothing is flushed (an idle process is not woken every period)', async (t) => {
  keepAlive(t);
  const idle = recording();
  flushedWithin(idle, 20);
  // Another destination with the same period flushed a line: a period has passed for both.
  const busy = recording();
  const flushed = busy.flushed();
  flushedWithin(busy, 20).write('x\n');
  await flushed;
  assert.equal(idle.flushes(), 0);
});
