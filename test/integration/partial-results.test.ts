import { test } from 'node:test';
import assert from 'node:assert/strict';
import { http, waitForJob, deviceStackForFile } from '../harness/mod.js';

/** Partial results end to end: a rejected show command keeps the other outputs. */

const lab = deviceStackForFile({ platform: 'cisco_ios', hostname: 'R1', enable: 'svc-demo' });

const body = (commands: string[], extra: Record<string, unknown> = {}) => ({
  host: '127.0.0.1',
  port: lab.device.port,
  platform: 'cisco_ios',
  commands,
  ...extra,
});

const commands = ['show version', 'show bogus', 'show ip interface brief'];

test('when one show command of three is rejected, then every output is kept, the rejected one is marked and the job fails COMMAND_ERROR', async () => {
  lab.device.resetStats();
  const submitted = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: body(commands),
  });
  assert.equal(submitted.status, 202, submitted.text);
  const done = await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  assert.equal(done.json.status, 'failed', done.text);
  assert.equal(done.json.error_code, 'COMMAND_ERROR');
  assert.match(done.json.error, /command "show bogus" rejected by the device: % Invalid input/);
  assert.deepEqual(Object.keys(done.json.results), commands);
  assert.match(done.json.results['show version'], /^Cisco IOS Software/);
  assert.match(done.json.results['show ip interface brief'], /Interface/);
  assert.match(done.json.results['show bogus'], /% Invalid input/);
  assert.deepEqual(
    done.json.command_status.map((s: { command: string; status: string }) => [s.command, s.status]),
    [
      ['show version', 'ok'],
      ['show bogus', 'error'],
      ['show ip interface brief', 'ok'],
    ],
  );
  assert.match(done.json.command_status[1].error, /% Invalid input/);
  assert.equal(done.json.command_status[0].error, undefined);
  const viaJobs = await http('GET', `${lab.stack.url}/v2/jobs/${submitted.json.job_id}`, lab.auth);
  assert.deepEqual(viaJobs.json.command_status, done.json.command_status);
  assert.ok(
    lab.device.stats.commands.some((c) => c.command === 'show ip interface brief'),
    'the command after the rejected one ran',
  );
});

test('when a structured job has a command rejected and its template fails on the others, then it fails COMMAND_ERROR and keeps every output as the device gave it', async () => {
  const submitted = await http('POST', `${lab.stack.url}/v2/send-command-structured`, {
    ...lab.auth,
    body: body(commands, { textfsm_template: 'Value X (\nStart\n' }),
  });
  assert.equal(submitted.status, 202, submitted.text);
  const done = await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  assert.equal(done.json.status, 'failed', done.text);
  assert.equal(done.json.error_code, 'COMMAND_ERROR');
  assert.deepEqual(Object.keys(done.json.results ?? {}), commands, done.text);
  assert.match(done.json.results['show version'], /^Cisco IOS Software/);
  assert.match(done.json.results['show ip interface brief'], /Interface/);
  assert.match(done.json.results['show bogus'], /% Invalid input/);
  assert.deepEqual(
    done.json.command_status.map((s: Record<string, unknown>) => [s.command, s.status, s.parsed]),
    [
      ['show version', 'ok', false],
      ['show bogus', 'error', false],
      ['show ip interface brief', 'ok', false],
    ],
  );
});

test('when stop_on_error is true, then the job stops at the first rejected command', async () => {
  lab.device.resetStats();
  const submitted = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: body(commands, { stop_on_error: true }),
  });
  assert.equal(submitted.status, 202, submitted.text);
  const done = await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  assert.equal(done.json.status, 'failed', done.text);
  assert.equal(done.json.error_code, 'COMMAND_ERROR');
  assert.match(done.json.error, /stop_on_error: 1 later command not run/);
  assert.deepEqual(Object.keys(done.json.results), ['show version', 'show bogus']);
  // Every command of the job is listed: the one stop_on_error kept from running is not_run.
  assert.deepEqual(
    done.json.command_status.map((s: { status: string }) => s.status),
    ['ok', 'error', 'not_run'],
  );
  assert.ok(
    !lab.device.stats.commands.some((c) => c.command === 'show ip interface brief'),
    'nothing ran after the rejected command',
  );
});

test('when every command succeeds, then command_status lists each as ok', async () => {
  const submitted = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: body(['show version', 'show ip interface brief']),
  });
  const done = await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.deepEqual(done.json.command_status, [
    { command: 'show version', status: 'ok' },
    { command: 'show ip interface brief', status: 'ok' },
  ]);
});

type Status = { command: string; status: string; error?: string };
const pairs = (list: Status[] | null) => (list ?? []).map((s) => [s.command, s.status]);

