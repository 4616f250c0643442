import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse as parseYaml } from 'yaml';
import {
  normalizePlatform,
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
    { host: '10.0.0.1', port: 2222, platform: 'cisco_ios', tags: { site: 'ams', rack: 'r-1' } },
    { host: '10.0.0.2', platform: 'cisco_xr' },
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
    { host: '10.1.0.1', port: 2200, platform: 'arista_eos', username: 'netops' },
    { host: '10.1.0.2', port: 2200, platform: 'cisco_nxos', username: 'netops' },
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
    { host: '192.0.2.1', platform: 'juniper_junos', tags: { site: 'fra' } },
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
