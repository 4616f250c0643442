import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import {
  loadInventory,
  normalizePlatform,
  parseAnsibleIniInventory,
  CliError,
  ExitCode,
  parseAnsibleInventory,
  parseCsvInventory,
  parseHostPort,
  parseNornirHosts,
} from '../src/mod.js';

test('when a CSV inventory has quoted cells, aliases and extra columns, then devices carry them as fields and tags', () => {
  const devices = parseCsvInventory(
    '\uFEFFName,Hostname,Port,Device_Type,site,"rack"\r\n' +
      '# a comment\n' +
      '\n' +
      'r1,10.0.0.1,2222,ios,ams,"r-1"\n' +
      'r2,"10.0.0.2",,cisco_xr,,\n',
    'inv.csv',
  );
  assert.deepEqual(devices, [
    {
      name: 'r1',
      host: '10.0.0.1',
      port: 2222,
      platform: 'cisco_ios',
      tags: { site: 'ams', rack: 'r-1' },
    },
    { name: 'r2', host: '10.0.0.2', platform: 'cisco_xr' },
  ]);
});

test('when a CSV inventory lacks a host column or has a bad port, then it is a usage error naming the line', () => {
  assert.throws(
    () => parseCsvInventory('name,port\nr1,22\n', 'inv.csv'),
    (e: unknown) =>
      e instanceof CliError && e.exitCode === ExitCode.usage && /host/.test(e.message),
  );
  assert.throws(() => parseCsvInventory('host,port\nr1,99999\n', 'inv.csv'), /line 2: port/);
  assert.throws(() => parseCsvInventory('host,port\n"r1,22\n', 'inv.csv'), /unterminated quote/);
});

test('when an Ansible inventory nests groups, then hosts inherit group vars, host vars win, and --group selects', () => {
  const doc = parseYaml(`
all:
  vars:
    ansible_network_os: arista.eos.eos
    ansible_user: netops
  children:
    spine:
      vars:
        ansible_port: 2200
      hosts:
        s1:
          ansible_host: 10.1.0.1
        s2:
          ansible_host: 10.1.0.2
          ansible_network_os: cisco.nxos.nxos
    leaf:
      children:
        leaf_ams:
          hosts:
            l1:
              ansible_password: pw
              ansible_become_password: en
`);
  assert.deepEqual(parseAnsibleInventory(doc, 'hosts.yml'), [
    { name: 's1', host: '10.1.0.1', port: 2200, platform: 'arista_eos', username: 'netops' },
    { name: 's2', host: '10.1.0.2', port: 2200, platform: 'cisco_nxos', username: 'netops' },
    { host: 'l1', platform: 'arista_eos', username: 'netops', password: 'pw', enable: 'en' },
  ]);
  assert.deepEqual(
    parseAnsibleInventory(doc, 'hosts.yml', 'leaf').map((d) => d.host),
    ['l1'],
  );
  assert.throws(() => parseAnsibleInventory(doc, 'hosts.yml', 'nope'), /no group nope/);
});

test('when a Nornir hosts file names napalm platforms, groups, data tags and a netmiko secret, then they map to device fields', () => {
  const doc = parseYaml(`
r1:
  hostname: 192.0.2.1
  platform: junos
  groups: [core]
  data:
    tags: {site: fra}
r2:
  platform: eos
  port: 22
  username: admin
  password: pw
  connection_options:
    netmiko:
      extras:
        secret: en
`);
  assert.deepEqual(parseNornirHosts(doc, 'hosts.yaml'), [
    { name: 'r1', host: '192.0.2.1', platform: 'juniper_junos', tags: { site: 'fra' } },
    {
      host: 'r2',
      port: 22,
      platform: 'arista_eos',
      username: 'admin',
      password: 'pw',
      enable: 'en',
    },
  ]);
  assert.deepEqual(
    parseNornirHosts(doc, 'hosts.yaml', 'core').map((d) => d.host),
    ['192.0.2.1'],
  );
});

test('when a host argument carries a port, then host and port are split (IPv6 in brackets)', () => {
  assert.deepEqual(parseHostPort('r1'), { host: 'r1' });
  assert.deepEqual(parseHostPort('r1:2222'), { host: 'r1', port: 2222 });
  assert.deepEqual(parseHostPort('[2001:db8::1]:22'), { host: '2001:db8::1', port: 22 });
  assert.deepEqual(parseHostPort('2001:db8::1'), { host: '2001:db8::1' });
});

test('when an inventory names a platform the Ansible or NAPALM way, then it becomes the trusted library name', () => {
  assert.equal(normalizePlatform('community.network.icx'), 'ruckus_fastiron');
  assert.equal(normalizePlatform('edgeos'), 'ubiquiti_edgerouter');
  assert.equal(normalizePlatform('VOSS'), 'avaya_vsp');
  assert.equal(normalizePlatform('sros'), 'alcatel_sros');
  assert.equal(normalizePlatform('dlink_ds'), 'dlink_ds');
});

