import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalHost, canonicalIp, deviceKeyOf, resolveHost } from '../src/mod.js';

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
