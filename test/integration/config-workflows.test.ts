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
 * Configuration workflows end to end (docs/config-workflows.md): a real NATS server, the
 * in-process services, simulated devices over SSH and real HTTP.
 */

let nats: NatsServerProcess;
let stack: InProcessStack;
let ios: SimulatedDevice;
let auth: { basic: { username: string; password: string } };

before(async () => {
  nats = await NatsServerProcess.start();
  ios = await startDevice({ platform: 'cisco_ios', hostname: 'R1', enable: 'svc-demo' });
  auth = { basic: { username: ios.username, password: ios.password } };
  stack = await startInProcessStack(nats.url);
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await ios?.stop();
  await nats?.stop();
});

const iosBody = (extra: Record<string, unknown> = {}) => ({
  host: '127.0.0.1',
  port: ios.port,
  platform: 'cisco_ios',
  ...extra,
});

/** Jobs the caller has: a refused submission must not add one. */
async function jobCount(): Promise<number> {
  const list = await http('GET', `${stack.url}/v2/jobs?per_page=1`, auth);
  assert.equal(list.status, 200, list.text);
  return list.json.pagination.total as number;
}

/**
 * Proves nothing of a refused submission reached the device: a valid job sent after it runs,
 * and the device saw only that job's line (the device works one job at a time, in order).
 */
async function onlyThisLineReachesTheDevice(line: string): Promise<void> {
  ios.resetStats();
  const ok = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: iosBody({ commands: [line] }),
  });
  assert.equal(ok.status, 202, ok.text);
  const done = await waitForJob(stack.url, ok.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.equal(ios.stats.configLines, 1, 'only the valid job pushed a line');
}

for (const field of ['dryrun', 'comit', 'save']) {
  test(`when a send-config body has the misspelt field ${field}, then 422 names it and nothing is queued or pushed`, async () => {
    const before = await jobCount();
    const bad = await http('POST', `${stack.url}/v2/send-config`, {
      ...auth,
      body: iosBody({ commands: ['hostname R9'], [field]: true }),
    });
    assert.equal(bad.status, 422, bad.text);
    assert.deepEqual(bad.json.validation_error.json, [
      { loc: ['body', field], msg: 'extra fields not permitted', type: 'extra_forbidden' },
    ]);
    assert.equal(await jobCount(), before, 'no job was created');
    await onlyThisLineReachesTheDevice('hostname R1');
  });
}

test('when a config batch body has a misspelt field, then 422 names it and no batch or job is created', async () => {
  const before = await jobCount();
  const bad = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'config',
      platform: 'cisco_ios',
      commands: ['hostname R9'],
      comit: true,
      devices: [{ host: '127.0.0.1', port: ios.port }],
    },
  });
  assert.equal(bad.status, 422, bad.text);
  assert.deepEqual(bad.json.validation_error.json, [
    { loc: ['body', 'comit'], msg: 'extra fields not permitted', type: 'extra_forbidden' },
  ]);
  assert.equal(await jobCount(), before, 'no job was created');
});

test('when a config batch device entry has a misspelt field, then 422 names it there', async () => {
  const bad = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'config',
      platform: 'cisco_ios',
      commands: ['hostname R9'],
      devices: [{ host: '127.0.0.1', port: ios.port, hots: 'x' }],
    },
  });
  assert.equal(bad.status, 422, bad.text);
  const locs = (bad.json.validation_error.json as { loc: unknown[] }[]).map((i) => i.loc);
  assert.deepEqual(locs, [['body', 'devices', 0, 'hots']]);
});

test('when a read job (send-command, command batch) carries an unknown field, then it is still accepted, as older clients send extra fields', async () => {
  const one = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: iosBody({ commands: ['show version'], legacy_field: 1 }),
  });
  assert.equal(one.status, 202, one.text);
  assert.equal((await waitForJob(stack.url, one.json.job_id, auth)).json.status, 'finished');
  const batch = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'command',
      platform: 'cisco_ios',
      commands: ['show version'],
      legacy_field: 1,
      devices: [{ host: '127.0.0.1', port: ios.port }],
    },
  });
  assert.equal(batch.status, 202, batch.text);
  assert.equal(
    (await waitForJob(stack.url, batch.json.jobs[0].job_id, auth)).json.status,
    'finished',
  );
});