// Issue 24, finding 8: Ansible INI (Ansible's default format) and YAML read as
// `ansible-inventory --list` reads them; CSV through csv-parse (multi-line quoted fields).
const ANSIBLE_INI = `# Ansible's default inventory format
edge1 ansible_host=10.0.0.9

[spine]
s1 ansible_host=10.1.0.1 ansible_port=2201
s2 ansible_host="10.1.0.2"  # a comment

[spine:vars]
ansible_network_os=cisco.ios.ios
ansible_port=2200

[leaf_ams]
l1 ansible_network_os=cisco_ios

[leaf:children]
leaf_ams

[leaf:vars]
ansible_user=leafops

[all:vars]
ansible_user=netops
ansible_network_os=arista.eos.eos
`;

test('when an Ansible INI inventory has groups, children, group and host vars, then hosts get them as ansible-inventory does', () => {
  assert.deepEqual(parseAnsibleIniInventory(ANSIBLE_INI, 'hosts'), [
    { name: 'edge1', host: '10.0.0.9', platform: 'arista_eos', username: 'netops' },
    { name: 's1', host: '10.1.0.1', port: 2201, platform: 'cisco_ios', username: 'netops' },
    { name: 's2', host: '10.1.0.2', port: 2200, platform: 'cisco_ios', username: 'netops' },
    { host: 'l1', platform: 'cisco_ios', username: 'leafops' },
  ]);
  assert.deepEqual(
    parseAnsibleIniInventory(ANSIBLE_INI, 'hosts', 'leaf').map((d) => d.host),
    ['l1'],
  );
  assert.throws(() => parseAnsibleIniInventory(ANSIBLE_INI, 'hosts', 'nope'), /no group nope/);
});

test('when an Ansible inventory file has no extension and is INI, then --hosts @file reads it (no YAML error)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-inv-'));
  try {
    const file = join(dir, 'hosts');
    writeFileSync(file, ANSIBLE_INI);
    assert.equal(loadInventory(`@${file}`).length, 4);
    assert.deepEqual(
      loadInventory(`@${file}`, { group: 'spine' }).map((d) => d.host),
      ['10.1.0.1', '10.1.0.2'],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('when a YAML group is defined at the top level and named as a child elsewhere, then its hosts inherit the parent group vars', () => {
  const doc = parseYaml(`
all:
  children:
    routers:
      vars:
        ansible_network_os: cisco.ios.ios
      children:
        ams:
ams:
  hosts:
    r1:
      ansible_host: 10.2.0.1
`);
  assert.deepEqual(parseAnsibleInventory(doc, 'hosts.yml'), [
    { name: 'r1', host: '10.2.0.1', platform: 'cisco_ios' },
  ]);
  assert.deepEqual(
    parseAnsibleInventory(doc, 'hosts.yml', 'routers').map((d) => d.host),
    ['10.2.0.1'],
  );
});

test('when a CSV cell is quoted across lines, then it is one field and later lines keep their numbers', () => {
  const devices = parseCsvInventory(
    'name,host,port\n"core\nrouter",10.0.0.1,22\nr2,10.0.0.2,\n',
    'inv.csv',
  );
  assert.deepEqual(devices, [
    { name: 'core\nrouter', host: '10.0.0.1', port: 22 },
    { name: 'r2', host: '10.0.0.2' },
  ]);
  assert.throws(
    () => parseCsvInventory('name,host,port\n"a\nb",10.0.0.1,22\nr2,10.0.0.2,99999\n', 'inv.csv'),
    /line 4: port/,
  );
});

test('when host vars are asked for, then each Ansible host carries its group and host vars without ansible_/svc_ ones, and each Nornir host its data', () => {
  const doc = parseYaml(`
all:
  vars:
    ansible_password: pw
    vlan: 10
  children:
    spine:
      vars:
        asn: 65001
        svc_platform: cisco_ios
      hosts:
        s1:
          ansible_host: 10.1.0.1
          loopback: 192.0.2.1
          vlan: 20
`);
  assert.deepEqual(parseAnsibleInventory(doc, 'hosts.yml', undefined, true), [
    {
      name: 's1',
      host: '10.1.0.1',
      platform: 'cisco_ios',
      password: 'pw',
      vars: { vlan: 20, asn: 65001, loopback: '192.0.2.1' },
    },
  ]);
  assert.deepEqual(
    parseAnsibleIniInventory('r1 ansible_host=10.0.0.1 site=ams\n', 'hosts', undefined, true),
    [{ name: 'r1', host: '10.0.0.1', vars: { site: 'ams' } }],
  );
  const nornir = parseYaml(`
r1:
  hostname: 192.0.2.1
  data:
    site: fra
    vlans: [10, 20]
`);
  assert.deepEqual(parseNornirHosts(nornir, 'hosts.yaml', undefined, true), [
    { name: 'r1', host: '192.0.2.1', vars: { site: 'fra', vlans: [10, 20] } },
  ]);
  assert.equal(parseAnsibleInventory(doc, 'hosts.yml')[0]?.vars, undefined, 'only when asked');
});
