import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConfigError,
  canonicalHost,
  canonicalIp,
  deviceNetworkPolicy,
  webhookNetworkPolicy,
} from '@svc/proto';
import { deviceKeyOf, resolveHost } from '../src/mod.js';

test('when one address is written several ways, then its canonical form is one text', () => {
  assert.equal(canonicalIp('::ffff:127.0.0.1'), '127.0.0.1');
  assert.equal(canonicalIp('[::1]'), '::1');
  assert.equal(canonicalIp('0:0:0:0:0:0:0:1'), '::1');
  assert.equal(canonicalIp('2001:DB8:0:0:0:0:0:1'), '2001:db8::1');
  assert.equal(canonicalIp('127.0.0.1'), '127.0.0.1');
  assert.equal(canonicalIp('router1.example.com'), null);
  // Not standard dotted-quad: a name for the resolver, whose answer is then what is checked.
  assert.equal(canonicalIp('127.1'), null);
  assert.equal(canonicalHost('Router1.Example.COM.'), 'router1.example.com');
  assert.equal(deviceKeyOf('lab', '::ffff:127.0.0.1', 22), deviceKeyOf('lab', '127.0.0.1', 22));
});

test('when a name or a short form resolves, then the job gets one canonical address', async () => {
  assert.equal(await resolveHost('localhost'), '127.0.0.1');
  assert.equal(await resolveHost('127.1'), '127.0.0.1');
  assert.equal(await resolveHost('::ffff:127.0.0.1'), '127.0.0.1');
  assert.equal(await resolveHost('no-such-host.invalid'), null);
});

test('when the device policy is the default, then loopback, link-local, unspecified and multicast are refused, others allowed', () => {
  const policy = deviceNetworkPolicy({ DEVICE_NETWORKS_ALLOW: [], DEVICE_NETWORKS_DENY: [] });
  for (const a of [
    '127.0.0.1',
    '169.254.169.254',
    '0.0.0.0',
    '::',
    '::1',
    '224.0.0.5',
    'fe80::1',
  ]) {
    assert.equal(policy.check('default', a, a).allowed, false, a);
  }
  for (const a of ['192.0.2.10', '10.1.1.1', '2001:db8::1']) {
    assert.equal(policy.check('default', a, a).allowed, true, a);
  }
});

test('when entries name contexts, networks, addresses and host names, then each applies where it says', () => {
  const policy = deviceNetworkPolicy({
    DEVICE_NETWORKS_ALLOW: ['lab=127.0.0.0/8', 'lab=10.0.0.0/8', 'prod=*.core.example.com', '*'],
    DEVICE_NETWORKS_DENY: ['lab=10.9.0.0/16', 'bad-*.example.com'],
  });
  assert.equal(policy.check('lab', 'localhost', '127.0.0.1').allowed, true);
  assert.equal(policy.check('default', 'localhost', '127.0.0.1').allowed, false);
  assert.equal(policy.check('lab', '10.9.1.1', '10.9.1.1').allowed, false);
  assert.equal(policy.check('lab', '10.1.1.1', '10.1.1.1').allowed, true);
  // `*` is global: other addresses stay reachable in every context.
  assert.equal(policy.check('lab', '192.0.2.1', '192.0.2.1').allowed, true);
  assert.equal(policy.check('default', 'bad-r1.example.com', '192.0.2.1').allowed, false);
  // A host-name entry never lifts a refused range: the name could resolve anywhere.
  assert.equal(policy.check('prod', 'r1.core.example.com', '169.254.169.254').allowed, false);
  // A wide network does not lift a refused range either; only a network inside it does.
  const wide = deviceNetworkPolicy({
    DEVICE_NETWORKS_ALLOW: ['0.0.0.0/0'],
    DEVICE_NETWORKS_DENY: [],
  });
  assert.equal(wide.check('default', '127.0.0.1', '127.0.0.1').allowed, false);
  assert.equal(wide.check('default', '192.0.2.1', '192.0.2.1').allowed, true);
  const strict = deviceNetworkPolicy({
    DEVICE_NETWORKS_ALLOW: ['10.0.0.0/8'],
    DEVICE_NETWORKS_DENY: [],
  });
  assert.equal(strict.check('default', '192.0.2.1', '192.0.2.1').allowed, false);
});

test('when policy entries are malformed, then every one is reported at once', () => {
  assert.throws(
    () =>
      deviceNetworkPolicy({
        DEVICE_NETWORKS_ALLOW: ['10.0.0.0/33', 'lab=not a host'],
        DEVICE_NETWORKS_DENY: ['bad/cidr'],
      }),
    (err: unknown) => err instanceof ConfigError && err.problems.length === 3,
  );
});

test('when a webhook target is private and not allowed, then it is refused', () => {
  const policy = webhookNetworkPolicy({ WEBHOOK_ALLOW_NETWORKS: ['127.0.0.0/8'] });
  assert.equal(policy.check('', '127.0.0.1', '127.0.0.1').allowed, true);
  for (const a of ['10.0.0.1', '192.168.1.1', '172.16.0.1', '169.254.169.254', 'fd00::1']) {
    assert.equal(policy.check('', a, a).allowed, false, a);
  }
  assert.equal(policy.check('', '192.0.2.1', '192.0.2.1').allowed, true);
});
