// Unit cases for how TTP builds the result structure: expand, itemize, `*`/`**`
// path formatters, tail matches after a child group, and group functions whose
// parameters are given by name. Expected values follow TTP 0.9's semantics.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseTtp } from '../src/ttp/mod.js';

/** The single structure of a one-template, one-input parse. */
function parseOne(template: string, input: string): unknown {
  const result = parseTtp(template, input) as unknown[][];
  return result[0]?.[0];
}

describe('expand', () => {
  const template = `<group name="ports*" expand="">
port {{ id }}
 speed {{ link.speed | to_int }}
 <group name="vlan">
 vlan {{ tag }}
 </group>
 duplex {{ link.duplex }}
</group>`;

  test('when match variables have dotted names, then they become nested objects', () => {
    const out = parseOne(template, 'port 2\n speed 100\n duplex half\n');
    assert.deepStrictEqual(out, { ports: [{ id: '2', link: { speed: 100, duplex: 'half' } }] });
  });

  test('when a dotted variable matches after a child group, then it is expanded into the same item', () => {
    const out = parseOne(
      template,
      'port 1\n speed 1000\n vlan 10\n duplex full\nport 2\n speed 100\n duplex half\n',
    );
    assert.deepStrictEqual(out, {
      ports: [
        { id: '1', link: { speed: 1000, duplex: 'full' }, vlan: { tag: '10' } },
        { id: '2', link: { speed: 100, duplex: 'half' } },
      ],
    });
  });
});

describe('itemize', () => {
  const users = 'user alice level 15\nuser bob level 1\nuser carol level 15\n';

  test('when itemize names its key with key=, then the group path holds a list of that key', () => {
    const out = parseOne(
      `<group name="names" functions="itemize(key='name')">\nuser {{ name }} level {{ level }}\n</group>`,
      users,
    );
    assert.deepStrictEqual(out, { names: ['alice', 'bob', 'carol'] });
  });

  test('when itemize has a dynamic path, then values are listed under it and the path variable is consumed', () => {
    const out = parseOne(
      `<group name="users*" functions="itemize(key='name', path='by_level.{{ level }}')">\nuser {{ name }} level {{ level }}\n</group>`,
      users,
    );
    assert.deepStrictEqual(out, {
      users: [{ name: 'alice' }, { name: 'bob' }, { name: 'carol' }],
      by_level: { '15': ['alice', 'carol'], '1': ['bob'] },
    });
  });

  test('when an item lacks the itemized key, then it is dropped', () => {
    const out = parseOne(
      `<group name="addresses" itemize="ip">\ninterface {{ name }}\n ip address {{ ip }}\n</group>`,
      'interface a\n ip address 10.0.0.1\ninterface b\ninterface c\n ip address 10.0.0.3\n',
    );
    assert.deepStrictEqual(out, { addresses: ['10.0.0.1', '10.0.0.3'] });
  });
});

describe('path formatters', () => {
  test('when a path item ends in *, then its child is a list even for one item', () => {
    const out = parseOne(`<group name="vlans*">\nvlan {{ id }}\n</group>`, 'vlan 10\n');
    assert.deepStrictEqual(out, { vlans: [{ id: '10' }] });
  });

  test('when * sits inside a path, then that level is a list of objects', () => {
    const out = parseOne(
      `<group name="sites*.core.routers">\nrouter {{ name }}\n</group>`,
      'router r1\nrouter r2\n',
    );
    assert.deepStrictEqual(out, {
      sites: [{ core: { routers: [{ name: 'r1' }, { name: 'r2' }] } }],
    });
  });

  test('when two groups use the same ** path, then their items merge into one object', () => {
    const out = parseOne(
      `<group name="system**">\nhostname {{ hostname }}\n</group>\n<group name="system**">\nversion {{ version }}\n</group>`,
      'hostname r1\nversion 15.2\n',
    );
    assert.deepStrictEqual(out, { system: { hostname: 'r1', version: '15.2' } });
  });

  test('when a dynamic path value ends in *, then the * is part of the key, not a list marker', () => {
    const out = parseOne(
      `<group name="peers.{{ peer }}">\nneighbor {{ peer }} state {{ state }}\n</group>`,
      'neighbor core* state up\n',
    );
    assert.deepStrictEqual(out, { peers: { 'core*': { state: 'up' } } });
  });
});

