import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createDeviceRunner, SessionPool } from '@svc/device-actor';
import { expectedOutput, jobFor, startDevice } from '@svc/test/support';

/**
 * Config jobs follow the device's prompt: a `hostname` line renames it at once, and
 * configuration prompts shorten long names (IOS cuts the name at 20 characters, IOS-XR the
 * whole `RP/0/RP0/CPU0:name` at 31), as the trusted driver library documents.
 */

const run = createDeviceRunner({ pool: null, poolExclude: [] });

test('cisco_ios: when a config job changes the hostname and goes on, then it finishes with every line and the save', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios', hostname: 'R1' });
  t.after(() => dev.stop());
  const lines = ['hostname CORE-SW-NEW', 'interface Gi0/1', 'description uplink'];
  const out = await run(jobFor(dev, { kind: 'config', commands: lines, saveConfig: true }));
  for (const line of lines) assert.equal(out.results[line], '', line);
  assert.equal(out.results['write memory'], 'Building configuration...\n[OK]');
  assert.equal(dev.hostname, 'CORE-SW-NEW');
  assert.equal(dev.stats.configLines, 3);
  assert.equal(dev.stats.saves, 1);
  assert.notEqual(dev.lastMode, 'config', 'left configuration mode');
});

test('cisco_ios: when the new hostname is longer than the configuration prompt shows, then the job still finishes', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios', hostname: 'R1' });
  t.after(() => dev.stop());
  const name = 'BRANCH-0042-DISTRIBUTION-SWITCH-A';
  const lines = [`hostname ${name}`, 'interface Gi0/2', 'description x'];
  const out = await run(jobFor(dev, { kind: 'config', commands: lines, saveConfig: true }));
  assert.equal(out.results['write memory'], 'Building configuration...\n[OK]');
  assert.equal(dev.hostname, name);
  assert.equal(dev.stats.saves, 1);
});

test('cisco_ios: when the hostname has 30+ characters (the configuration prompt shows 20), then a config job finishes', async (t) => {
  const name = 'DC1-POD7-LEAF-ACCESS-SWITCH-042';
  assert.ok(name.length >= 30);
  const dev = await startDevice({ platform: 'cisco_ios', hostname: name });
  t.after(() => dev.stop());
  const lines = ['interface Gi0/1', 'description uplink'];
  const out = await run(jobFor(dev, { kind: 'config', commands: lines, saveConfig: true }));
  for (const line of lines) assert.equal(out.results[line], '', line);
  assert.equal(out.results['write memory'], 'Building configuration...\n[OK]');
  assert.equal(dev.stats.configLines, 2);
  assert.equal(dev.stats.saves, 1);
});

test('cisco_xr: when the prompt is longer than the 31 characters configuration mode shows, then a config job commits', async (t) => {
  const dev = await startDevice({ platform: 'cisco_xr', hostname: 'PE-ROUTER-FRANKFURT-01-CORE' });
  t.after(() => dev.stop());
  const lines = ['interface Gi0/0/0/1', 'description x'];
  const out = await run(jobFor(dev, { kind: 'config', commands: lines, commit: true }));
  for (const line of lines) assert.equal(out.results[line], '', line);
  assert.equal(out.results['commit'], '');
  assert.equal(dev.stats.commits, 1);
  assert.notEqual(dev.lastMode, 'config');
});

test('huawei: when sysname renames the device in a config job, then the save still runs', async (t) => {
  const dev = await startDevice({ platform: 'huawei', hostname: 'HW1' });
  t.after(() => dev.stop());
  const out = await run(
    jobFor(dev, {
      kind: 'config',
      commands: ['sysname AGG-7', 'interface GigabitEthernet0/0/1', 'description x'],
      saveConfig: true,
    }),
  );
  assert.equal(dev.hostname, 'AGG-7');
  assert.equal(dev.stats.saves, 1);
  assert.ok('save' in out.results);
});

test('cisco_ios: when a warm session renamed the device, then the next job on that session reads the new prompt', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios', hostname: 'R1' });
  t.after(() => dev.stop());
  const pool = new SessionPool({ idleTtlMs: 60_000, maxSize: 4 });
  t.after(() => pool.close());
  const pooled = createDeviceRunner({ pool, poolExclude: [] });
  await pooled(jobFor(dev, { kind: 'config', commands: ['hostname R2-RENAMED'] }));
  const next = await pooled(jobFor(dev, { commands: ['show version'] }));
  assert.equal(next.pooled, true, 'the warm session served the next job');
  assert.equal(next.results['show version'], expectedOutput(dev, 'show version'));
  assert.equal(dev.stats.handshakes, 1);
});
