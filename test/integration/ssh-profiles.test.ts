import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  generateHostKey,
  generateRsaHostKey,
  publicKeyOf,
  startDevice,
  startJumpHost,
  type JumpHost,
  type SimulatedDevice,
  type StartDeviceOptions,
  type StartJumpHostOptions,
} from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  settledStoreFiles,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
  captureLogs,
} from '../harness/mod.js';

/**
 * SSH profiles end to end: a device that only speaks legacy algorithms, a device that only takes
 * public keys, and devices behind one or two jump hosts, through the real gateway, dispatcher and
 * actor. Context `old` defaults to the legacy profile (SSH_PROFILE); context `guarded` may not
 * reach `localhost` or 127.0.0.9 (DEVICE_NETWORKS_DENY), which holds for jump hosts too.
 */

const ADMIN_SECRET = 'ssh-profiles-admin-secret-0123456789';
const PASSPHRASE = 'Key-Pa55phrase-6b1f0c';
const JUMP_PASSWORD = 'Jump-Pa55word-e3c9a1';
let nats: NatsServerProcess;
let stack: InProcessStack;
const started: { stop(): Promise<void> }[] = [];
const { sink, lines: logLines } = captureLogs();

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url, {
    env: {
      SVC_CONTEXTS: 'default,old,guarded',
      WORKER_CONTEXTS: 'default,old,guarded',
      SSH_PROFILE: 'default,old=legacy',
      DEVICE_NETWORKS_DENY: 'guarded=localhost,guarded=127.0.0.9',
      SVC_ADMIN_SECRET: ADMIN_SECRET,
      JOB_DEDUP_ENABLED: 'false',
      CONNECTION_POOL_ENABLED: 'false',
    },
    logSink: sink,
  });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  for (const s of started) await s.stop();
  await nats?.stop();
});

async function device(options: Partial<StartDeviceOptions> = {}): Promise<SimulatedDevice> {
  const d = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo', ...options });
  started.push(d);
  return d;
}

async function jumpHost(options: StartJumpHostOptions = {}): Promise<JumpHost> {
  const j = await startJumpHost({ password: JUMP_PASSWORD, ...options });
  started.push(j);
  return j;
}

type Auth = { basic: { username: string; password: string } } | { bearer: string };
const basicOf = (d: SimulatedDevice): Auth => ({
  basic: { username: d.username, password: d.password },
});

async function submit(d: SimulatedDevice, extra: Record<string, unknown>, auth = basicOf(d)) {
  return http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: { host: '127.0.0.1', port: d.port, commands: ['show version'], ...extra },
  });
}

async function run(d: SimulatedDevice, extra: Record<string, unknown> = {}, auth = basicOf(d)) {
  const a = await submit(d, extra, auth);
  assert.equal(a.status, 202, a.text);
  return (await waitForJob(stack.url, a.json.job_id, auth)).json;
}

const via = (...hops: Record<string, unknown>[]) => ({ ssh: { jump_hosts: hops } });
const hopOf = (j: JumpHost, extra: Record<string, unknown> = {}) => ({
  host: j.host,
  port: j.port,
  username: j.username,
  password: JUMP_PASSWORD,
  ...extra,
});

