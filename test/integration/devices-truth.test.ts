import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SvcError, type CommandStatus } from '@svc/proto';
import { createDeviceRunner, SessionPool, type DeviceJob } from '@svc/device-actor';
import {
  expectedOutput,
  jobFor,
  startDevice,
  type SimulatedDevice,
  type StartDeviceOptions,
} from '@svc/test/support';

/**
 * Device results tell the truth (issue 22): no job inherits another's session state, every
 * output the device gave is kept whatever ends the job, prompts are learned from the device,
 * a refused enable form is not a wrong password.
 */

type Ctx = { after(fn: () => Promise<void>): void };

async function device(t: Ctx, options: StartDeviceOptions): Promise<SimulatedDevice> {
  const dev = await startDevice(options);
  t.after(() => dev.stop());
  return dev;
}

function pooled(t: Ctx) {
  const pool = new SessionPool({ idleTtlMs: 60_000, maxSize: 10 });
  t.after(() => pool.close());
  return { pool, run: createDeviceRunner({ pool, poolExclude: [] }) };
}

const unpooled = createDeviceRunner({ pool: null, poolExclude: [] });

/** What a failed job carries besides its code: outputs, statuses, detected platform. */
interface Kept {
  results: Record<string, unknown> | null;
  commandStatus: CommandStatus[] | null;
  detectedPlatform: string | null;
}

async function failure(job: DeviceJob, run = unpooled): Promise<SvcError & Partial<Kept>> {
  try {
    await run(job);
  } catch (err) {
    assert.ok(err instanceof SvcError, `a SvcError, got ${String(err)}`);
    return err;
  }
  assert.fail('the job should have failed');
}

const statuses = (list: readonly CommandStatus[] | null | undefined) =>
  (list ?? []).map((s) => [s.command, s.status]);

// Finding 1: session state is part of the pool's contract.

for (const [platform, enter, show] of [
  ['cisco_ios', 'configure terminal', 'show version'],
  ['huawei', 'system-view', 'display version'],
  ['juniper_junos', 'configure', 'show version'],
] as const) {
  test(`${platform}: when a read job leaves the session in configuration mode ("${enter}"), then the next read job of the pool runs at the exec prompt`, async (t) => {
    const { run } = pooled(t);
    const dev = await device(t, { platform });
    const first = await run(jobFor(dev, { commands: [enter] }));
    assert.deepEqual(statuses(first.commandStatus), [[enter, 'ok']]);
    const next = await run(jobFor(dev, { commands: [show] }));
    assert.equal(next.results[show], expectedOutput(dev, show), 'not an empty config-mode answer');
    assert.deepEqual(statuses(next.commandStatus), [[show, 'ok']]);
    assert.equal(next.pooled, true, 'brought back with the platform exit, then reused');
    assert.notEqual(dev.lastMode, 'config');
  });
}

test('cisco_ios: when a read job enters configuration mode, then its next commands still run at the exec prompt', async (t) => {
  const dev = await device(t, { platform: 'cisco_ios' });
  const commands = ['configure terminal', 'show version'];
  const out = await unpooled(jobFor(dev, { commands }));
  assert.equal(out.results['show version'], expectedOutput(dev, 'show version'));
  assert.deepEqual(statuses(out.commandStatus), [
    ['configure terminal', 'ok'],
    ['show version', 'ok'],
  ]);
});

test('cisco_ios: when a warm session cannot be brought back to its prompt, then it is closed, never reused', async (t) => {
  const { pool, run } = pooled(t);
  // `end` never gives the prompt back: the session stays in configuration mode.
  const dev = await device(t, { platform: 'cisco_ios', faults: { hang: '^end$' } });
  await run(jobFor(dev, { readTimeoutMs: 500, commands: ['configure terminal'] }));
  assert.equal(pool.size, 0, 'closed instead of pooled');
  await dev.setFaults({});
  const next = await run(jobFor(dev, { commands: ['show version'] }));
  assert.equal(next.pooled, false);
  assert.equal(next.results['show version'], expectedOutput(dev, 'show version'));
});

// Findings 2 and 3: every output the device gave is kept, whatever ends the job.

