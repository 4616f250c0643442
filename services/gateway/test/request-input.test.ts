import { test } from 'node:test';
import assert from 'node:assert/strict';
import { askedCommandMode, type CommandMode, type ValidationIssue } from '@svc/proto';
import { buildRequestValidator, issuesOf } from '../src/request-input.js';
import { BatchJobsQuery } from '../src/routes/batches.js';
import { ListQuery } from '../src/routes/job-queries.js';
import { SubmitHeaders } from '../src/routes/route-schemas.js';
import { Type } from 'typebox';

// The job-list query as the hand-written parser it replaced judged it: the same values, the
// same issues.
const compile = buildRequestValidator({});
const query = compile({ schema: ListQuery, httpPart: 'querystring' }) as unknown as {
  convert: (q: unknown) => Record<string, unknown>;
  check: { (v: unknown): boolean; errors?: Parameters<typeof issuesOf>[0] | null };
};

function judge(q: Record<string, string | string[]>): Record<string, unknown> | ValidationIssue[] {
  const value = query.convert(q);
  return query.check(value) ? value : issuesOf(query.check.errors ?? [], 'querystring');
}

test('list query: integers from text with blanks and signs, defaults, the last of repeated values', () => {
  assert.deepEqual(judge({}), { page: 1, per_page: 20 });
  assert.deepEqual(judge({ page: ' +3 ', per_page: '05' }), { page: 3, per_page: 5 });
  assert.deepEqual(judge({ status: ['queued', 'failed'], page: ['9', '2'] }), {
    status: 'failed',
    page: 2,
    per_page: 20,
  });
  assert.deepEqual(judge({ other: 'ignored' }), { other: 'ignored', page: 1, per_page: 20 });
});

test('list query: text that is not an integer is int_parsing, every problem at once', () => {
  for (const text of ['1.5', '1e1', '0x10', '', 'ten']) {
    assert.deepEqual(judge({ page: text }), [
      { loc: ['query', 'page'], msg: 'value is not a valid integer', type: 'int_parsing' },
    ]);
  }
  assert.deepEqual(judge({ page: 'x', per_page: '0' }), [
    { loc: ['query', 'page'], msg: 'value is not a valid integer', type: 'int_parsing' },
    {
      loc: ['query', 'per_page'],
      msg: 'ensure this value is greater than or equal to 1',
      type: 'greater_than_equal',
    },
  ]);
  assert.deepEqual(judge({ page: '99999999999999999999' }), [
    {
      loc: ['query', 'page'],
      msg: `ensure this value is less than or equal to ${Number.MAX_SAFE_INTEGER}`,
      type: 'less_than_equal',
    },
  ]);
});

test('list query: status and tag keep their wording; a tag key ends at the first colon', () => {
  assert.deepEqual(judge({ status: 'done' }), [
    {
      loc: ['query', 'status'],
      msg: 'value is not one of ["queued","started","finished","failed","cancelled"]',
      type: 'enum',
    },
  ]);
  const tagIssue = [
    {
      loc: ['query', 'tag'],
      msg: 'tag must be key:value (each 1-64 of A-Z a-z 0-9 _ : -)',
      type: 'value_error',
    },
  ];
  for (const tag of ['nocolon', 'bad key:v', ':v', 'k:', `a:${'b'.repeat(60)}:${'c'.repeat(60)}`]) {
    assert.deepEqual(judge({ tag }), tagIssue, tag);
  }
  assert.deepEqual(judge({ tag: 'site:lab:1' }), { tag: 'site:lab:1', page: 1, per_page: 20 });
});

test('X-Request-ID: a UUID v4 in any case or empty; anything else named as the header', () => {
  const headers = compile({ schema: Type.Object(SubmitHeaders), httpPart: 'headers' }) as {
    (v: unknown): boolean;
    errors?: Parameters<typeof issuesOf>[0] | null;
  };
  for (const id of ['', '3F1C9A4E-8D1B-4E53-9A51-2F7F3E1F0C11']) {
    assert.equal(headers({ 'x-request-id': id }), true, id);
  }
  for (const id of ['not-a-uuid', '3f1c9a4e-8d1b-1e53-9a51-2f7f3e1f0c11']) {
    assert.equal(headers({ 'x-request-id': id }), false, id);
    assert.deepEqual(issuesOf(headers.errors ?? [], 'headers'), [
      {
        loc: ['header', 'X-Request-ID'],
        msg: 'value is not a valid UUID version 4',
        type: 'uuid_parsing',
      },
    ]);
  }
});

test('X-Svc-Command-Policy: read-only or any in any case, blanks around, or empty; anything else one issue at the header, both headers at once', () => {
  const headers = compile({ schema: Type.Object(SubmitHeaders), httpPart: 'headers' }) as {
    (v: unknown): boolean;
    errors?: Parameters<typeof issuesOf>[0] | null;
  };
  const asked = new Map<string, CommandMode | null>([
    ['read-only', 'read-only'],
    ['Read-Only', 'read-only'],
    [' ANY ', 'any'],
    ['any', 'any'],
    ['', null],
    [' ', null],
  ]);
  for (const [value, mode] of asked) {
    assert.equal(headers({ 'x-svc-command-policy': value }), true, value);
    assert.equal(askedCommandMode(value), mode, value);
  }
  assert.equal(askedCommandMode(undefined), null);
  const policyIssue = {
    loc: ['header', 'X-Svc-Command-Policy'],
    msg: 'value is not read-only or any',
    type: 'enum',
  };
  for (const value of ['anything', 'readonly', 'read only', 'read-only-ish', 'any,read-only']) {
    assert.equal(headers({ 'x-svc-command-policy': value }), false, value);
    assert.deepEqual(issuesOf(headers.errors ?? [], 'headers'), [policyIssue], value);
  }
  assert.equal(headers({ 'x-request-id': 'x', 'x-svc-command-policy': 'x' }), false);
  assert.deepEqual(issuesOf(headers.errors ?? [], 'headers'), [
    {
      loc: ['header', 'X-Request-ID'],
      msg: 'value is not a valid UUID version 4',
      type: 'uuid_parsing',
    },
    policyIssue,
  ]);
});

test('batch jobs page query: defaults 1 and 50, the last of repeated values, its own wording for every problem at once', () => {
  const q = compile({ schema: BatchJobsQuery, httpPart: 'querystring' }) as unknown as {
    convert: (q: unknown) => Record<string, unknown>;
    check: { (v: unknown): boolean; errors?: Parameters<typeof issuesOf>[0] | null };
  };
  const judgePage = (v: Record<string, string | string[]>) => {
    const value = q.convert(v);
    return q.check(value) ? value : issuesOf(q.check.errors ?? [], 'querystring');
  };
  assert.deepEqual(judgePage({}), { page: 1, per_page: 50 });
  assert.deepEqual(judgePage({ page: ['9', '2'], per_page: ' 500 ' }), { page: 2, per_page: 500 });
  assert.deepEqual(judgePage({ page: '1e1', per_page: '501' }), [
    {
      loc: ['query', 'page'],
      msg: `must be an integer from 1 to ${Number.MAX_SAFE_INTEGER}`,
      type: 'value_error',
    },
    { loc: ['query', 'per_page'], msg: 'must be an integer from 1 to 500', type: 'value_error' },
  ]);
});
