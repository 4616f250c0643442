import { test } from 'node:test';
import assert from 'node:assert/strict';
import { http, waitForJob, deviceStackForFile } from '../harness/mod.js';

/** `answers` end to end: request → job record → device actor → the device's question. */

const lab = deviceStackForFile({ platform: 'cisco_ios', hostname: 'R1', enable: 'svc-demo' });

const body = (commands: string[], extra: Record<string, unknown> = {}) => ({
  host: '127.0.0.1',
  port: lab.device.port,
  platform: 'cisco_ios',
  commands,
  ...extra,
});

test('when send-command answers [confirm], then the job finishes and the record keeps the answers', async () => {
  lab.device.resetStats();
  const answers = [{ prompt: '\\[confirm\\]\\s*$', answer: '', command: 0 }];
  const submitted = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: body(['clear counters', 'show version'], { answers }),
  });
  assert.equal(submitted.status, 202, submitted.text);
  const done = await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.match(done.json.results['clear counters'], /\[confirm\]$/);
  assert.match(done.json.results['show version'], /^Cisco IOS Software/);
  assert.deepEqual(lab.device.stats.answers, ['']);
});

test('when send-config answers [yes/no], then the line applies and the job finishes', async () => {
  lab.device.resetStats();
  const line = 'crypto key generate rsa modulus 2048';
  const submitted = await http('POST', `${lab.stack.url}/v2/send-config`, {
    ...lab.auth,
    body: body([line], { answers: [{ prompt: '\\[yes/no\\]:\\s*$', answer: 'yes' }] }),
  });
  assert.equal(submitted.status, 202, submitted.text);
  const done = await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.match(done.json.results[line], /\[OK\]/);
  assert.deepEqual(lab.device.stats.answers, ['yes']);
});

test('when an answer is a line break or a pattern RE2 cannot run, then 422 at the field and nothing runs', async () => {
  lab.device.resetStats();
  for (const [answers, loc, type] of [
    [
      [{ prompt: 'x', answer: 'y\r\nreload' }],
      ['body', 'answers', 0, 'answer'],
      'control_character',
    ],
    [[{ prompt: '(a)\\1', answer: '' }], ['body', 'answers', 0, 'prompt'], 'value_error'],
    [[{ prompt: 'x', answer: '', command: 5 }], ['body', 'answers', 0, 'command'], 'value_error'],
  ] as const) {
    const r = await http('POST', `${lab.stack.url}/v2/send-command`, {
      ...lab.auth,
      body: body(['show version'], { answers }),
    });
    assert.equal(r.status, 422, r.text);
    const issue = r.json.validation_error.json.find(
      (d: { loc: unknown[] }) => d.loc[1] === 'answers',
    );
    assert.deepEqual(issue?.loc, loc, r.text);
    assert.equal(issue?.type, type);
    assert.ok(!r.text.includes('reload'), 'the value is not echoed');
  }
  assert.equal(lab.device.stats.handshakes, 0, 'nothing reached the device');
});
