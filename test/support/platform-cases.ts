import { loadPlatform, textOf } from './platform-data.js';
import type { SimulatedDevice } from './device-sim.js';

/** Per platform: show commands, a config set, and what the device should count. */
export const PLATFORM_CASES: Record<
  string,
  {
    show: string[];
    config: string[];
    commit: boolean;
    save: boolean;
    configLines: number;
    saves: number;
    commits: number;
    saveKey?: string;
  }
> = {
  cisco_ios: {
    show: [
      'show version',
      'show ip interface brief',
      'show running-config',
      'show interface Gi0/7',
    ],
    config: ['interface Gi0/1', 'description uplink'],
    commit: false,
    save: true,
    configLines: 2,
    saves: 1,
    commits: 0,
    saveKey: 'write memory',
  },
  cisco_xe: {
    show: ['show version', 'show ip interface brief', 'show running-config'],
    config: ['hostname R9'],
    commit: false,
    save: true,
    configLines: 1,
    saves: 1,
    commits: 0,
    saveKey: 'copy running-config startup-config',
  },
  cisco_xr: {
    show: ['show version', 'show ipv4 interface brief', 'show running-config'],
    config: ['interface Gi0/0/0/1', 'description x'],
    commit: true,
    save: false,
    configLines: 2,
    saves: 0,
    commits: 1,
    saveKey: 'commit',
  },
  cisco_nxos: {
    show: ['show version', 'show ip interface brief', 'show running-config'],
    config: ['interface Eth1/1', 'description x'],
    commit: false,
    save: true,
    configLines: 2,
    saves: 1,
    commits: 0,
    saveKey: 'copy running-config startup-config',
  },
  cisco_asa: {
    show: ['show version', 'show interface ip brief', 'show running-config'],
    config: ['interface Gi0/1', 'nameif inside'],
    commit: false,
    save: true,
    configLines: 2,
    saves: 1,
    commits: 0,
    saveKey: 'write memory',
  },
  arista_eos: {
    show: ['show version', 'show ip interface brief', 'show running-config'],
    config: ['interface Ethernet1', 'description x'],
    commit: false,
    save: true,
    configLines: 2,
    saves: 1,
    commits: 0,
    saveKey: 'write memory',
  },
  juniper_junos: {
    show: [
      'show version',
      'show interfaces terse',
      'show configuration',
      'show interfaces ge-0/0/3 terse',
    ],
    config: ['set interfaces ge-0/0/1 description x'],
    commit: true,
    save: true,
    configLines: 1,
    saves: 0,
    commits: 1,
    saveKey: 'commit',
  },
  hp_procurve: {
    show: ['show version', 'show ip', 'show running-config'],
    config: ['vlan 10', 'name users'],
    commit: false,
    save: true,
    configLines: 2,
    saves: 1,
    commits: 0,
    saveKey: 'write memory',
  },
  aruba_aoscx: {
    show: ['show version', 'show ip interface brief', 'show running-config'],
    config: ['interface 1/1/1', 'description x'],
    commit: false,
    save: true,
    configLines: 2,
    saves: 1,
    commits: 0,
    saveKey: 'write memory',
  },
  huawei: {
    show: ['display version', 'display ip interface brief', 'display current-configuration'],
    config: ['interface GigabitEthernet0/0/1', 'description x'],
    commit: false,
    save: true,
    configLines: 2,
    saves: 1,
    commits: 0,
    saveKey: 'save',
  },
  fortinet: {
    show: ['get system status', 'get system interface', 'show full-configuration'],
    config: ['config system interface', 'edit port1', 'set alias x', 'next', 'end'],
    commit: false,
    save: true,
    configLines: 2,
    saves: 0,
    commits: 0,
  },
  paloalto_panos: {
    show: ['show system info', 'show interface all', 'show config running'],
    config: ['set deviceconfig system hostname PA2'],
    commit: true,
    save: false,
    configLines: 1,
    saves: 0,
    commits: 1,
    saveKey: 'commit',
  },
  huawei_vrpv8: {
    show: ['display version', 'display interface brief', 'display current-configuration'],
    config: ['interface 10GE1/0/1', 'description x'],
    commit: true,
    save: true,
    configLines: 2,
    saves: 1,
    commits: 1,
    saveKey: 'save',
  },
  hp_comware: {
    show: ['display version', 'display ip interface brief', 'display current-configuration'],
    config: ['interface GigabitEthernet1/0/1', 'description x'],
    commit: false,
    save: true,
    configLines: 2,
    saves: 1,
    commits: 0,
    saveKey: 'save force',
  },
  dell_force10: {
    show: ['show version', 'show ip interface brief', 'show running-config'],
    config: ['interface TenGigabitEthernet 1/1', 'description x'],
    commit: false,
    save: true,
    configLines: 2,
    saves: 1,
    commits: 0,
    saveKey: 'copy running-config startup-config',
  },
  ubiquiti_edgeswitch: {
    show: ['show version', 'show ip interface brief', 'show running-config'],
    config: ['interface 0/1', 'description x'],
    commit: false,
    save: true,
    configLines: 2,
    saves: 1,
    commits: 0,
    saveKey: 'write memory',
  },
  extreme_exos: {
    show: ['show version', 'show vlan', 'show configuration'],
    config: ['configure ports 1 description-string x', 'enable ports 1'],
    commit: false,
    save: true,
    configLines: 0,
    saves: 1,
    commits: 0,
    saveKey: 'save configuration',
  },
  vyos: {
    show: ['show version', 'show interfaces', 'show configuration commands'],
    config: ['set interfaces ethernet eth1 description x'],
    commit: true,
    save: true,
    configLines: 1,
    saves: 1,
    commits: 1,
    saveKey: 'save',
  },
  mikrotik_routeros: {
    show: ['/system resource print', '/ip address print', '/export'],
    config: ['/interface ethernet set ether1 comment=x'],
    commit: false,
    save: true,
    configLines: 0,
    saves: 0,
    commits: 0,
  },
  linux: {
    show: ['uname -a', 'ip -br addr', 'ip link show eth0'],
    config: ['echo configured'],
    commit: false,
    save: false,
    configLines: 0,
    saves: 0,
    commits: 0,
  },
};

/** The text the device's catalog says a command prints, as a person would read it. */
export function expectedOutput(dev: SimulatedDevice, command: string): string {
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
