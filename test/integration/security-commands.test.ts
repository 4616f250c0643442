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

/**
 * Command policy: context `ro` runs read-only commands only (COMMAND_POLICY), with an operator
 * pattern added (COMMAND_DENY_PATTERNS); any context can be asked for read-only per request
 * (`X-Svc-Command-Policy: read-only`, what the MCP adapter sends). A refused command is a 422
 * naming it, and nothing is queued.
 */

let nats: NatsServerProcess;
let stack: InProcessStack;
let device: SimulatedDevice;

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  stack = await startInProcessStack(nats.url, {
    env: {
      SVC_CONTEXTS: 'default,ro',
      WORKER_CONTEXTS: 'default,ro',
      COMMAND_POLICY: 'ro=read-only',
      COMMAND_DENY_PATTERNS: '^show tech',
      JOB_DEDUP_ENABLED: 'false',
    },
  });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

const auth = () => ({ basic: { username: device.username, password: device.password } });
const submit = (commands: string[], extra: Record<string, unknown> = {}, headers = {}) =>
  http('POST', `${stack.url}/v2/send-command`, {
    ...auth(),
    headers,
    body: { host: '127.0.0.1', port: device.port, platform: 'cisco_ios', commands, ...extra },
  });

test('when a read-only context is sent a configuration, reload, write, erase, copy or clear command, then it is a 422 naming the command and nothing runs', async () => {
  const before = device.stats.handshakes;
  for (const command of [
    'configure terminal',
    'conf t',
    'reload',
    'write erase',
    'wr',
    'erase startup-config',
    'delete flash:config.text',
    'copy running-config tftp://192.0.2.1/x',
    'format flash:',
    'clear counters',
    'show running-config | redirect flash:x',
    'show tech-support',
  ]) {
    const r = await submit(['show version', command], { context: 'ro' });
    assert.equal(r.status, 422, `${command}: ${r.text}`);
    const issue = r.json.validation_error.json[0];
    assert.deepEqual(issue.loc, ['body', 'commands', 1], command);
    assert.ok(issue.msg.includes(command), issue.msg);
    assert.equal(issue.type, 'command_not_allowed');
  }
  const ok = await submit(['show version', 'show ip interface brief'], { context: 'ro' });
  assert.equal(ok.status, 202, ok.text);
  const done = await waitForJob(stack.url, ok.json.job_id, auth());
  assert.equal(done.json.status, 'finished', done.json.error);
  assert.equal(device.stats.handshakes, before + 1, 'only the allowed job reached the device');
});

test('when a request asks for read-only in a context that allows any command, then the same list holds for it alone', async () => {
  const asked = await submit(['reload'], {}, { 'x-svc-command-policy': 'read-only' });
  assert.equal(asked.status, 422, asked.text);
  const junos = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth(),
    headers: { 'x-svc-command-policy': 'read-only' },
    body: {
      host: '127.0.0.1',
      port: device.port,
      platform: 'juniper_junos',
      commands: ['request system reboot'],
    },
  });
  assert.equal(junos.status, 422, junos.text);
  const bad = await submit(['show version'], {}, { 'x-svc-command-policy': 'anything' });
  assert.equal(bad.status, 422, bad.text);
  // Without the header the default context runs what it is given (the policy is the context's).
  const plain = await submit(['show clock']);
  assert.equal(plain.status, 202, plain.text);
});
