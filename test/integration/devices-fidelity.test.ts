import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createDeviceRunner } from '@svc/device-actor';
import { expectedOutput, jobFor, startDevice } from '@svc/test/support';

/** Output fidelity: what operators' trusted driver library returns, on the same device. */

for (const context of ['{master:0}', '{primary:node0}', '{backup:1}']) {
  test(`juniper_junos: when the device prints ${context} above its prompt, then outputs do not contain it and keep the blank line above it, as the reference driver`, async (t) => {
    const dev = await startDevice({ platform: 'juniper_junos', contextLine: context });
    t.after(() => dev.stop());
    const run = createDeviceRunner({ pool: null, poolExclude: [] });
    const commands = ['show version', 'show interfaces terse'];
    const out = await run(jobFor(dev, { commands }));
    // The reference strips the prompt line and then the context line, nothing more: the blank
    // line Junos prints above the context stays, as the output's trailing newline.
    for (const cmd of commands)
      assert.equal(out.results[cmd], `${expectedOutput(dev, cmd)}\n`, cmd);
  });
}

test('juniper_junos: when configuration prompts carry {master:0}[edit], then the config transcript holds none of it', async (t) => {
  const dev = await startDevice({ platform: 'juniper_junos', contextLine: '{master:0}' });
  t.after(() => dev.stop());
  const run = createDeviceRunner({ pool: null, poolExclude: [] });
  const line = 'set interfaces ge-0/0/1 description x';
  const out = await run(jobFor(dev, { kind: 'config', commands: [line], commit: true }));
  assert.equal(out.results[line], '');
  assert.equal(out.results['commit'], 'commit complete');
  assert.equal(dev.stats.commits, 1);
});

test('cisco_xr: when send-config runs without commit, then it fails COMMAND_ERROR before touching the device (XR would discard the change)', async (t) => {
  const dev = await startDevice({ platform: 'cisco_xr' });
  t.after(() => dev.stop());
  const run = createDeviceRunner({ pool: null, poolExclude: [] });
  await assert.rejects(
    run(jobFor(dev, { kind: 'config', commands: ['interface Gi0/0/0/1', 'description x'] })),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'COMMAND_ERROR');
      assert.match(err.message, /cisco_xr.*commit: true/);
      return true;
    },
  );
  assert.equal(dev.stats.handshakes, 0, 'the device was not touched');
  assert.equal(dev.stats.configLines, 0);
});

test('fortinet: when a read-only job runs, then it sends no configuration command and paged output is still whole', async (t) => {
  const dev = await startDevice({ platform: 'fortinet' });
  t.after(() => dev.stop());
  const run = createDeviceRunner({ pool: null, poolExclude: [] });
  const commands = ['get system status', 'show full-configuration'];
  const out = await run(jobFor(dev, { commands }));
  for (const cmd of commands) assert.equal(out.results[cmd], expectedOutput(dev, cmd), cmd);
  assert.deepEqual(
    dev.stats.commands.map((c) => c.command),
    commands,
    'only the job commands reached the device (no config system console / set output / end)',
  );
});
