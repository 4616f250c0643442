import { test } from 'node:test';
import { NO_COMMIT_DRIVERS } from './job-fixtures.js';
import assert from 'node:assert/strict';
import {
  SendCommandRequest,
  Sealer,
  Subjects,
  check,
  encodeToken,
  isDeviceHost,
  normalizeSubmission,
} from '../src/mod.js';

test('when a host is an IPv4, IPv6 or RFC 1123 name, then it is accepted', () => {
  for (const h of [
    '10.0.0.1',
    '::1',
    'fe80::1',
    '2001:db8::5',
    'r1',
    'core-sw1.example.net',
    'a.b.c.',
  ]) {
    assert.equal(isDeviceHost(h), true, h);
  }
});

test('when a host is malformed, then it is rejected', () => {
  for (const h of [
    '',
    '999.1.1.1',
    '1.2.3',
    '-r1',
    'r1-',
    'r_1',
    'a..b',
    'x'.repeat(64),
    'has space',
    '10.0.0.1:22',
  ]) {
    assert.equal(isDeviceHost(h), false, h);
  }
});

test('when a field has the wrong JSON type, then the issue names it and is not coerced', () => {
  const r = check(
    SendCommandRequest,
    { commands: ['show version'], host: 'r1', port: '22' },
    'body',
  );
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.deepEqual(r.issues, [
    { loc: ['body', 'port'], msg: 'value is not a valid integer', type: 'int_type' },
  ]);
});

test('when a nullable field has the wrong type, then one issue is reported, not one per branch', () => {
  const r = check(SendCommandRequest, { commands: ['x'], host: 5 }, 'body');
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.deepEqual(
    r.issues.map((i) => [i.loc, i.type]),
    [[['body', 'host'], 'string_type']],
  );
});

test('when tags break the limits, then each problem is reported at its key', () => {
  const many = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v']));
  const r = check(SendCommandRequest, { commands: ['x'], tags: many }, 'body');
  assert.equal(r.ok, false);
  if (!r.ok) assert.equal(r.issues[0]?.type, 'too_long');
  const bad = check(SendCommandRequest, { commands: ['x'], tags: { 'bad key': 'v' } }, 'body');
  assert.equal(bad.ok, false);
  if (!bad.ok) assert.deepEqual(bad.issues[0]?.loc, ['body', 'tags', 'bad key']);
});

test('when aliases are used, then host and platform come from ip and device_type', () => {
  const n = normalizeSubmission(
    { commands: ['show clock'], ip: '10.1.1.1', device_type: 'arista_eos' },
    {
      kind: 'command',
      basic: { username: 'u', password: 'p' },
      contexts: ['default'],
      builtinDrivers: NO_COMMIT_DRIVERS,
    },
  );
  assert.equal(n.ok, true);
  if (!n.ok) return;
  assert.equal(n.spec.host, '10.1.1.1');
  assert.equal(n.spec.platform, 'arista_eos');
  assert.equal(n.spec.port, 22);
  assert.equal(n.spec.conn_timeout, 10);
  assert.equal(n.spec.read_timeout, 30);
  assert.equal(n.secrets.password, 'p');
});

test('when a Bearer caller gives no device credentials, then username and password are required', () => {
  const n = normalizeSubmission(
    { commands: ['x'], host: 'r1' },
    { kind: 'command', basic: null, contexts: ['default'], builtinDrivers: NO_COMMIT_DRIVERS },
  );
  assert.equal(n.ok, false);
  if (!n.ok)
    assert.deepEqual(
      n.issues.map((i) => i.loc[1]),
      ['username', 'password'],
    );
});

test('when both templates are given, then the structured request is rejected', () => {
  const n = normalizeSubmission(
    { commands: ['x'], host: 'r1', textfsm_template: 'a', ttp_template: 'b' },
    {
      kind: 'structured',
      basic: { username: 'u', password: 'p' },
      contexts: ['default'],
      builtinDrivers: NO_COMMIT_DRIVERS,
    },
  );
  assert.equal(n.ok, false);
});

test('when a secret is sealed, then only a keyring holding its key opens it', () => {
  const a = Sealer.generateKey();
  const b = Sealer.generateKey();
  const sealed = Sealer.fromSetting(a).seal({ password: 'hunter2' });
  assert.ok(!sealed.includes('hunter2'));
  assert.deepEqual(Sealer.fromSetting(`${b},${a}`).open(sealed), { password: 'hunter2' });
  assert.throws(() => Sealer.fromSetting(b).open(sealed));
});

test('when a subject token is unsafe, then the builder refuses it and encodeToken makes it safe', () => {
  assert.throws(() => Subjects.jobs('a.b'));
  assert.throws(() => Subjects.jobs('a b'));
  assert.equal(encodeToken('fe80::1'), 'fe80_3a_3a1');
  assert.equal(Subjects.jobs(encodeToken('r1.example.net')), 'svc.jobs.r1_2eexample_2enet');
});

test('when a submission has an ssh field, then the record keeps profile, algorithms and hops, and the keys and passwords are only in the secrets', () => {
  const key = '-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n';
  const body = {
    host: '10.0.0.1',
    commands: ['show version'],
    username: 'u',
    ssh: {
      profile: 'legacy' as const,
      algorithms: { kex: ['diffie-hellman-group1-sha1'] },
      private_key: key,
      passphrase: 'pp',
      jump_hosts: [{ host: 'bastion.example.net', username: 'j', password: 'jp' }],
    },
  };
  assert.equal(check(SendCommandRequest, body, 'body').ok, true);
  const n = normalizeSubmission(body, {
    kind: 'command',
    basic: null,
    contexts: ['default'],
    builtinDrivers: NO_COMMIT_DRIVERS,
  });
  assert.ok(n.ok, JSON.stringify(n));
  assert.deepEqual(n.spec.ssh, {
    profile: 'legacy',
    algorithms: { kex: ['diffie-hellman-group1-sha1'] },
    jump_hosts: [{ host: 'bastion.example.net', port: 22, username: 'j' }],
  });
  assert.ok(!JSON.stringify(n.spec).includes('jp') && !JSON.stringify(n.spec).includes('AAAA'));
  assert.equal(n.secrets.password, '', 'a key stands in for the password');
  assert.equal(n.secrets.private_key, key);
  assert.deepEqual(n.secrets.jump_hosts, [{ password: 'jp', private_key: null, passphrase: null }]);
});

test('when the ssh field is wrong, then each problem is reported at its place', () => {
  const body = {
    host: '10.0.0.1',
    commands: ['show version'],
    username: 'u',
    ssh: {
      algorithms: { cipher: ['rot13'] },
      passphrase: 'pp',
      jump_hosts: [{ host: 'bad host', username: 'j' }],
    },
  };
  const n = normalizeSubmission(body, {
    kind: 'command',
    basic: null,
    contexts: ['default'],
    builtinDrivers: NO_COMMIT_DRIVERS,
  });
  assert.equal(n.ok, false);
  const locs = n.ok ? [] : n.issues.map((i) => i.loc.join('.'));
  assert.deepEqual(locs.sort(), [
    'body.password',
    'body.ssh.algorithms.cipher.0',
    'body.ssh.jump_hosts.0',
    'body.ssh.jump_hosts.0.host',
    'body.ssh.passphrase',
  ]);
  // Key text must be a key, and a key-like field never accepts control characters but newlines.
  const bad = check(
    SendCommandRequest,
    { host: 'h', commands: ['x'], ssh: { private_key: '-----BEGIN\u0000' } },
    'body',
  );
  assert.equal(bad.ok, false);
});