test('when a device speaks only legacy algorithms, then the default profile fails with SSH_NEGOTIATION_FAILED naming both offers, and the legacy profile reaches it', async () => {
  const old = await device({ legacyOnly: true });
  const refused = await run(old);
  assert.equal(refused.status, 'failed');
  assert.equal(refused.error_code, 'SSH_NEGOTIATION_FAILED', refused.error);
  assert.equal(refused.error_retryable, false);
  // What the device offered, and what the service offered.
  assert.match(
    refused.error,
    /device 127\.0\.0\.1:\d+ offered: diffie-hellman-group14-sha1, diffie-hellman-group1-sha1/,
  );
  assert.match(refused.error, /service offered: [^;]*curve25519-sha256/);
  assert.match(refused.error, /ssh\.profile "legacy"/);
  assert.deepEqual(old.stats.authAttempts, [], 'no credential is sent before a negotiation');

  const legacy = await run(old, { ssh: { profile: 'legacy' } });
  assert.equal(legacy.status, 'finished', legacy.error);
  assert.match(legacy.results['show version'], /Cisco IOS Software/);

  // The context's default profile (SSH_PROFILE old=legacy) without any field in the job.
  const byContext = await run(old, { context: 'old' });
  assert.equal(byContext.status, 'finished', byContext.error);

  // Explicit lists replace the profile's: exactly the old switch's set works.
  const explicit = await run(old, {
    ssh: {
      algorithms: {
        kex: ['diffie-hellman-group1-sha1'],
        serverHostKey: ['ssh-rsa'],
        cipher: ['3des-cbc'],
        hmac: ['hmac-sha1'],
      },
    },
  });
  assert.equal(explicit.status, 'finished', explicit.error);

  // A job that insists on a profile the device lacks fails in the cipher, naming that kind.
  const noCipher = await run(old, {
    ssh: { profile: 'legacy', algorithms: { cipher: ['aes256-ctr'] } },
  });
  assert.equal(noCipher.error_code, 'SSH_NEGOTIATION_FAILED');
  assert.match(
    noCipher.error,
    /no common cipher algorithm; the service offered: aes256-ctr; the device 127\.0\.0\.1:\d+ offered: aes128-cbc, 3des-cbc/,
  );
});

test('when a job names an unknown algorithm or profile, then it is refused at submission', async () => {
  const d = await device();
  const bad = await submit(d, { ssh: { algorithms: { kex: ['diffie-hellman-group0-md5'] } } });
  assert.equal(bad.status, 422, bad.text);
  assert.deepEqual(bad.json.validation_error.json[0].loc, ['body', 'ssh', 'algorithms', 'kex', 0]);
  assert.match(
    bad.json.validation_error.json[0].msg,
    /unsupported kex algorithm .*supported: .*diffie-hellman-group14-sha1/,
  );
  const profile = await submit(d, { ssh: { profile: 'ancient' } });
  assert.equal(profile.status, 422, profile.text);
});

