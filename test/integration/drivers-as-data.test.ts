import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, PLATFORMS } from '@svc/proto';
import { BUILTIN_DRIVERS } from '@svc/drivers';
import { loadDeviceActorConfig } from '@svc/device-actor';
import { loadGatewayConfig } from '@svc/gateway';
import { expectedOutput, startDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

// A driver a user adds without code: a JSON file in SVC_DRIVERS_DIR, loaded at start, listed at
// GET /v2/platforms, and used by jobs that name its platform.
let nats: NatsServerProcess;
let stack: InProcessStack;
const dir = mkdtempSync(join(tmpdir(), 'svc-user-drivers-'));
// An IOS-like lab image under its own name (the simulator answers as cisco_ios).
const labIos = {
  ...BUILTIN_DRIVERS.cisco_ios,
  platform: 'lab_ios',
  name: 'Lab IOS image',
  fingerprint: undefined,
};
writeFileSync(join(dir, 'lab_ios.json'), JSON.stringify(labIos));

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url, { env: { SVC_DRIVERS_DIR: dir } });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await nats?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('when a driver file is in SVC_DRIVERS_DIR, then GET /v2/platforms lists it after the built-in ones', async () => {
  const auth = { basic: { username: 'svc', password: 'svc-demo' } };
  const r = await http('GET', `${stack.url}/v2/platforms`, auth);
  assert.equal(r.status, 200, r.text);
  const list = r.json.platforms as { platform: string; source: string; save: string }[];
  assert.deepEqual(
    list.map((p) => p.platform),
    [...PLATFORMS, 'lab_ios'],
  );
  const lab = list.find((p) => p.platform === 'lab_ios');
  assert.equal(lab?.source, 'user');
  assert.equal(lab?.save, 'command');
  assert.equal(list.find((p) => p.platform === 'cisco_xr')?.save, 'commit');
  assert.equal((await http('GET', `${stack.url}/v2/platforms`)).status, 401);
});

test('when a job names the user platform, then its driver runs show and config jobs', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios' });
  t.after(() => dev.stop());
  const auth = { basic: { username: dev.username, password: dev.password } };
  const submit = async (path: string, body: Record<string, unknown>) => {
    const a = await http('POST', `${stack.url}${path}`, {
      ...auth,
      body: { host: dev.host, port: dev.port, enable: dev.enable, platform: 'lab_ios', ...body },
    });
    assert.equal(a.status, 202, a.text);
    return (await waitForJob(stack.url, a.json.job_id, auth)).json;
  };
  const shown = await submit('/v2/send-command', {
    commands: ['show version', 'show running-config'],
  });
  assert.equal(shown.status, 'finished', JSON.stringify(shown));
  assert.equal(shown.results['show version'], expectedOutput(dev, 'show version'));
  assert.equal(shown.results['show running-config'], expectedOutput(dev, 'show running-config'));
  const configured = await submit('/v2/send-config', {
    commands: ['interface Gi0/1', 'description x'],
    save_config: true,
  });
  assert.equal(configured.status, 'finished', JSON.stringify(configured));
  assert.equal(dev.stats.configLines, 2);
  assert.equal(dev.stats.saves, 1);
});

test('when a job names a platform nobody describes, then 422 lists the user platforms too', async () => {
  const r = await http('POST', `${stack.url}/v2/send-command`, {
    basic: { username: 'svc', password: 'svc-demo' },
    body: { host: '127.0.0.1', platform: 'no_such_os', commands: ['show version'] },
  });
  assert.equal(r.status, 422);
  assert.match(r.text, /lab_ios/);
});

test('when driver files are wrong, then both services refuse to start and name every problem', (t) => {
  const bad = mkdtempSync(join(tmpdir(), 'svc-bad-drivers-'));
  t.after(() => rmSync(bad, { recursive: true, force: true }));
  writeFileSync(join(bad, 'one.json'), '{');
  writeFileSync(join(bad, 'two.json'), JSON.stringify({ ...labIos, errors: ['('] }));
  for (const load of [loadDeviceActorConfig, loadGatewayConfig]) {
    try {
      load({ SVC_DRIVERS_DIR: bad, SVC_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64') });
      assert.fail('expected a ConfigError');
    } catch (err) {
      assert.ok(err instanceof ConfigError, String(err));
      const text = err.problems.join('\n');
      assert.match(text, /one\.json: not JSON/);
      assert.match(text, /two\.json\.errors\.0: not a valid regular expression/);
    }
  }
});
