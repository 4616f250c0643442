import { test } from 'node:test';
import { NO_COMMIT_DRIVERS } from './job-fixtures.js';
import assert from 'node:assert/strict';
import {
  MAX_ANSWERS,
  SendCommandRequest,
  SendConfigRequest,
  check,
  normalizeSubmission,
} from '../src/mod.js';

const basic = { username: 'u', password: 'p' };

test('when answers are valid, then the job spec keeps them and a body without them has none', () => {
  const answers = [
    { prompt: '\\[confirm\\]$', answer: '' },
    { prompt: '(?i)\\[yes/no\\]:\\s*$', answer: 'yes', command: 1 },
  ];
  const body = { commands: ['clear counters', 'crypto key generate rsa'], host: 'r1', answers };
  assert.equal(check(SendConfigRequest, body, 'body').ok, true);
  const n = normalizeSubmission(body, {
    kind: 'config',
    basic,
    contexts: ['default'],
    builtinDrivers: NO_COMMIT_DRIVERS,
  });
  assert.equal(n.ok, true);
  if (!n.ok) return;
  assert.deepEqual(n.spec.answers, answers);
  const plain = normalizeSubmission(
    { commands: ['show clock'], host: 'r1' },
    { kind: 'command', basic, contexts: ['default'], builtinDrivers: NO_COMMIT_DRIVERS },
  );
  assert.equal(plain.ok, true);
  if (plain.ok) assert.equal('answers' in plain.spec, false, 'records stay as they were');
});

test('when an answer holds a line break or control character, then 422 at the field, never the value', () => {
  for (const [field, value] of [
    ['answer', 'yes\nreload'],
    ['answer', 'y\u0003'],
    ['prompt', 'a\rb'],
  ] as const) {
    const entry = { prompt: 'x', answer: 'y', [field]: value };
    const r = check(SendCommandRequest, { commands: ['x'], host: 'r1', answers: [entry] }, 'body');
    assert.equal(r.ok, false, `${field} ${JSON.stringify(value)}`);
    if (r.ok) continue;
    assert.deepEqual(r.issues[0]?.loc, ['body', 'answers', 0, field]);
    assert.equal(r.issues[0]?.type, 'control_character');
    assert.ok(!r.issues[0]?.msg.includes(value), 'the message does not echo the value');
  }
});

test('when an answer prompt is not a linear-time pattern or too complex, then 422 at answers.N.prompt', () => {
  for (const prompt of ['(a)\\1', '(?=x)y', 'x{1000}[^y]{1000}']) {
    const n = normalizeSubmission(
      {
        commands: ['x'],
        host: 'r1',
        answers: [
          { prompt: 'ok', answer: '' },
          { prompt, answer: '' },
        ],
      },
      { kind: 'command', basic, contexts: ['default'], builtinDrivers: NO_COMMIT_DRIVERS },
    );
    assert.equal(n.ok, false, prompt);
    if (n.ok) continue;
    assert.deepEqual(
      n.issues.map((i) => i.loc),
      [['body', 'answers', 1, 'prompt']],
      prompt,
    );
  }
});

test('when an answer names a command index the job does not have, then 422 at answers.N.command', () => {
  const n = normalizeSubmission(
    { commands: ['a', 'b'], host: 'r1', answers: [{ prompt: 'x', answer: '', command: 2 }] },
    { kind: 'command', basic, contexts: ['default'], builtinDrivers: NO_COMMIT_DRIVERS },
  );
  assert.equal(n.ok, false);
  if (!n.ok) assert.deepEqual(n.issues[0]?.loc, ['body', 'answers', 0, 'command']);
  const negative = check(
    SendCommandRequest,
    { commands: ['a'], host: 'r1', answers: [{ prompt: 'x', answer: '', command: -1 }] },
    'body',
  );
  assert.equal(negative.ok, false);
});

test('when answers are too many, empty-patterned or carry unknown keys, then the schema refuses them', () => {
  const many = Array.from({ length: MAX_ANSWERS + 1 }, () => ({ prompt: 'x', answer: '' }));
  for (const answers of [
    many,
    [{ prompt: '', answer: '' }],
    [{ prompt: 'x', answer: '', when: 1 }],
  ]) {
    const r = check(SendCommandRequest, { commands: ['a'], host: 'r1', answers }, 'body');
    assert.equal(r.ok, false);
  }
});