test('when a device only takes public keys, then a sealed private key (and an encrypted one with its passphrase) logs in, and neither key nor passphrase is ever stored or logged', async () => {
  const plainKey = generateHostKey();
  const encryptedKey = generateRsaHostKey(PASSPHRASE);
  const d = await device({
    authMethods: ['publickey'],
    authorizedKeys: [publicKeyOf(plainKey), publicKeyOf(encryptedKey, PASSPHRASE)],
  });

  const withoutKey = await run(d);
  assert.equal(withoutKey.error_code, 'AUTH_FAILED', withoutKey.error);

  const ids: string[] = [];
  const keyed = await run(d, { ssh: { private_key: plainKey } });
  assert.equal(keyed.status, 'finished', keyed.error);
  assert.match(keyed.results['show version'], /Cisco IOS Software/);
  ids.push(keyed.job_id);

  d.resetStats();
  const encrypted = await run(d, { ssh: { private_key: encryptedKey, passphrase: PASSPHRASE } });
  assert.equal(encrypted.status, 'finished', encrypted.error);
  assert.deepEqual(
    d.stats.authAttempts.map((a) => a.method),
    ['publickey'],
    'the key is used; no password is tried',
  );
  ids.push(encrypted.job_id);

  const wrong = await run(d, { ssh: { private_key: encryptedKey, passphrase: 'not-it-7d2a' } });
  assert.equal(wrong.status, 'failed');
  assert.equal(wrong.error_code, 'SSH_KEY_INVALID', wrong.error);
  assert.equal(wrong.error_retryable, false);
  assert.match(wrong.error, /wrong passphrase/);
  assert.ok(!wrong.error.includes('not-it-7d2a'));
  ids.push(wrong.job_id);

  const missing = await run(d, { ssh: { private_key: encryptedKey } });
  assert.equal(missing.error_code, 'SSH_KEY_INVALID');
  assert.match(missing.error, /encrypted and no passphrase/);

  // A Bearer caller needs no password with a key (the enable secret is its own).
  const admin = { basic: { username: 'admin', password: ADMIN_SECRET } };
  const key = await http('POST', `${stack.url}/v2/api-keys`, {
    ...admin,
    body: { role: 'operator' },
  });
  assert.equal(key.status, 201, key.text);
  const bearer: Auth = { bearer: key.json.token };
  const bearerJob = await run(
    d,
    { username: d.username, enable: d.enable, ssh: { private_key: plainKey } },
    bearer,
  );
  assert.equal(bearerJob.status, 'finished', bearerJob.error);
  const noSecret = await submit(d, { username: d.username }, bearer);
  assert.equal(noSecret.status, 422, noSecret.text);
  const notAKey = await submit(d, { ssh: { private_key: 'hunter2' } });
  assert.equal(notAKey.status, 422, notAKey.text);
  assert.ok(!notAKey.text.includes('hunter2'), 'the refusal never echoes the key');

  // Records (API), logs and the NATS store files never hold key material or the passphrase.
  const records = await Promise.all(
    ids.map((id) => http('GET', `${stack.url}/v2/jobs/${id}`, basicOf(d)).then((r) => r.text)),
  );
  // The store files, once every write so far is in them (a marker written after them shows).
  const storeFiles = await settledStoreFiles(nats.url, nats.storeDir);
  // A full line of each key's base64 body stands for the key.
  const keyLine = (pem: string) => pem.split('\n').find((l) => /^[A-Za-z0-9+/=]{60,}$/.test(l))!;
  for (const [name, secret] of [
    ['private key', keyLine(plainKey)],
    ['encrypted private key', keyLine(encryptedKey)],
    ['passphrase', PASSPHRASE],
  ] as const) {
    assert.ok(secret.length >= 16, name);
    for (const [place, texts] of [
      ['logs', logLines],
      ['job records', records],
    ] as const) {
      const hit = texts.find((t) => t.includes(secret));
      assert.equal(hit, undefined, `${name} found in ${place}: ${hit?.slice(0, 200)}`);
    }
    const needle = Buffer.from(secret, 'utf8');
    assert.equal(
      storeFiles.findIndex((b) => b.includes(needle)),
      -1,
      `${name} in a store file`,
    );
  }
  assert.ok(logLines.length > 10, 'logs were captured');
  assert.ok(
    storeFiles.some((b) => b.includes(Buffer.from(ids[0]!))),
    'the store holds the jobs',
  );
});

test("when a device sits behind a jump host, then the job reaches it through the bastion with the bastion's own credentials", async () => {
  const d = await device();
  const jump = await jumpHost();
  const r = await run(d, via(hopOf(jump)));
  assert.equal(r.status, 'finished', r.error);
  assert.match(r.results['show version'], /Cisco IOS Software/);
  assert.deepEqual(jump.stats.forwards, [{ host: '127.0.0.1', port: d.port }]);
  assert.deepEqual(jump.stats.authAttempts, [{ method: 'password', username: 'jump' }]);

  // The bastion checks its own credentials: a wrong one never reaches the device.
  d.resetStats();
  const wrong = await run(d, via(hopOf(jump, { password: 'wrong-jump-pass' })));
  assert.equal(wrong.status, 'failed');
  assert.equal(wrong.error_code, 'AUTH_FAILED', wrong.error);
  assert.match(wrong.error, new RegExp(`user jump on jump host 127\\.0\\.0\\.1:${jump.port}`));
  assert.ok(!wrong.error.includes('wrong-jump-pass'));
  assert.equal(d.stats.handshakes, 0);
  assert.equal(jump.stats.forwards.length, 1, 'nothing forwarded after a failed login');
});

