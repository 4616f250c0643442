import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AddressPolicy,
  DEVICE_REFUSED_RANGES,
  deviceNetworkPolicy,
} from '../src/network-policy.js';

/** The host's interfaces as os.networkInterfaces() reports them (a loopback and one NIC). */
const interfaces = (nic: string) => () => ({
  lo: [
    { address: '127.0.0.1', family: 'IPv4', internal: true },
    { address: '::1', family: 'IPv6', internal: true },
  ],
  eth0: [
    { address: nic, family: 'IPv4', internal: false },
    { address: 'fd00::2', family: 'IPv6', internal: false },
  ],
});

const policy = (allow: string[], nic = '198.51.100.7') =>
  deviceNetworkPolicy(
    { DEVICE_NETWORKS_ALLOW: allow, DEVICE_NETWORKS_DENY: [] },
    { interfaces: interfaces(nic) },
  );

test('when a job names an address of the host the service runs on, then it is refused, whatever `*` allows', () => {
  for (const address of ['198.51.100.7', 'fd00::2', '::ffff:198.51.100.7']) {
    const v = policy(['127.0.0.0/8', '::1/128', '*']).check('default', address, address);
    assert.equal(v.allowed, false, address);
    assert.match((v as { reason: string }).reason, /address of this host/);
  }
  // A network around it does not lift the refusal; naming the address itself does.
  assert.equal(policy(['198.51.100.0/24']).check('default', 'x', '198.51.100.7').allowed, false);
  assert.equal(policy(['198.51.100.7']).check('default', 'x', '198.51.100.7').allowed, true);
  // Other addresses of the same network stay devices.
  assert.equal(policy(['*']).check('default', 'x', '198.51.100.8').allowed, true);
});

test('when loopback is allowed explicitly, then 127.0.0.1 stays allowed although it is the host own', () => {
  assert.equal(policy(['127.0.0.0/8', '*']).check('default', 'x', '127.0.0.1').allowed, true);
  assert.equal(policy(['*']).check('default', 'x', '127.0.0.1').allowed, false);
});

test('when the interfaces change, then the next check sees the new addresses', () => {
  let nic = '198.51.100.7';
  const p = new AddressPolicy({
    allow: ['*'],
    refused: DEVICE_REFUSED_RANGES,
    strict: true,
    allowSetting: 'DEVICE_NETWORKS_ALLOW',
    interfaces: () => interfaces(nic)(),
  });
  assert.equal(p.check('default', 'x', '198.51.100.9').allowed, true);
  nic = '198.51.100.9';
  assert.equal(p.check('default', 'x', '198.51.100.9').allowed, false);
  assert.equal(p.check('default', 'x', '198.51.100.7').allowed, true);
});