test('cisco_ios: when a command never gives the prompt back, then READ_TIMEOUT keeps the outputs before it and marks timeout and not_run', async (t) => {
  const dev = await device(t, {
    platform: 'cisco_ios',
    faults: { hang: '^show ip interface brief$' },
  });
  const commands = ['show version', 'show ip interface brief', 'show running-config'];
  const err = await failure(jobFor(dev, { readTimeoutMs: 500, commands }));
  assert.equal(err.code, 'READ_TIMEOUT');
  assert.deepEqual(err.results, { 'show version': expectedOutput(dev, 'show version') });
  assert.deepEqual(statuses(err.commandStatus), [
    ['show version', 'ok'],
    ['show ip interface brief', 'timeout'],
    ['show running-config', 'not_run'],
  ]);
  assert.match(err.commandStatus?.[1]?.error ?? '', /read timeout/);
});

test('cisco_ios: when the device drops the session mid-job, then SESSION_DROPPED keeps the outputs before it', async (t) => {
  const dev = await device(t, {
    platform: 'cisco_ios',
    faults: { drop: '^show ip interface brief$' },
  });
  const commands = ['show version', 'show ip interface brief'];
  const err = await failure(jobFor(dev, { commands }));
  assert.equal(err.code, 'SESSION_DROPPED');
  assert.deepEqual(Object.keys(err.results ?? {}), ['show version']);
  assert.deepEqual(statuses(err.commandStatus), [
    ['show version', 'ok'],
    ['show ip interface brief', 'error'],
  ]);
});

test('cisco_ios: when a running job is cancelled, then CANCELLED keeps the outputs the device gave', async (t) => {
  const dev = await device(t, {
    platform: 'cisco_ios',
    faults: { hang: '^show ip interface brief$' },
  });
  const controller = new AbortController();
  const commands = ['show version', 'show ip interface brief', 'show running-config'];
  const job = jobFor(dev, { readTimeoutMs: 60_000, commands, signal: controller.signal });
  const pending = failure(job);
  // Cancel once the device read the command that hangs: the first one has answered by then.
  await waitUntil(() => dev.stats.commands.some((c) => c.command === 'show ip interface brief'));
  controller.abort(new SvcError('CANCELLED', 'the job was cancelled'));
  const err = await pending;
  assert.equal(err.code, 'CANCELLED');
  assert.deepEqual(Object.keys(err.results ?? {}), ['show version']);
  assert.deepEqual(statuses(err.commandStatus), [
    ['show version', 'ok'],
    ['show ip interface brief', 'error'],
    ['show running-config', 'not_run'],
  ]);
});

test('cisco_ios: when a configuration line is rejected, then the lines before it are kept and the ones after it are not_run', async (t) => {
  const dev = await device(t, { platform: 'cisco_ios' });
  const commands = ['interface Loopback100', 'bogus line', 'description x'];
  const err = await failure(jobFor(dev, { kind: 'config', commands }));
  assert.equal(err.code, 'COMMAND_ERROR');
  assert.deepEqual(Object.keys(err.results ?? {}), ['interface Loopback100', 'bogus line']);
  assert.equal(err.results?.['interface Loopback100'], '');
  assert.match(String(err.results?.['bogus line']), /% Invalid input/);
  assert.deepEqual(statuses(err.commandStatus), [
    ['interface Loopback100', 'ok'],
    ['bogus line', 'error'],
    ['description x', 'not_run'],
  ]);
  assert.match(err.commandStatus?.[1]?.error ?? '', /% Invalid input/);
});

test('juniper_junos: when the commit never ends, then READ_TIMEOUT keeps the configuration lines and marks the commit timeout', async (t) => {
  const dev = await device(t, { platform: 'juniper_junos', faults: { hang: '^commit$' } });
  const line = 'set interfaces ge-0/0/1 description x';
  const err = await failure(
    jobFor(dev, { kind: 'config', commands: [line], commit: true, readTimeoutMs: 500 }),
    createDeviceRunner({ pool: null, poolExclude: [], commitSaveFloorMs: 500 }),
  );
  assert.equal(err.code, 'READ_TIMEOUT');
  assert.deepEqual(err.results, { [line]: '' });
  assert.deepEqual(statuses(err.commandStatus), [
    [line, 'ok'],
    ['commit', 'timeout'],
  ]);
});