test('when a device sits behind two jump hosts, the second taking a key only, then the job goes through both in order', async () => {
  const d = await device();
  const key = generateHostKey();
  const outer = await jumpHost();
  const inner = await jumpHost({
    username: 'inner',
    authMethods: ['publickey'],
    authorizedKeys: [publicKeyOf(key)],
  });
  const r = await run(
    d,
    via(hopOf(outer), { host: inner.host, port: inner.port, username: 'inner', private_key: key }),
  );
  assert.equal(r.status, 'finished', r.error);
  assert.deepEqual(outer.stats.forwards, [{ host: '127.0.0.1', port: inner.port }]);
  assert.deepEqual(inner.stats.forwards, [{ host: '127.0.0.1', port: d.port }]);
  assert.deepEqual(inner.stats.authAttempts, [{ method: 'publickey', username: 'inner' }]);
});

test("when a jump host's key changes after it was pinned, then the job fails with HOST_KEY_MISMATCH and nothing is sent to it", async () => {
  const d = await device();
  const first = await jumpHost();
  assert.equal((await run(d, via(hopOf(first)))).status, 'finished');
  await first.stop();
  const impostor = await jumpHost({ port: first.port });
  const r = await run(d, via(hopOf(impostor)));
  assert.equal(r.status, 'failed');
  assert.equal(r.error_code, 'HOST_KEY_MISMATCH', r.error);
  assert.match(r.error, new RegExp(`127\\.0\\.0\\.1:${first.port} changed`));
  assert.deepEqual(impostor.stats.authAttempts, []);
  assert.deepEqual(impostor.stats.forwards, []);
});

test("when a jump host is outside the context's reachability policy, then the job is refused (an address at submission, a name by the actor)", async () => {
  const d = await device();
  const jump = await jumpHost();
  const literal = await submit(d, {
    context: 'guarded',
    ...via({ host: '127.0.0.9', port: jump.port, username: 'jump', password: JUMP_PASSWORD }),
  });
  assert.equal(literal.status, 422, literal.text);
  assert.deepEqual(literal.json.validation_error.json[0].loc, [
    'body',
    'ssh',
    'jump_hosts',
    0,
    'host',
  ]);
  assert.match(literal.json.validation_error.json[0].msg, /DEVICE_NETWORKS_DENY/);

  const named = await run(d, {
    context: 'guarded',
    ...via({ host: 'localhost', port: jump.port, username: 'jump', password: JUMP_PASSWORD }),
  });
  assert.equal(named.status, 'failed');
  assert.equal(named.error_code, 'ADDRESS_NOT_ALLOWED', named.error);
  assert.match(named.error, /jump host localhost:\d+: .*DEVICE_NETWORKS_DENY/);
  assert.equal(jump.stats.handshakes, 0);

  // The same jump host is fine where the policy allows it.
  assert.equal((await run(d, via(hopOf(jump)))).status, 'finished');
});

test('when a failed job with a key or jump hosts is replayed, then the replay carries its SSH secrets again and runs', async () => {
  const key = generateRsaHostKey(PASSPHRASE);
  const d = await device({
    authMethods: ['publickey'],
    authorizedKeys: [publicKeyOf(key, PASSPHRASE)],
  });
  const jump = await jumpHost();
  const failed = await run(d, {
    ssh: {
      private_key: key,
      passphrase: 'wrong-8c1d',
      jump_hosts: [hopOf(jump, { password: 'nope-1f2e' })],
    },
  });
  assert.equal(failed.status, 'failed');
  const replay = (body: Record<string, unknown>) =>
    http('POST', `${stack.url}/v2/jobs/${failed.job_id}/replay`, { ...basicOf(d), body });
  // The record keeps one jump host: the replay must give credentials for exactly that many.
  const short = await replay({ ssh: { private_key: key, passphrase: PASSPHRASE, jump_hosts: [] } });
  assert.equal(short.status, 422, short.text);
  const again = await replay({
    ssh: { private_key: key, passphrase: PASSPHRASE, jump_hosts: [{ password: JUMP_PASSWORD }] },
  });
  assert.equal(again.status, 202, again.text);
  const done = (await waitForJob(stack.url, again.json.job_id, basicOf(d))).json;
  assert.equal(done.status, 'finished', done.error);
  assert.deepEqual(jump.stats.forwards, [{ host: '127.0.0.1', port: d.port }]);
});