test('when a command never gives the prompt back, then the failed record keeps the outputs before it, marks it timeout and the rest not_run', async (t) => {
  await lab.device.setFaults({ hang: '^show ip interface brief$' });
  t.after(() => lab.device.setFaults({}));
  const submitted = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: body(['show version', 'show ip interface brief', 'show running-config'], {
      read_timeout: 1,
    }),
  });
  assert.equal(submitted.status, 202, submitted.text);
  const done = await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  assert.equal(done.json.status, 'failed', done.text);
  assert.equal(done.json.error_code, 'READ_TIMEOUT');
  assert.deepEqual(Object.keys(done.json.results), ['show version']);
  assert.match(done.json.results['show version'], /^Cisco IOS Software/);
  assert.deepEqual(pairs(done.json.command_status), [
    ['show version', 'ok'],
    ['show ip interface brief', 'timeout'],
    ['show running-config', 'not_run'],
  ]);
  const viaJobs = await http('GET', `${lab.stack.url}/v2/jobs/${submitted.json.job_id}`, lab.auth);
  assert.deepEqual(viaJobs.json.command_status, done.json.command_status);
});

test('when an autodetected job then fails, then the record keeps detected_platform', async (t) => {
  await lab.device.setFaults({ hang: '^show running-config$' });
  t.after(() => lab.device.setFaults({}));
  const submitted = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: body(['show version', 'show running-config'], {
      platform: 'autodetect',
      read_timeout: 1,
    }),
  });
  assert.equal(submitted.status, 202, submitted.text);
  const done = await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  assert.equal(done.json.status, 'failed', done.text);
  assert.equal(done.json.error_code, 'READ_TIMEOUT');
  assert.equal(done.json.detected_platform, 'cisco_ios');
  assert.deepEqual(pairs(done.json.command_status), [
    ['show version', 'ok'],
    ['show running-config', 'timeout'],
  ]);
});

test('when a configuration line is rejected, then the record keeps the lines before it and lists the rest not_run', async () => {
  const commands = ['interface Loopback100', 'bogus line', 'description x'];
  const submitted = await http('POST', `${lab.stack.url}/v2/send-config`, {
    ...lab.auth,
    body: body(commands),
  });
  assert.equal(submitted.status, 202, submitted.text);
  const done = await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  assert.equal(done.json.status, 'failed', done.text);
  assert.equal(done.json.error_code, 'COMMAND_ERROR');
  assert.deepEqual(Object.keys(done.json.results), ['interface Loopback100', 'bogus line']);
  assert.deepEqual(pairs(done.json.command_status), [
    ['interface Loopback100', 'ok'],
    ['bogus line', 'error'],
    ['description x', 'not_run'],
  ]);
  assert.match(done.json.command_status[1].error, /% Invalid input/);
});

test('when a running job is cancelled, then the cancelled record keeps the outputs the device gave', async (t) => {
  await lab.device.setFaults({ hang: '^show ip interface brief$' });
  t.after(() => lab.device.setFaults({}));
  lab.device.resetStats();
  const submitted = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: body(['show version', 'show ip interface brief', 'show running-config'], {
      read_timeout: 60,
    }),
  });
  assert.equal(submitted.status, 202, submitted.text);
  // Cancel once the device read the command that hangs: the first one answered by then.
  while (!lab.device.stats.commands.some((c) => c.command === 'show ip interface brief')) {
    await new Promise((r) => setImmediate(r));
  }
  const cancel = await http(
    'DELETE',
    `${lab.stack.url}/v2/send-command/${submitted.json.job_id}`,
    lab.auth,
  );
  assert.equal(cancel.status, 204, cancel.text);
  // The actor adds the outputs after the gateway wrote `cancelled`: read until they are there.
  let record = await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  while (record.json.command_status == null) {
    await new Promise((r) => setImmediate(r));
    record = await http(
      'GET',
      `${lab.stack.url}/v2/send-command/${submitted.json.job_id}`,
      lab.auth,
    );
  }
  assert.equal(record.json.status, 'cancelled');
  assert.deepEqual(Object.keys(record.json.results), ['show version']);
  assert.deepEqual(pairs(record.json.command_status), [
    ['show version', 'ok'],
    ['show ip interface brief', 'error'],
    ['show running-config', 'not_run'],
  ]);
});

test('when stop_on_error is not a boolean, or given to send-config, then 422 and nothing queued', async () => {
  const bad = await http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: body(['show version'], { stop_on_error: 'yes' }),
  });
  assert.equal(bad.status, 422, bad.text);
  assert.deepEqual(bad.json.validation_error.json[0].loc, ['body', 'stop_on_error']);
  const config = await http('POST', `${lab.stack.url}/v2/send-config`, {
    ...lab.auth,
    body: body(['hostname R2'], { stop_on_error: true }),
  });
  assert.equal(config.status, 422, config.text);
});
