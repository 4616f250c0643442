import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PLATFORMS } from '@svc/proto';
import { createDeviceRunner } from '@svc/device-actor';
import type { DeviceJob } from '@svc/device-actor';
import { startDevice, loadPlatform, textOf, type SimulatedDevice } from '@svc/test/support';

/** Per platform: show commands, a config set, and what the device should count. */
const CASES: Record<
  string,
  { show: string[]; config: string[]; commit: boolean; save: boolean; configLines: number; saves: number; commits: number; saveKey?: string }
> = {
  cisco_ios: { show: ['show version', 'show ip interface brief', 'show running-config', 'show interface Gi0/7'], config: ['interface Gi0/1', 'description uplink'], commit: false, save: true, configLines: 2, saves: 1, commits: 0, saveKey: 'write memory' },
  cisco_xe: { show: ['show version', 'show ip interface brief', 'show running-config'], config: ['hostname R9'], commit: false, save: true, configLines: 1, saves: 1, commits: 0, saveKey: 'copy running-config startup-config' },
  cisco_xr: { show: ['show version', 'show ipv4 interface brief', 'show running-config'], config: ['interface Gi0/0/0/1', 'description x'], commit: true, save: false, configLines: 2, saves: 0, commits: 1, saveKey: 'commit' },
  cisco_nxos: { show: ['show version', 'show ip interface brief', 'show running-config'], config: ['interface Eth1/1', 'description x'], commit: false, save: true, configLines: 2, saves: 1, commits: 0, saveKey: 'copy running-config startup-config' },
  cisco_asa: { show: ['show version', 'show interface ip brief', 'show running-config'], config: ['interface Gi0/1', 'nameif inside'], commit: false, save: true, configLines: 2, saves: 1, commits: 0, saveKey: 'write memory' },
  arista_eos: { show: ['show version', 'show ip interface brief', 'show running-config'], config: ['interface Ethernet1', 'description x'], commit: false, save: true, configLines: 2, saves: 1, commits: 0, saveKey: 'write memory' },
  juniper_junos: { show: ['show version', 'show interfaces terse', 'show configuration', 'show interfaces ge-0/0/3 terse'], config: ['set interfaces ge-0/0/1 description x'], commit: true, save: true, configLines: 1, saves: 0, commits: 1, saveKey: 'commit' },
  hp_procurve: { show: ['show version', 'show ip', 'show running-config'], config: ['vlan 10', 'name users'], commit: false, save: true, configLines: 2, saves: 1, commits: 0, saveKey: 'write memory' },
  aruba_aoscx: { show: ['show version', 'show ip interface brief', 'show running-config'], config: ['interface 1/1/1', 'description x'], commit: false, save: true, configLines: 2, saves: 1, commits: 0, saveKey: 'write memory' },
  huawei: { show: ['display version', 'display ip interface brief', 'display current-configuration'], config: ['interface GigabitEthernet0/0/1', 'description x'], commit: false, save: true, configLines: 2, saves: 1, commits: 0, saveKey: 'save' },
  fortinet: { show: ['get system status', 'get system interface', 'show full-configuration'], config: ['config system interface', 'edit port1', 'set alias x', 'next', 'end'], commit: false, save: true, configLines: 2, saves: 0, commits: 0 },
  paloalto_panos: { show: ['show system info', 'show interface all', 'show config running'], config: ['set deviceconfig system hostname PA2'], commit: true, save: false, configLines: 1, saves: 0, commits: 1, saveKey: 'commit' },
  linux: { show: ['uname -a', 'ip -br addr', 'ip link show eth0'], config: ['echo configured'], commit: false, save: false, configLines: 0, saves: 0, commits: 0 },
};

/** The text the device's catalog says a command prints, as a person would read it. */
function expectedOutput(dev: SimulatedDevice, command: string): string {
  for (const e of loadPlatform(dev.platform).commands) {
    let groups: string[] | null = null;
    if (e.command !== undefined && e.command === command) groups = [command];
    if (e.regex !== undefined) {
      const m = new RegExp(e.regex).exec(command);
      if (m !== null) groups = Array.from(m, (g) => g ?? '');
    }
    if (groups === null) continue;
    const g = groups;
    return textOf(e.output)
      .replaceAll('{hostname}', dev.hostname)
      .replaceAll('{username}', dev.username)
      .replace(/\$(\d)/g, (_m, d: string) => g[Number(d)] ?? '');
  }
  throw new Error(`no catalog entry for ${command}`);
}

function jobFor(dev: SimulatedDevice, over: Partial<DeviceJob> = {}): DeviceJob {
  return {
    jobId: `job-${Math.random().toString(16).slice(2)}`,
    kind: 'command',
    host: dev.host,
    port: dev.port,
    platform: dev.platform,
    username: dev.username,
    password: dev.password,
    enable: dev.enable,
    commands: [],
    connTimeoutMs: 5000,
    readTimeoutMs: 5000,
    expectString: null,
    saveConfig: false,
    commit: false,
    textfsmTemplate: null,
    ttpTemplate: null,
    signal: new AbortController().signal,
    ...over,
  };
}

test('every platform id has a simulator case', () => {
  assert.deepEqual(Object.keys(CASES).sort(), [...PLATFORMS].sort());
});

for (const platform of PLATFORMS) {
  const c = CASES[platform];
  if (c === undefined) continue;
  test(`${platform}: when show commands run, then each output is exactly the device's text`, async (t) => {
    const dev = await startDevice({ platform });
    t.after(() => dev.stop());
    const run = createDeviceRunner({ pool: null, poolExclude: [] });
    const out = await run(jobFor(dev, { commands: c.show }));
    assert.deepEqual(Object.keys(out.results), c.show);
    for (const cmd of c.show) {
      const text = out.results[cmd];
      assert.equal(text, expectedOutput(dev, cmd), `${platform} ${cmd}`);
    }
    assert.equal(out.pooled, false);
    assert.equal(out.detectedPlatform, null);
  });

  test(`${platform}: when a config set runs${c.save ? ' with save' : ''}${c.commit ? ' with commit' : ''}, then the device applied it and is back at exec`, async (t) => {
    const dev = await startDevice({ platform });
    t.after(() => dev.stop());
    const run = createDeviceRunner({ pool: null, poolExclude: [] });
    const out = await run(
      jobFor(dev, { kind: 'config', commands: c.config, saveConfig: c.save, commit: c.commit }),
    );
    for (const line of c.config) assert.ok(line in out.results, `transcript has ${line}`);
    if (c.saveKey !== undefined) assert.ok(c.saveKey in out.results, `transcript has ${c.saveKey}`);
    assert.equal(dev.stats.configLines, c.configLines, 'config lines');
    assert.equal(dev.stats.saves, c.saves, 'saves');
    assert.equal(dev.stats.commits, c.commits, 'commits');
    assert.notEqual(dev.lastMode, 'config');
    if (platform === 'linux') assert.equal(out.results['echo configured'], 'configured');
  });

  test(`${platform}: when the platform is autodetect, then it is detected and the job runs`, async (t) => {
    const dev = await startDevice({ platform });
    t.after(() => dev.stop());
    const run = createDeviceRunner({ pool: null, poolExclude: [] });
    const cmd = c.show[0] ?? '';
    const out = await run(jobFor(dev, { platform: 'autodetect', commands: [cmd] }));
    assert.equal(out.detectedPlatform, platform);
    assert.equal(out.results[cmd], expectedOutput(dev, cmd));
    assert.equal(dev.stats.handshakes, 2, 'one fingerprinting session, one job session');
  });
}
