import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createDeviceRunner } from '@svc/device-actor';
import { expectedOutput, jobFor, startDevice } from '@svc/test/support';

/** Per-command answers: questions such as `[confirm]` and `[yes/no]` answered as the job says. */

const run = createDeviceRunner({ pool: null, poolExclude: [] });
const CONFIRM = '\\[confirm\\]\\s*$';
const QUESTION = 'Clear "show interface" counters on all interfaces [confirm]';

test('cisco_ios: when a command asks [confirm] and the job has no answer, then READ_TIMEOUT names the question', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios' });
  t.after(() => dev.stop());
  await assert.rejects(
    run(jobFor(dev, { commands: ['clear counters'], readTimeoutMs: 1500 })),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'READ_TIMEOUT');
      assert.match(
        err.message,
        /waiting at "Clear "show interface" counters on all interfaces \[confirm\]"/,
      );
      return true;
    },
  );
  assert.deepEqual(dev.stats.answers, [], 'nothing was typed at the question');
});

test('cisco_ios: when the job answers [confirm] with Enter, then the command finishes and the next runs', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios' });
  t.after(() => dev.stop());
  const commands = ['clear counters', 'show version'];
  const out = await run(jobFor(dev, { commands, answers: [{ prompt: CONFIRM, answer: '' }] }));
  // The question stays in the output, as a person at the terminal saw it.
  assert.equal(out.results['clear counters'], QUESTION);
  assert.equal(out.results['show version'], expectedOutput(dev, 'show version'));
  assert.deepEqual(dev.stats.answers, [''], 'one Enter, at the question');
  assert.deepEqual(
    out.commandStatus?.map((s) => s.status),
    ['ok', 'ok'],
  );
});

test('cisco_ios: when an answer is for another command, then it is not given to this one', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios' });
  t.after(() => dev.stop());
  await assert.rejects(
    run(
      jobFor(dev, {
        commands: ['clear counters', 'show version'],
        answers: [{ prompt: CONFIRM, answer: '', command: 1 }],
        readTimeoutMs: 1500,
      }),
    ),
    { code: 'READ_TIMEOUT' },
  );
  assert.deepEqual(dev.stats.answers, []);
  const ok = await run(
    jobFor(dev, {
      commands: ['show version', 'clear counters'],
      answers: [{ prompt: CONFIRM, answer: '', command: 1 }],
    }),
  );
  assert.equal(ok.results['clear counters'], QUESTION);
});

test('cisco_ios: when a config line asks [yes/no] and the job answers yes, then the line applies and the job saves', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios' });
  t.after(() => dev.stop());
  const line = 'crypto key generate rsa modulus 2048';
  const out = await run(
    jobFor(dev, {
      kind: 'config',
      commands: [line, 'ip ssh version 2'],
      saveConfig: true,
      answers: [{ prompt: '\\[yes/no\\]:\\s*$', answer: 'yes', command: 0 }],
    }),
  );
  assert.match(String(out.results[line]), /\[OK\] \(elapsed time was 1 seconds\)$/);
  assert.deepEqual(dev.stats.answers, ['yes']);
  assert.equal(dev.stats.configLines, 2);
  assert.equal(dev.stats.saves, 1);
});

test('cisco_ios: when a config line asks [yes/no] and the job answers no, then the line is not applied and the job goes on', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios' });
  t.after(() => dev.stop());
  const line = 'crypto key generate rsa modulus 2048';
  await run(
    jobFor(dev, {
      kind: 'config',
      commands: [line, 'ip ssh version 2'],
      answers: [{ prompt: '\\[yes/no\\]:\\s*$', answer: 'no' }],
    }),
  );
  assert.deepEqual(dev.stats.answers, ['no']);
  assert.equal(dev.stats.configLines, 1, 'only the second line applied');
});

test('when an answer holds a line break, then COMMAND_ERROR before touching the device', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios' });
  t.after(() => dev.stop());
  await assert.rejects(
    run(
      jobFor(dev, {
        commands: ['clear counters'],
        answers: [{ prompt: CONFIRM, answer: 'y\nreload' }],
      }),
    ),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'COMMAND_ERROR');
      assert.match(err.message, /U\+000A at position 1/);
      assert.ok(!err.message.includes('reload'));
      return true;
    },
  );
  assert.equal(dev.stats.handshakes, 0);
});

test('cisco_ios: when a config job enters a multi-line banner, then the text lines are typed without waiting for prompts and the job saves', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios' });
  t.after(() => dev.stop());
  const lines = [
    'banner motd #',
    'Authorised access only.',
    '',
    'Disconnect now if you are not authorised.',
    '#',
    'interface Gi0/1',
    'description x',
  ];
  const out = await run(jobFor(dev, { kind: 'config', commands: lines, saveConfig: true }));
  assert.equal(out.results['banner motd #'], "Enter TEXT message.  End with the character '#'.");
  assert.deepEqual(dev.stats.texts, [
    'Authorised access only.\n\nDisconnect now if you are not authorised.',
  ]);
  assert.equal(dev.stats.saves, 1);
  assert.notEqual(dev.lastMode, 'config');
});

test('cisco_ios: when a banner is never ended, then COMMAND_ERROR before any save and no banner is applied', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios' });
  t.after(() => dev.stop());
  await assert.rejects(
    run(jobFor(dev, { kind: 'config', commands: ['banner motd #', 'text'], saveConfig: true })),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'COMMAND_ERROR');
      assert.match(err.message, /no line holds "#"/);
      return true;
    },
  );
  assert.equal(dev.stats.saves, 0);
  assert.deepEqual(dev.stats.texts, [], 'no banner was applied');
});
