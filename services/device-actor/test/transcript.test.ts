import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TranscriptRecorder } from '../src/transcript.js';

const clock = () => {
  let t = Date.parse('2026-01-01T00:00:00Z');
  return () => new Date((t += 1000));
};

test('when chunks arrive, then received text is joined until the next send, control sequences dropped', () => {
  const r = new TranscriptRecorder(1000, [], clock());
  r.sent('show version\n');
  r.received('\x1b[2Kshow ver');
  r.received('sion\r\nCisco IOS\r\nR1#');
  r.sent('exit\n');
  const t = r.toTranscript('j1');
  assert.deepEqual(
    t.entries.map((e) => [e.dir, e.data]),
    [
      ['sent', 'show version\n'],
      ['received', 'show version\r\nCisco IOS\r\nR1#'],
      ['sent', 'exit\n'],
    ],
  );
  assert.equal(t.entries[0]!.at, '2026-01-01T00:00:01.000Z');
  assert.equal(t.truncated, false);
});

test('when secrets pass, then they are redacted, also when split over chunks and as config values', () => {
  const r = new TranscriptRecorder(1000, ['hunter2', null, 'en-secret']);
  r.sent('en-secret\n');
  r.received('echo hun');
  r.received('ter2 back\n');
  r.sent('enable secret 5 $1$abc$def\n');
  r.sent('snmp-server community public RO\n');
  const text = JSON.stringify(r.toTranscript('j'));
  for (const s of ['hunter2', 'en-secret', '$1$abc$def', 'public']) assert.ok(!text.includes(s), s);
  assert.match(text, /enable secret 5 \*\*\*/);
});

test('when the session passes the cap, then the start and a window on the end are kept', () => {
  const r = new TranscriptRecorder(100, []);
  r.sent('first-command\n');
  for (let i = 0; i < 50; i++) r.received(`line ${i}\n`);
  r.sent('last-command\n');
  const t = r.toTranscript('j');
  const kept = t.entries.reduce((n, e) => n + e.data.length, 0);
  assert.ok(kept <= 100, String(kept));
  assert.equal(t.truncated, true);
  assert.equal(t.entries[0]!.data, 'first-command\n');
  assert.equal(t.entries.at(-1)!.data, 'last-command\n');
  assert.match(t.entries.at(-2)!.data, /line 49\n$/);
  const total =
    'first-command\n'.length +
    'last-command\n'.length +
    Array.from({ length: 50 }, (_, i) => `line ${i}\n`.length).reduce((a, b) => a + b, 0);
  assert.equal(kept + t.omitted_chars, total);
});
