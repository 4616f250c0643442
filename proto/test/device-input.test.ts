// Property-based tests of the device-bound input rules over the compiled validators: every field
// whose text reaches a device refuses a line break or control character at that field, and
// accepts any other text within the limits.
import { test } from 'node:test';
import { NO_COMMIT_DRIVERS } from './job-fixtures.js';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { TSchema } from 'typebox';
import {
  SendCommandRequest,
  SendCommandStructuredRequest,
  SendConfigRequest,
  V1SendCommandRequest,
  V1SendCommandStructuredRequest,
} from '../src/messages/send-command.js';
import { check } from '../src/validate.js';
import { normalizeSubmission } from '../src/submission.js';
import { DEFAULT_DEVICE_INPUT_LIMITS, MAX_SECRET_LENGTH } from '../src/device-input.js';
import type { JobKind } from '../src/messages/job.js';

const SCHEMAS: [string, TSchema, JobKind][] = [
  ['send-command', SendCommandRequest, 'command'],
  ['send-config', SendConfigRequest, 'config'],
  ['structured', SendCommandStructuredRequest, 'structured'],
  ['v1 send_command', V1SendCommandRequest, 'command'],
  ['v1 structured', V1SendCommandStructuredRequest, 'structured'],
];

/** The rule written out independently of the implementation (the test's oracle). */
function forbidden(cp: number): boolean {
  return cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f) || cp === 0x2028 || cp === 0x2029;
}
const clean = (s: string) => [...s].every((ch) => !forbidden(ch.codePointAt(0)!));

const FORBIDDEN_CHARS = [
  ...Array.from({ length: 0x20 }, (_, i) => i),
  0x7f,
  ...Array.from({ length: 0x20 }, (_, i) => 0x80 + i),
  0x2028,
  0x2029,
].map((cp) => String.fromCodePoint(cp));

/** Any text: ASCII, any code point, whole graphemes. */
const anyText = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
);
const withForbidden = fc
  .tuple(anyText, fc.constantFrom(...FORBIDDEN_CHARS), anyText)
  .map(([a, c, b]) => a + c + b);
const allowed = anyText.filter(clean);

type Field = 'username' | 'password' | 'enable' | 'expect_string' | 'command';

function bodyWith(field: Field, value: string, at = 0): Record<string, unknown> {
  const commands = ['show version', 'show clock', 'show ip route'];
  const body: Record<string, unknown> = {
    host: '10.0.0.1',
    username: 'svc',
    password: 'pw',
    commands,
  };
  if (field === 'command') commands[at] = value;
  else body[field] = value;
  return body;
}

test('when any device-bound field holds a forbidden character, then the schema refuses it at that field', () => {
  for (const [name, schema] of SCHEMAS) {
    fc.assert(
      fc.property(
        fc.constantFrom<Field>('username', 'password', 'enable', 'expect_string', 'command'),
        fc.integer({ min: 0, max: 2 }),
        withForbidden,
        (field, at, value) => {
          const r = check(schema, bodyWith(field, value, at), 'body');
          assert.equal(r.ok, false, name);
          if (r.ok) return;
          const loc = field === 'command' ? ['body', 'commands', at] : ['body', field];
          const issue = r.issues.find((i) => JSON.stringify(i.loc) === JSON.stringify(loc));
          assert.ok(issue, `${name}: ${JSON.stringify(r.issues)}`);
          assert.equal(issue.type, 'control_character');
          // The message names the character, never the value (it may be a secret).
          if (value.length > 8) assert.ok(!issue.msg.includes(value), issue.msg);
        },
      ),
      { numRuns: 300 },
    );
  }
});

test('when device-bound text has no forbidden character and is within the limits, then it is accepted', () => {
  for (const [name, schema, kind] of SCHEMAS) {
    fc.assert(
      fc.property(
        fc.constantFrom<Field>('username', 'password', 'enable', 'command'),
        fc.integer({ min: 0, max: 2 }),
        allowed,
        (field, at, value) => {
          // A Bearer caller must give a non-empty username and password.
          fc.pre(!((field === 'username' || field === 'password') && value === ''));
          const body = bodyWith(field, value, at);
          const r = check<Parameters<typeof normalizeSubmission>[0]>(schema, body, 'body');
          assert.equal(r.ok, true, `${name}: ${JSON.stringify(r.ok ? null : r.issues)}`);
          if (!r.ok) return;
          const n = normalizeSubmission(r.value, {
            kind,
            basic: null,
            contexts: ['default'],
            builtinDrivers: NO_COMMIT_DRIVERS,
          });
          assert.equal(n.ok, true, `${name}: ${JSON.stringify(n.ok ? null : n.issues)}`);
        },
      ),
      { numRuns: 300 },
    );
  }
});

test('when Basic credentials hold a forbidden character, then the submission is refused at the header', () => {
  fc.assert(
    fc.property(fc.boolean(), withForbidden, allowed, (inUser, bad, good) => {
      const basic = inUser
        ? { username: bad, password: good || 'pw' }
        : { username: good || 'svc', password: bad };
      const n = normalizeSubmission(
        { host: '10.0.0.1', commands: ['show version'] },
        { kind: 'command', basic, contexts: ['default'], builtinDrivers: NO_COMMIT_DRIVERS },
      );
      assert.equal(n.ok, false);
      if (n.ok) return;
      assert.deepEqual(n.issues[0]?.loc, ['header', 'Authorization']);
      assert.ok(n.issues[0]?.msg.startsWith(inUser ? 'Basic username' : 'Basic password'));
    }),
    { numRuns: 200 },
  );
});

test('when a job has more commands or longer commands than the limits, then it is refused at the field', () => {
  const { maxCommands, maxCommandLength } = DEFAULT_DEVICE_INPUT_LIMITS;
  const opts = {
    kind: 'command' as const,
    basic: null,
    contexts: ['default'],
    builtinDrivers: NO_COMMIT_DRIVERS,
  };
  const base = { host: '10.0.0.1', username: 'svc', password: 'pw' };
  const many = normalizeSubmission(
    { ...base, commands: Array.from({ length: maxCommands + 1 }, () => 'show clock') },
    opts,
  );
  assert.equal(many.ok, false);
  if (!many.ok) assert.deepEqual(many.issues[0]?.loc, ['body', 'commands']);
  const atLimit = normalizeSubmission(
    { ...base, commands: Array.from({ length: maxCommands }, () => 'x'.repeat(maxCommandLength)) },
    opts,
  );
  assert.equal(atLimit.ok, true);
  const long = normalizeSubmission(
    { ...base, commands: ['show clock', 'x'.repeat(maxCommandLength + 1)] },
    opts,
  );
  assert.equal(long.ok, false);
  if (!long.ok) assert.deepEqual(long.issues[0]?.loc, ['body', 'commands', 1]);
  const custom = normalizeSubmission(
    { ...base, commands: ['a', 'b', 'c'] },
    { ...opts, limits: { maxCommands: 2, maxCommandLength: 10 } },
  );
  assert.equal(custom.ok, false);
  const secret = check(
    SendCommandRequest,
    { ...base, enable: 'e'.repeat(MAX_SECRET_LENGTH + 1), commands: ['x'] },
    'body',
  );
  assert.equal(secret.ok, false);
  if (!secret.ok) assert.deepEqual(secret.issues[0]?.loc, ['body', 'enable']);
});
