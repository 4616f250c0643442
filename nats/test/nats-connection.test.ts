import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { natsAuthOptions } from '../src/nats-connection.js';

test('when no NATS credentials are set, then no auth or TLS option is set', () => {
  assert.deepEqual(natsAuthOptions({ NATS_USER: '', NATS_TOKEN: '' }), {});
});

test('when a user and password are set, then they are the connection user and pass', () => {
  const o = natsAuthOptions({ NATS_USER: 'gateway', NATS_PASSWORD: 'p' });
  assert.equal(o.user, 'gateway');
  assert.equal(o.pass, 'p');
});

test('when two methods are set, then the error names both settings and no value', () => {
  assert.throws(
    () => natsAuthOptions({ NATS_USER: 'u', NATS_PASSWORD: 'hunter2', NATS_TOKEN: 's3cret' }),
    (err: Error) =>
      /NATS_USER and NATS_TOKEN/.test(err.message) && !/hunter2|s3cret/.test(err.message),
  );
  assert.throws(() => natsAuthOptions({ NATS_PASSWORD: 'x' }), /without NATS_USER/);
  assert.throws(() => natsAuthOptions({ NATS_TLS_CERT: '/a' }), /go together/);
});

test('when a seed file or TLS files are set, then an authenticator and TLS files are used', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-nkey-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const seed = join(dir, 'seed');
  await writeFile(seed, 'SUAM6RBWNBT3FMFDOAGN5YEKXFTWMEE4DUM6HSVZDJZT6ZBBTGAOGKVZ5E\n');
  const o = natsAuthOptions({
    NATS_NKEY_SEED_FILE: seed,
    NATS_TLS_CA: '/ca.crt',
    NATS_TLS_CERT: '/c.crt',
    NATS_TLS_KEY: '/c.key',
  });
  assert.equal(typeof o.authenticator, 'function');
  assert.deepEqual(o.tls, { caFile: '/ca.crt', certFile: '/c.crt', keyFile: '/c.key' });
  assert.throws(
    () => natsAuthOptions({ NATS_CREDS_FILE: join(dir, 'missing.creds') }),
    /NATS_CREDS_FILE: cannot read .*ENOENT/,
  );
});
