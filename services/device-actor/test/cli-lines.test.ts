import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, SvcError } from '@svc/proto';
import { CliSession } from '../src/device/drivers/cli-session.js';

/** A CliSession over a recorder of what it would send (no SSH: this checks the wall only). */
function recordingSession(): { cli: CliSession; written: string[] } {
  const written: string[] = [];
  const ssh = {
    write: (data: string) => written.push(data),
    clear: () => undefined,
    text: '',
  };
  const cli = Object.create(CliSession.prototype) as CliSession;
  Object.assign(cli, { ssh });
  return { cli, written };
}

const FORBIDDEN = [
  ...Array.from({ length: 0x20 }, (_, i) => i),
  0x7f,
  ...Array.from({ length: 0x20 }, (_, i) => 0x80 + i),
  0x2028,
  0x2029,
];

test('when a line holds a line break or a control character, then the driver never writes it', () => {
  const { cli, written } = recordingSession();
  for (const cp of FORBIDDEN) {
    const line = `hunter${String.fromCodePoint(cp)}configure terminal`;
    assert.throws(
      () => cli.writeLine(line, 'the enable secret'),
      (err: unknown) =>
        err instanceof SvcError &&
        err.code === ErrorCode.COMMAND_ERROR &&
        err.message.includes('position 6') &&
        !err.message.includes('hunter') &&
        !err.message.includes('configure'),
      `U+${cp.toString(16)}`,
    );
  }
  assert.deepEqual(written, []);
});

test('when a command holds a line break, then command() fails before anything is sent', async () => {
  const { cli, written } = recordingSession();
  await assert.rejects(
    cli.command('show version\nreload', { timeoutMs: 100 }),
    (err: unknown) => err instanceof SvcError && err.code === ErrorCode.COMMAND_ERROR,
  );
  assert.deepEqual(written, []);
});

test('when a line is plain text (any printable Unicode), then it is written with one Enter', () => {
  const { cli, written } = recordingSession();
  cli.writeLine('description uplink — Zürich ✓ 東京', 'a command');
  cli.writeLine('', 'a command');
  assert.deepEqual(written, ['description uplink — Zürich ✓ 東京\n', '\n']);
});
