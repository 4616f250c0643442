import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

/** Partial results end to end: a rejected show command keeps the other outputs. */

let nats: NatsServerProcess;
let stack: InProcessStack;
let device: SimulatedDevice;
let auth: { basic: { username: string; password: string } };

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', hostname: 'R1', enable: 'svc-demo' });
  auth = { basic: { username: device.username, password: device.password } };
  stack = await startInProcessStack(nats.url);
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

const body = (commands: string[], extra: Record<string, unknown> = {}) => ({
  host: '127.0.0.1',
  port: device.port,
  platform: 'cisco_ios',
  commands,
  ...extra,
});

const commands = ['show version', 'show bogus', 'show ip interface brief'];

test('when one show command of three is rejected, then every output is kept, the rejected one is marked and the job fails COMMAND_ERROR', async () => {
  device.resetStats();
  const submitted = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: body(commands),
  });
  assert.equal(submitted.status, 202, submitted.text);
  const done = await waitForJob(stack.url, submitted.json.job_id, auth);
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
  const viaJobs = await http('GET', `${stack.url}/v2/jobs/${submitted.json.job_id}`, auth);
  assert.deepEqual(viaJobs.json.command_status, done.json.command_status);
  assert.ok(
    device.stats.commands.some((c) => c.command === 'show ip interface brief'),
    'the command after the rejected one ran',
  );
});

test('when stop_on_error is true, then the job stops at the first rejected command', async () => {
  device.resetStats();
  const submitted = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: body(commands, { stop_on_error: true }),
  });
  assert.equal(submitted.status, 202, submitted.text);
  const done = await waitForJob(stack.url, submitted.json.job_id, auth);
  assert.equal(done.json.status, 'failed', done.text);
  assert.equal(done.json.error_code, 'COMMAND_ERROR');
  assert.match(done.json.error, /stop_on_error: 1 later command not run/);
  assert.deepEqual(Object.keys(done.json.results), ['show version', 'show bogus']);
  assert.deepEqual(
    done.json.command_status.map((s: { status: string }) => s.status),
    ['ok', 'error'],
  );
  assert.ok(
    !device.stats.commands.some((c) => c.command === 'show ip interface brief'),
    'nothing ran after the rejected command',
  );
});

test('when every command succeeds, then command_status lists each as ok', async () => {
  const submitted = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: body(['show version', 'show ip interface brief']),
  });
  const done = await waitForJob(stack.url, submitted.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.deepEqual(done.json.command_status, [
    { command: 'show version', status: 'ok' },
    { command: 'show ip interface brief', status: 'ok' },
  ]);
});

test('when stop_on_error is not a boolean, or given to send-config, then 422 and nothing queued', async () => {
  const bad = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: body(['show version'], { stop_on_error: 'yes' }),
  });
  assert.equal(bad.status, 422, bad.text);
  assert.deepEqual(bad.json.validation_error.json[0].loc, ['body', 'stop_on_error']);
  const config = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: body(['hostname R2'], { stop_on_error: true }),
  });
  assert.equal(config.status, 422, config.text);
});
