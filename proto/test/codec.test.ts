import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MalformedMessage,
  decodeMessage,
  decodeOrDrop,
  malformedMessagesDropped,
} from '../src/codec.js';
import { JobEnvelope, JobRecord, WorkerHeartbeat } from '../src/messages/job.js';
import { HeldEnvelope, deviceClaimOf } from '../src/messages/stored.js';
import { LockKeys } from '../src/subjects.js';
import { encodeJson } from '../src/codec.js';
import { commandSpec } from './job-fixtures.js';

const beat = {
  host_id: 'h1',
  contexts: ['default'],
  capacity: 4,
  busy: 0,
  active_jobs: 0,
  started_at: '2026-01-01T00:00:00.000Z',
  last_beat: '2026-01-01T00:00:01.000Z',
  pool_size: 0,
  pool_hits: 0,
  pool_misses: 0,
  draining: false,
};

test('a message of its schema decodes to its value', () => {
  assert.deepEqual(decodeMessage(WorkerHeartbeat, encodeJson(beat)), beat);
});

test('bad JSON and well-formed JSON of the wrong shape are both refused, naming where and never the values', () => {
  assert.throws(
    () => decodeMessage(WorkerHeartbeat, new TextEncoder().encode('{"host_id": ')),
    (err: unknown) => err instanceof MalformedMessage && err.issues[0]?.type === 'json_invalid',
  );
  const wrong = { ...beat, contexts: 'default', last_beat: 's3cret-value' } as unknown;
  assert.throws(
    () => decodeMessage(WorkerHeartbeat, encodeJson(wrong)),
    (err: unknown) =>
      err instanceof MalformedMessage &&
      err.kind === 'WorkerHeartbeat' &&
      err.issues.some((i) => i.loc.join('.') === 'message.contexts') &&
      !err.message.includes('s3cret'),
  );
});

test('a schema nested in another is checked alone too, whichever is compiled first', () => {
  assert.throws(() => decodeMessage(HeldEnvelope, encodeJson({})), MalformedMessage);
  assert.throws(() => decodeMessage(JobEnvelope, encodeJson({})), MalformedMessage);
  assert.throws(() => decodeMessage(JobRecord, encodeJson({ job_id: 'x' })), MalformedMessage);
});

test('decodeOrDrop logs and counts a malformed message by consumer and returns null', () => {
  const lines: object[] = [];
  const log = { warn: (obj: object) => lines.push(obj) };
  const before = malformedMessagesDropped().get('unit') ?? 0;
  assert.equal(decodeOrDrop(WorkerHeartbeat, encodeJson({}), { consumer: 'unit', log }), null);
  assert.deepEqual(
    decodeOrDrop(WorkerHeartbeat, encodeJson(beat), { consumer: 'unit', log }),
    beat,
  );
  assert.equal(malformedMessagesDropped().get('unit'), before + 1);
  assert.equal(lines.length, 1);
});

const envelope = {
  v: 1,
  job_id: 'j1',
  owner: 'basic:u',
  username: 'u',
  spec: commandSpec,
  sealed: 'sealed',
  enqueued_at: '2026-01-01T00:00:00.000Z',
  placement: 0,
};

test('a message from a writer of a later release (fields this one does not know) decodes whole, keeping them, so a rolling upgrade drops nothing', () => {
  assert.deepEqual(decodeMessage(JobEnvelope, encodeJson(envelope)), envelope);
  const later = { ...envelope, later_field: 1, spec: { ...envelope.spec, later_option: 'x' } };
  assert.deepEqual(decodeMessage(JobEnvelope, encodeJson(later)), later);
  const held = { envelope: later, traceparent: null };
  assert.deepEqual(decodeMessage(HeldEnvelope, encodeJson(held)), held);
  // A known field of the wrong shape is still refused.
  assert.throws(
    () => decodeMessage(JobEnvelope, encodeJson({ ...later, placement: 'first' })),
    MalformedMessage,
  );
});

test('a device claim is taken only for its own key: one naming another device is dropped', () => {
  const lines: object[] = [];
  const drop = { consumer: 'unit', log: { warn: (obj: object) => lines.push(obj) } };
  const device = 'default|hostkey:SHA256:abc+/x';
  const key = LockKeys.device(device);
  assert.equal(key, 'device.default_7chostkey_3aSHA256_3aabc_2b_2fx');
  const claim = { device, host: 'h1', wanted_by: 'h2' };
  assert.deepEqual(deviceClaimOf(key, encodeJson(claim), drop), claim);
  assert.equal(deviceClaimOf(LockKeys.device('other|hostkey:x'), encodeJson(claim), drop), null);
  assert.equal(deviceClaimOf(key, encodeJson({ device }), drop), null);
  assert.equal(lines.length, 2);
});
