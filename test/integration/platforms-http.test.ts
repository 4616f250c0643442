import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PLATFORMS } from '@svc/proto';
import {
  PLATFORM_CASES,
  expectedOutput,
  startDevice,
  type SimulatedDevice,
} from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

// Every platform through the HTTP API: show commands, a configuration set with save (and
// commit where the platform has it), and autodetect.
let nats: NatsServerProcess;
let stack: InProcessStack;

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url);
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await nats?.stop();
});

async function runJob(dev: SimulatedDevice, path: string, body: Record<string, unknown>) {
  const auth = { basic: { username: dev.username, password: dev.password } };
  const a = await http('POST', `${stack.url}${path}`, {
    ...auth,
    body: { host: dev.host, port: dev.port, enable: dev.enable, ...body },
  });
  assert.equal(a.status, 202, a.text);
  return (await waitForJob(stack.url, a.json.job_id, auth)).json;
}

for (const platform of PLATFORMS) {
  const c = PLATFORM_CASES[platform]!;
  test(`${platform}: show, config with save${c.commit ? ' and commit' : ''}, and autodetect over HTTP`, async (t) => {
    const dev = await startDevice({ platform });
    t.after(() => dev.stop());

    const shown = await runJob(dev, '/v2/send-command', { platform, commands: c.show });
    assert.equal(shown.status, 'finished', JSON.stringify(shown));
    for (const cmd of c.show) assert.equal(shown.results[cmd], expectedOutput(dev, cmd), cmd);

    const configured = await runJob(dev, '/v2/send-config', {
      platform,
      commands: c.config,
      save_config: c.save,
      commit: c.commit,
    });
    assert.equal(configured.status, 'finished', JSON.stringify(configured));
    for (const line of c.config) assert.ok(line in configured.results, `transcript of ${line}`);
    assert.equal(dev.stats.configLines, c.configLines);
    assert.equal(dev.stats.saves, c.saves);
    assert.equal(dev.stats.commits, c.commits);

    const detected = await runJob(dev, '/v2/send-command', {
      platform: 'autodetect',
      commands: [c.show[0]],
    });
    assert.equal(detected.status, 'finished', JSON.stringify(detected));
    assert.equal(detected.detected_platform, platform);
    assert.equal(detected.results[c.show[0]!], expectedOutput(dev, c.show[0]!));
  });
}

test('when a configuration line is rejected, then the job fails with COMMAND_ERROR and the device message', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios' });
  t.after(() => dev.stop());
  const r = await runJob(dev, '/v2/send-config', {
    commands: ['interface Gi0/1', 'bogus command here'],
  });
  assert.equal(r.status, 'failed');
  assert.equal(r.error_code, 'COMMAND_ERROR');
  assert.match(r.error, /Invalid input/);
  assert.equal(dev.lastMode === 'config', false, 'the device is not left in configuration mode');
});

test('when the platform cannot be fingerprinted, then the job fails with PLATFORM_AUTODETECT_FAILED', async (t) => {
  const dev = await startDevice({ platform: 'linux' });
  t.after(() => dev.stop());
  await dev.setFaults({ hang: '.*' });
  const r = await runJob(dev, '/v2/send-command', {
    platform: 'autodetect',
    commands: ['uname -a'],
    read_timeout: 1,
  });
  assert.equal(r.status, 'failed');
  assert.equal(r.error_code, 'PLATFORM_AUTODETECT_FAILED');
  assert.match(r.error, /platform autodetect failed/);
});