describe('tail matches', () => {
  test('when a parent line follows its child group, then it joins the parent item and group functions see the whole item', () => {
    const out = parseOne(
      `<group name="interfaces*" sformat="string='{name}/{mtu}', add_field='label'">
interface {{ name }}
 <group name="ipv4">
 ip address {{ ip }}
 </group>
 mtu {{ mtu }}
</group>`,
      'interface Gi1\n ip address 10.0.0.1\n mtu 9000\ninterface Gi2\n mtu 1500\n',
    );
    assert.deepStrictEqual(out, {
      interfaces: [
        { name: 'Gi1', ipv4: { ip: '10.0.0.1' }, mtu: '9000', label: 'Gi1/9000' },
        { name: 'Gi2', mtu: '1500', label: 'Gi2/1500' },
      ],
    });
  });

  test('when a named group has an anonymous child, then a failed check in the child does not end the parent', () => {
    const out = parseOne(
      `<group name="members*">
Members: {{ _start_ }}
  <group>
  {{ port | exclude("Port") }} {{ state }}
  </group>
</group>`,
      'Members:\n  Port State\n  ge1 up\n  ge2 down\n',
    );
    assert.deepStrictEqual(out, {
      members: [
        { port: 'ge1', state: 'up' },
        { port: 'ge2', state: 'down' },
      ],
    });
  });
});

describe('group functions with named parameters', () => {
  const lookup = `<lookup name="vendors" load="json">
{"cisco": "Cisco Systems", "arista": "Arista Networks"}
</lookup>
`;

  test('when lookup names key and add_field, then the found value lands in the new field', () => {
    const out = parseOne(
      `${lookup}<group name="devices*" functions="lookup(key='vendor', name='vendors', add_field='maker')">\ndevice {{ host }} vendor {{ vendor }}\n</group>`,
      'device r1 vendor cisco\ndevice r2 vendor juniper\n',
    );
    assert.deepStrictEqual(out, {
      devices: [
        { host: 'r1', vendor: 'cisco', maker: 'Cisco Systems' },
        { host: 'r2', vendor: 'juniper' },
      ],
    });
  });

  test('when a match variable looks up with add_field, then the match stays and the value is added', () => {
    const out = parseOne(
      `${lookup}<group name="devices*">\ndevice {{ host }} vendor {{ vendor | lookup('vendors', add_field='maker') }}\n</group>`,
      'device r1 vendor arista\n',
    );
    assert.deepStrictEqual(out, {
      devices: [{ host: 'r1', vendor: 'arista', maker: 'Arista Networks' }],
    });
  });

  test('when a python lookup body is a bare dict literal, then it is the table for lookup with add_field', () => {
    const out = parseOne(
      `<lookup name="apps" load="python">
{ "by_ip": {
    "10.0.0.1": "billing",
    "10.0.0.2": "crm"}}
</lookup>
<group name="arp*" lookup="'ip', name='apps.by_ip', add_field='app'">
Internet {{ ip }} {{ mac }}
</group>`,
      'Internet 10.0.0.1 aaaa.bbbb.cccc\nInternet 10.0.0.9 aaaa.bbbb.dddd\n',
    );
    assert.deepStrictEqual(out, {
      arp: [
        { ip: '10.0.0.1', mac: 'aaaa.bbbb.cccc', app: 'billing' },
        { ip: '10.0.0.9', mac: 'aaaa.bbbb.dddd' },
      ],
    });
  });

  test('when items2dict misses one of its keys, then the item is dropped', () => {
    const out = parseOne(
      `<group name="vlans*" items2dict="key_name='id', value_name='name'">\nvlan {{ id }}\n name {{ name }}\n</group>`,
      'vlan 10\n name users\nvlan 20\n',
    );
    assert.deepStrictEqual(out, { vlans: [{ '10': 'users' }] });
  });

  test('when sformat names its arguments, then the formatted string is added', () => {
    const out = parseOne(
      `<group name="ifs*" sformat="string='{name}:{unit}', add_field='full'">\ninterface {{ name }} unit {{ unit }}\n</group>`,
      'interface ge-0/0/0 unit 10\n',
    );
    assert.deepStrictEqual(out, { ifs: [{ name: 'ge-0/0/0', unit: '10', full: 'ge-0/0/0:10' }] });
  });
});
