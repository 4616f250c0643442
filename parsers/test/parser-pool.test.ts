import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { ParserErrorCode, TemplateError, TextFsmError } from '../src/errors.js';
import { ParserPool } from '../src/parser-pool.js';
import { ntcSkip, ntcTemplatesDir } from './shared-dir.js';

// Exponential backtracking in any backtracking engine.
const EVIL = 'Value A ((a+)+b)\n\nStart\n  ^${A} -> Record\n';

test('when a parse backtracks past the budget, then it rejects with a timeout and the pool recovers', async (t) => {
  const pool = new ParserPool({ size: 1, timeoutMs: 300 });
  t.after(() => pool.close());
  const slow = pool.run({ kind: 'textfsm', template: EVIL, input: 'a'.repeat(40) + 'c' });
  await assert.rejects(
    slow,
    (err: unknown) => err instanceof TemplateError && err.code === ParserErrorCode.Timeout,
  );
  const ok = await pool.run({ kind: 'textfsm', template: EVIL, input: 'aab' });
  assert.deepEqual(ok, [{ a: 'aab' }]);
});

test('when requests run concurrently, then each gets its own answer', async (t) => {
  const pool = new ParserPool({ size: 2, timeoutMs: 5000 });
  t.after(() => pool.close());
  const tpl = 'Value A (\\d+)\n\nStart\n  ^${A} -> Record\n';
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      pool.run({ kind: 'textfsm', template: tpl, input: `${i}\n` }),
    ),
  );
  assert.deepEqual(
    results,
    Array.from({ length: 10 }, (_, i) => [{ a: String(i) }]),
  );
});

test('when a parse fails, then the error is rebuilt with its class and code', async (t) => {
  const pool = new ParserPool({ size: 1, timeoutMs: 5000 });
  t.after(() => pool.close());
  await assert.rejects(
    pool.run({ kind: 'textfsm', template: 'Value A (x)\n\nOther\n', input: '' }),
    TemplateError,
  );
  await assert.rejects(
    pool.run({ kind: 'textfsm', template: 'Value A (x)\n\nStart\n  ^x -> Error\n', input: 'x' }),
    TextFsmError,
  );
});

test(
  'when an index request is sent, then the template is looked up and parsed in the worker',
  { skip: ntcSkip },
  async (t) => {
    const pool = new ParserPool({ size: 1, timeoutMs: 5000 });
    t.after(() => pool.close());
    const input =
      'Cisco IOS Software, C2960 Software (C2960-LANBASEK9-M), Version 15.0(2)SE4, RELEASE SOFTWARE (fc1)\nrouter1 uptime is 1 week, 2 days, 3 hours, 4 minutes\n';
    const result = (await pool.run({
      kind: 'textfsm-index',
      dir: ntcTemplatesDir,
      platform: 'cisco_ios',
      command: 'sh ver',
      input,
    })) as Array<Record<string, unknown>>;
    assert.equal(result[0]?.['hostname'], 'router1');
    assert.equal(result[0]?.['version'], '15.0(2)SE4');
  },
);

test(
  'when the s300 vlan template meets a long blank-dash line, then the budget stops it',
  { skip: ntcSkip },
  async (t) => {
    const pool = new ParserPool({ size: 1, timeoutMs: 500 });
    t.after(() => pool.close());
    const input = ' Vlan  Name  Ports  Type  Authorization\n' + ' -'.repeat(30) + ' x\n';
    await assert.rejects(
      pool.run({
        kind: 'textfsm',
        templatePaths: [join(ntcTemplatesDir, 'cisco_s300_show_vlan.textfsm')],
        input,
      }),
      (err: unknown) => err instanceof TemplateError && err.code === ParserErrorCode.Timeout,
    );
  },
);

test('when options are invalid, then the constructor rejects them', () => {
  assert.throws(() => new ParserPool({ size: 0 }), RangeError);
  assert.throws(() => new ParserPool({ timeoutMs: -1 }), RangeError);
});

test('when a parse waits for a worker longer than its budget, then it fails with a timeout instead of running late', async (t) => {
  const pool = new ParserPool({ size: 1, timeoutMs: 400 });
  t.after(() => pool.close());
  const slow = pool.run({ kind: 'textfsm', template: EVIL, input: 'a'.repeat(40) + 'c' });
  const waiting = pool.run({ kind: 'textfsm', template: EVIL, input: 'aab' });
  const order: string[] = [];
  const settled = (name: string, p: Promise<unknown>) =>
    p.then(
      () => order.push(`${name} ok`),
      (err: unknown) => order.push(`${name} ${err instanceof TemplateError ? err.code : 'error'}`),
    );
  await Promise.all([settled('slow', slow), settled('waiting', waiting)]);
  // The waiting parse's budget ran out in the queue, before the slow one's ran out running.
  assert.deepEqual(order, [
    `waiting ${ParserErrorCode.Timeout}`,
    `slow ${ParserErrorCode.Timeout}`,
  ]);
});

test('when one caller holds half of the workers and another caller waits, then the next free worker goes to the other caller', async (t) => {
  const pool = new ParserPool({ size: 2, timeoutMs: 3000 });
  t.after(() => pool.close());
  const tpl = 'Value A (\\d+)\n\nStart\n  ^${A} -> Record\n';
  const order: string[] = [];
  const track = (name: string, p: Promise<unknown>) =>
    p.then(
      () => order.push(name),
      () => order.push(`${name} failed`),
    );
  // Caller x takes both workers while nobody waits: one long parse, one quick one.
  const x1 = track(
    'x1',
    pool.run({ kind: 'textfsm', template: EVIL, input: 'a'.repeat(40) + 'c' }, 'x'),
  );
  const x2 = track('x2', pool.run({ kind: 'textfsm', template: tpl, input: '1\n' }, 'x'));
  // Then x queues another long parse before y queues a quick one.
  const x3 = track(
    'x3',
    pool.run({ kind: 'textfsm', template: EVIL, input: 'a'.repeat(40) + 'c' }, 'x'),
  );
  const y1 = track('y1', pool.run({ kind: 'textfsm', template: tpl, input: '2\n' }, 'y'));
  await Promise.all([x1, x2, x3, y1]);
  // When x2 ends, x holds one worker of two (half): the freed worker serves y before x3.
  assert.ok(order.indexOf('y1') < order.indexOf('x1 failed'), order.join(', '));
});
