import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import {
  LEGACY_ALGORITHMS,
  SSH_ALGORITHM_KINDS,
  SSH_ALGORITHM_NAMES,
  algorithmsFor,
  sshProfiles,
} from '@svc/proto';
import { nextAuthStep } from '../src/device/ssh/ssh-auth.js';

// The library's own lists (not part of its public surface: read only here, to catch drift).
const constants = createRequire(import.meta.url)('ssh2/lib/protocol/constants.js') as Record<
  string,
  string[]
>;
const SUPPORTED: Record<string, string> = {
  kex: 'SUPPORTED_KEX',
  serverHostKey: 'SUPPORTED_SERVER_HOST_KEY',
  cipher: 'SUPPORTED_CIPHER',
  hmac: 'SUPPORTED_MAC',
};

test('when a job may name an algorithm, then the SSH library supports it, and the legacy preset is a subset', () => {
  for (const kind of SSH_ALGORITHM_KINDS) {
    const library = constants[SUPPORTED[kind]!]!;
    // chacha20-poly1305 depends on the library's native binding; everything else must be there.
    for (const name of SSH_ALGORITHM_NAMES[kind]) {
      if (name.startsWith('chacha20')) continue;
      assert.ok(library.includes(name), `${kind} ${name} is not supported by ssh2`);
    }
    for (const name of LEGACY_ALGORITHMS[kind]) {
      assert.ok(SSH_ALGORITHM_NAMES[kind].includes(name), `${kind} ${name}`);
    }
  }
});

test('when the profile is legacy, then the legacy algorithms are appended to the defaults; explicit lists replace', () => {
  assert.deepEqual(algorithmsFor('default', null), {});
  const legacy = algorithmsFor('legacy', { cipher: ['aes256-ctr'] });
  assert.deepEqual(legacy.cipher, ['aes256-ctr']);
  assert.deepEqual(legacy.kex, { append: [...LEGACY_ALGORITHMS.kex] });
  assert.ok(JSON.stringify(legacy.kex).includes('diffie-hellman-group1-sha1'));
});

test('when SSH_PROFILE names contexts, then each context gets its profile, and bad entries are all reported', () => {
  const of = sshProfiles(['legacy', 'lab=default']);
  assert.equal(of('lab'), 'default');
  assert.equal(of('other'), 'legacy');
  assert.equal(sshProfiles([])('x'), 'default');
  assert.throws(() => sshProfiles(['ancient', 'x=modern']), /ancient[\s\S]*modern/);
});

test('when a login has a private key, then publickey goes first, and one password attempt at most follows', () => {
  const key = { hasKey: true, keyTried: false };
  assert.equal(nextAuthStep(null, false, key), 'none');
  assert.equal(nextAuthStep(['publickey', 'password'], false, key), 'publickey');
  // The key was refused: the password is the one remaining try.
  assert.equal(
    nextAuthStep(['publickey', 'password'], false, { ...key, keyTried: true }),
    'password',
  );
  assert.equal(nextAuthStep(['publickey', 'password'], true, { ...key, keyTried: true }), false);
  // Key only, refused: give up without a password.
  assert.equal(
    nextAuthStep(['publickey', 'password'], false, {
      hasKey: true,
      keyTried: true,
      hasPassword: false,
    }),
    false,
  );
  // A server that takes no keys: straight to the password.
  assert.equal(nextAuthStep(['password'], false, key), 'password');
});