test('cisco_ios: when a configuration job succeeds, then command_status lists each line as ok', async (t) => {
  const dev = await device(t, { platform: 'cisco_ios' });
  const commands = ['interface Loopback100', 'description x'];
  const out = await unpooled(jobFor(dev, { kind: 'config', commands, saveConfig: true }));
  assert.deepEqual(statuses(out.commandStatus), [
    ['interface Loopback100', 'ok'],
    ['description x', 'ok'],
    ['write memory', 'ok'],
  ]);
});

// Finding 4: prompts learned from the device.

const shapes: { name: string; options: StartDeviceOptions; show: string; config?: string[] }[] = [
  {
    name: 'huawei with a name> prompt',
    options: { platform: 'huawei', prompts: { user: '{hostname}>', enable: '{hostname}>' } },
    show: 'display version',
    config: ['interface LoopBack100', 'description x'],
  },
  {
    name: 'hp_comware with a name> prompt',
    options: { platform: 'hp_comware', prompts: { user: '{hostname}>', enable: '{hostname}>' } },
    show: 'display version',
    config: ['interface LoopBack100', 'description x'],
  },
  {
    // Not even the platform's login hint (`>` or `]` at the end) matches: the hint is no condition.
    name: 'huawei with a name# prompt',
    options: { platform: 'huawei', prompts: { user: '{hostname}#', enable: '{hostname}#' } },
    show: 'display version',
    config: ['interface LoopBack100', 'description x'],
  },
  {
    name: 'extreme_exos with a name> prompt',
    options: { platform: 'extreme_exos', prompts: { user: '{hostname}>', enable: '{hostname}>' } },
    show: 'show version',
  },
  {
    name: 'cisco_ios with dots and dashes in the name',
    options: { platform: 'cisco_ios', hostname: 'core-sw1.lab.example' },
    show: 'show version',
    config: ['interface Loopback100', 'description x'],
  },
  {
    name: 'cisco_ios with parentheses in the name',
    options: { platform: 'cisco_ios', hostname: 'R1(lab)' },
    show: 'show version',
    config: ['interface Loopback100', 'description x'],
  },
  {
    name: 'cisco_ios with a space in the name',
    options: { platform: 'cisco_ios', hostname: 'R1 lab' },
    show: 'show version',
    config: ['interface Loopback100', 'description x'],
  },
  {
    name: 'cisco_ios with a trailing space after the prompt',
    options: {
      platform: 'cisco_ios',
      prompts: {
        user: '{hostname}> ',
        enable: '{hostname}# ',
        config: '{hostname}(config)# ',
        sub: '{hostname}(config-{sub})# ',
      },
    },
    show: 'show version',
    config: ['interface Loopback100', 'description x'],
  },
  {
    name: 'juniper_junos with a dotted name and a context line above the prompt',
    options: {
      platform: 'juniper_junos',
      hostname: 'fw-1.dc.example',
      contextLine: '{primary:node0}',
    },
    show: 'show interfaces terse',
    config: ['set interfaces ge-0/0/1 description x'],
  },
];

for (const shape of shapes) {
  test(`${shape.name}: when jobs run, then the prompt is learned and outputs are whole`, async (t) => {
    const dev = await device(t, shape.options);
    const out = await unpooled(jobFor(dev, { readTimeoutMs: 2000, commands: [shape.show] }));
    const want = expectedOutput(dev, shape.show);
    // Junos keeps the blank line it prints above a context line (as the reference driver).
    const trail = shape.options.contextLine === undefined ? '' : '\n';
    assert.equal(out.results[shape.show], want + trail);
    if (shape.config !== undefined) {
      const junos = shape.options.platform === 'juniper_junos';
      const cfg = await unpooled(
        jobFor(dev, { readTimeoutMs: 2000, kind: 'config', commands: shape.config, commit: junos }),
      );
      assert.deepEqual(
        statuses(cfg.commandStatus).slice(0, shape.config.length),
        shape.config.map((c) => [c, 'ok']),
      );
      assert.notEqual(dev.lastMode, 'config');
    }
  });
}

// Finding 5: enable forms.

test('ericsson_ipos: when the device answers "enable 15" with Unknown command, then the next enable form is tried and the job runs', async (t) => {
  const dev = await device(t, {
    platform: 'ericsson_ipos',
    enableCommands: ['enable'],
    unknownText: '% Unknown command',
  });
  const out = await unpooled(jobFor(dev, { commands: ['show version'] }));
  assert.equal(out.results['show version'], expectedOutput(dev, 'show version'));
  const sent = dev.stats.commands.map((c) => c.command);
  assert.ok(sent.indexOf('enable 15') < sent.indexOf('enable'), sent.join(', '));
});

