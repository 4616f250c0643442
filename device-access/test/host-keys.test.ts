import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '@svc/proto';
import { fingerprintOf, hostKeyModes, parseOpenSshPublicKey } from '../src/mod.js';

// A throwaway key and the fingerprint OpenSSH 9.2's `ssh-keygen -lf` printed for it.
const PUB =
  'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPtEvjG2v7zOQsFSL+pIIDT0h9QsnoPenpEhn+wHhkPj root@vm';
const FINGERPRINT = 'SHA256:S6n0RFGqTp3v1qkIlS1PQWiz9+/s4Lxl/6ciD6ad65I';

test('when a public key line is read, then its fingerprint is the one OpenSSH prints', () => {
  const parsed = parseOpenSshPublicKey(PUB);
  assert.ok(parsed);
  assert.equal(parsed.type, 'ssh-ed25519');
  assert.equal(fingerprintOf(parsed.blob), FINGERPRINT);
});

test('when a line is not a public key, or names another type than its blob, then it is refused', () => {
  for (const line of [
    '',
    'ssh-ed25519',
    'ssh-ed25519 not-base64!',
    PUB.replace('ssh-ed25519', 'ssh-rsa'),
    'ssh-ed25519 AAAA',
  ]) {
    assert.equal(parseOpenSshPublicKey(line), null, line);
  }
});

test('when HOST_KEY_POLICY names contexts, then each gets its mode and others the default', () => {
  const mode = hostKeyModes(['strict', 'lab=off', 'edge=tofu']);
  assert.equal(mode('lab'), 'off');
  assert.equal(mode('edge'), 'tofu');
  assert.equal(mode('default'), 'strict');
  assert.equal(hostKeyModes([])('x'), 'tofu');
  assert.throws(
    () => hostKeyModes(['lax', 'lab=never']),
    (err: unknown) => err instanceof ConfigError && err.problems.length === 2,
  );
});
