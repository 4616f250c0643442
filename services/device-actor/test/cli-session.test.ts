import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, SvcError, UserPattern } from '@svc/proto';
import {
  MIN_SHOWN_BASE,
  learnedBase,
  learnedPromptPattern,
  shortenablePattern,
} from '../src/device/drivers/cli-session.js';
import { OutputScanner, TerminalText } from '../src/device/ssh/terminal-text.js';
import {
  COMMIT_SAVE_FLOOR_MS,
  LONG_SHOW_FLOOR_MS,
  jobFailure,
  showTimeoutMs,
  stepTimeoutMs,
} from '../src/device/device-runner.js';
import { getDriver } from '@svc/drivers';

test('when a base prompt is long, then its pattern matches the shortened configuration prompt and nothing shorter', () => {
  const ios = getDriver('cisco_ios');
  assert.ok(ios);
  const base = 'DC1-POD7-LEAF-ACCESS-SWITCH-042';
  const re = ios.promptPattern(shortenablePattern(base));
  assert.match(`${base}#`, re);
  assert.match(`${base.slice(0, 20)}(config)#`, re, 'IOS shows 20 characters');
  assert.match(`${base.slice(0, MIN_SHOWN_BASE)}(config-if)#`, re);
  assert.doesNotMatch(`${base.slice(0, MIN_SHOWN_BASE - 1)}(config)#`, re);
  assert.doesNotMatch('OTHER-NAME(config)#', re);
  assert.equal(shortenablePattern('R1.lab'), 'R1\\.lab', 'short names are matched whole');
});

test('when 5 MB arrive in 4 KB chunks, then the reader scans a bounded number of characters (linear, not quadratic)', () => {
  const line = 'GigabitEthernet0/1 000012345 packets input, 790080 bytes, 0 no buffer\r\n';
  const raw = line.repeat(Math.ceil((5 * 1024 * 1024) / line.length)) + 'END-OF-BULK\r\nR1#';
  const prompt = /^R1[>#]\s*$/;
  for (const expect of [null, UserPattern.compile('END-OF-BULK')]) {
    const text = new TerminalText();
    const scanner = expect === null ? null : new OutputScanner(expect);
    let done = false;
    for (let at = 0; at < raw.length && !done; at += 4096) {
      text.push(raw.slice(at, at + 4096));
      // What CliSession.command looks at after each chunk.
      const tail = text.lastLine;
      done = scanner !== null ? scanner.find(text) !== null : prompt.test(tail);
    }
    assert.ok(done, 'the end of the output was found');
    const out = text.value;
    assert.equal(out.length, raw.length - (raw.length - raw.replaceAll('\r', '').length));
    assert.ok(text.chunks >= 1280, `${text.chunks} chunks`);
    // push reads each character once, the final join once, the scanner its overlap per chunk.
    const bound = expect === null ? 3 * raw.length : 6 * raw.length;
    assert.ok(text.scanned <= bound, `${text.scanned} characters scanned for ${raw.length}`);
  }
});

test('when a match of expect_string is split across chunks, then the scanner still finds it where it ends', () => {
  const text = new TerminalText();
  const scanner = new OutputScanner(UserPattern.compile('Total: \\d+ routes'));
  text.push('x'.repeat(10_000) + '\nTotal: 4');
  assert.equal(scanner.find(text), null);
  text.push('2 routes\nR1#');
  assert.equal(scanner.find(text), 10_001 + 'Total: 42 routes'.length);
});

test('when the terminal edits the current line, then finished lines are untouched and the text is what a person sees', () => {
  const text = new TerminalText();
  text.push('line1\r\nabc\bd');
  text.push('\x1b[2D--More--\r        \rnext\r\n');
  assert.equal(text.value, 'line1\nnext\n');
  assert.equal(text.finishedLength, 'line1\nnext\n'.length);
  text.push('R1#');
  assert.equal(text.lastLine, 'R1#');
  text.consume(6);
  assert.equal(text.value, 'next\nR1#');
  assert.equal(text.since(5), 'R1#');
  assert.equal(text.prefix(2), 'ne');
});

test('when a commit or save runs, then it waits at least 120 s, or the read timeout when longer', () => {
  assert.equal(COMMIT_SAVE_FLOOR_MS, 120_000);
  assert.equal(stepTimeoutMs(30_000), 120_000);
  assert.equal(stepTimeoutMs(5_000), 120_000);
  assert.equal(stepTimeoutMs(600_000), 600_000);
});

test('when a show is known to run for minutes, then it waits at least 300 s; other shows keep the read timeout', () => {
  assert.equal(LONG_SHOW_FLOOR_MS, 300_000);
  for (const cmd of [
    'show tech-support',
    'show tech',
    'sh tech detail',
    'show running-config all',
    'sh run all',
    'display diagnostic-information',
    'request support information',
  ]) {
    assert.equal(showTimeoutMs(cmd, 30_000), 300_000, cmd);
    assert.equal(showTimeoutMs(cmd, 900_000), 900_000, `${cmd}: a longer read timeout wins`);
  }
  for (const cmd of ['show version', 'show running-config', 'show interfaces', 'show techno']) {
    assert.equal(showTimeoutMs(cmd, 30_000), 30_000, cmd);
  }
});

test('when a prompt is of no known shape, then the learned base and pattern recognise the later prompts of that device only', () => {
  const cases: [string, string, string[], string[]][] = [
    ['R1>', 'R1', ['R1>', '[R1]', '[R1-GigabitEthernet0/0/1]', '[~R1]', 'R1(config)#'], ['R2>']],
    ['X440>', 'X440', ['X440>', '* X440.7 #', 'X440 #'], ['X441>']],
    ['<core-sw.lab>', 'core-sw.lab', ['<core-sw.lab>', '[core-sw.lab]'], ['<core-swXlab>']],
    ['sw 1 (lab) # ', 'sw 1 (lab)', ['sw 1 (lab) #', 'sw 1 (lab) (interface) #'], ['sw 2 #']],
  ];
  for (const [prompt, base, match, reject] of cases) {
    assert.equal(learnedBase(prompt), base, prompt);
    const re = learnedPromptPattern(learnedBase(prompt));
    for (const line of match) assert.match(line, re, `${prompt}: ${line}`);
    for (const line of reject) assert.doesNotMatch(line, re, `${prompt}: ${line}`);
  }
});

test('when a show job ends on a rejection and then a timeout, then the code is the first failure and the text names both', () => {
  const failure = jobFailure(
    {
      results: { 'show a': '% Invalid input' },
      status: [
        { command: 'show a', status: 'error', error: '% Invalid input' },
        { command: 'show b', status: 'timeout', error: 'read timeout: b' },
        { command: 'show c', status: 'not_run' },
      ],
      failure: new SvcError(ErrorCode.READ_TIMEOUT, 'read timeout: b'),
    },
    false,
    'cisco_ios',
  );
  assert.ok(failure !== null);
  assert.equal(failure.code, 'COMMAND_ERROR');
  assert.equal(
    failure.message,
    'command "show a" rejected by the device: % Invalid input; then read timeout: b',
  );
  assert.equal(failure.detectedPlatform, 'cisco_ios');
  assert.equal(failure.commandStatus?.length, 3);
  const timedOut = jobFailure(
    {
      results: {},
      status: [{ command: 'show b', status: 'timeout', error: 'read timeout: b' }],
      failure: new SvcError(ErrorCode.READ_TIMEOUT, 'read timeout: b'),
    },
    false,
    null,
  );
  assert.equal(timedOut?.code, 'READ_TIMEOUT');
  assert.equal(timedOut?.message, 'read timeout: b');
});