for (const platform of ['ericsson_ipos', 'yamaha'] as const) {
  test(`${platform}: when the device refuses every enable form without asking a password, then ENABLE_REFUSED with the device's answer, not AUTH_FAILED`, async (t) => {
    const dev = await device(t, { platform, enableCommands: [], unknownText: 'Unknown command' });
    const err = await failure(jobFor(dev, { commands: ['show version'] }));
    assert.equal(err.code, 'ENABLE_REFUSED');
    assert.match(err.message, /Unknown command/);
    assert.ok(!err.message.includes(dev.enable), 'no secret in the text');
  });
}

test('ericsson_ipos: when the enable password is answered and refused, then AUTH_FAILED', async (t) => {
  const dev = await device(t, { platform: 'ericsson_ipos' });
  const err = await failure(jobFor(dev, { enable: 'wrong-secret', commands: ['show version'] }));
  assert.equal(err.code, 'AUTH_FAILED');
});

// Finding 6: the detection outlives a failure.

test('autodetect: when the job fails after the platform was detected, then detected_platform is kept', async (t) => {
  const dev = await device(t, { platform: 'cisco_ios', faults: { hang: '^show running-config$' } });
  const err = await failure(
    jobFor(dev, {
      platform: 'autodetect',
      readTimeoutMs: 800,
      commands: ['show version', 'show running-config'],
    }),
  );
  assert.equal(err.code, 'READ_TIMEOUT');
  assert.equal(err.detectedPlatform, 'cisco_ios');
  assert.deepEqual(Object.keys(err.results ?? {}), ['show version']);
});

/** Resolves once `check` holds; checks again on each turn of the event loop's timers. */
async function waitUntil(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setImmediate(r));
}

test('cisco_ios: when a pooled job times out, then its session is closed, never reused', async (t) => {
  const { pool, run } = pooled(t);
  const dev = await device(t, { platform: 'cisco_ios', faults: { hang: '^show running-config$' } });
  await failure(
    jobFor(dev, { readTimeoutMs: 500, commands: ['show version', 'show running-config'] }),
    run,
  );
  assert.equal(pool.size, 0);
  await dev.setFaults({});
  const next = await run(jobFor(dev, { commands: ['show version'] }));
  assert.equal(next.pooled, false);
});

test('cisco_ios: when a command is rejected and a later one times out, then COMMAND_ERROR (the first failure) names both and every output is kept', async (t) => {
  const dev = await device(t, { platform: 'cisco_ios', faults: { hang: '^show running-config$' } });
  const commands = ['show bogus', 'show version', 'show running-config', 'show ip interface brief'];
  const err = await failure(jobFor(dev, { readTimeoutMs: 500, commands }));
  assert.equal(err.code, 'COMMAND_ERROR');
  assert.match(err.message, /"show bogus" rejected by the device.*; then read timeout/);
  assert.deepEqual(Object.keys(err.results ?? {}), ['show bogus', 'show version']);
  assert.deepEqual(statuses(err.commandStatus), [
    ['show bogus', 'error'],
    ['show version', 'ok'],
    ['show running-config', 'timeout'],
    ['show ip interface brief', 'not_run'],
  ]);
});

test('huawei with a name> prompt: when sysname renames the device, then the learned prompt follows and the warm session serves the next job', async (t) => {
  const { run } = pooled(t);
  const dev = await device(t, {
    platform: 'huawei',
    hostname: 'HW1',
    prompts: { user: '{hostname}>', enable: '{hostname}>' },
  });
  const cfg = await run(
    jobFor(dev, {
      readTimeoutMs: 2000,
      kind: 'config',
      commands: ['sysname AGG-7', 'interface GigabitEthernet0/0/1', 'description x'],
      saveConfig: true,
    }),
  );
  assert.equal(dev.hostname, 'AGG-7');
  assert.equal(dev.stats.saves, 1);
  assert.ok('save' in cfg.results);
  const next = await run(jobFor(dev, { readTimeoutMs: 2000, commands: ['display version'] }));
  assert.equal(next.pooled, true);
  assert.equal(next.results['display version'], expectedOutput(dev, 'display version'));
});
