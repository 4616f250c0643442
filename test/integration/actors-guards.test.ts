import { test, before, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  generateHostKey,
  publicKeyOf,
  startDevice,
  type SessionCounter,
  type SimulatedDevice,
} from '@svc/test/support';
import { Kvm } from '@nats-io/kv';
import { Buckets, JOB_SHARDS, LockKeys, ShardOwner, decodeMessage, jobShardOf } from '@svc/proto';
import { deviceKeyOf } from '@svc/device-access';
import { connectNats } from '@svc/nats';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  waitUntil,
  type InProcessStack,
} from '../harness/mod.js';

const ADMIN_SECRET = 'actors-guards-admin-secret-0123';
let nats: NatsServerProcess;
let stack: InProcessStack;
const devices: SimulatedDevice[] = [];

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url, {
    actors: 2,
    env: {
      BREAKER_THRESHOLD: '2',
      BREAKER_OPEN_SECONDS: '2',
      LOCKOUT_THRESHOLD: '2',
      LOCKOUT_WINDOW: '60',
      JOB_TIMEOUT: '3',
      RATE_LIMIT_DEVICE_PER_MINUTE: '0',
      JOB_DEDUP_ENABLED: 'false',
      SVC_ADMIN_SECRET: ADMIN_SECRET,
    },
  });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  for (const d of devices) await d.stop();
  await nats?.stop();
});

async function device(options: Parameters<typeof startDevice>[0] = { platform: 'cisco_ios' }) {
  const d = await startDevice({ enable: 'svc-demo', ...options });
  devices.push(d);
  return d;
}

const authOf = (d: SimulatedDevice) => ({ basic: { username: d.username, password: d.password } });

async function submit(
  d: SimulatedDevice,
  commands: string[],
  extra: Record<string, unknown> = {},
  auth = authOf(d),
) {
  const a = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: { host: d.host, port: d.port, commands, ...extra },
  });
  return a;
}

test('when a second job goes to the same device, then a warm session serves it with no new SSH handshake', async () => {
  const d = await device();
  for (const n of [1, 2, 3]) {
    const a = await submit(d, [`show interface GigabitEthernet0/${n}`]);
    assert.equal(a.status, 202);
    const done = await waitForJob(stack.url, a.json.job_id, authOf(d));
    assert.equal(done.json.status, 'finished');
  }
  assert.equal(d.stats.handshakes, 1);
});

test('when 20 clients submit to one device at once, then the device never sees two sessions', async () => {
  const d = await device({ platform: 'cisco_ios', commandLatencyMs: 5 });
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) => submit(d, [`show interface GigabitEthernet0/${i}`])),
  );
  for (const a of answers) assert.equal(a.status, 202, a.text);
  const done = await Promise.all(
    answers.map((a) => waitForJob(stack.url, a.json.job_id, authOf(d))),
  );
  assert.ok(done.every((r) => r.json.status === 'finished'));
  assert.equal(d.stats.maxConcurrentSessions, 1);
});

test('when one device (one pinned host key) is reached at three addresses, then its jobs hold one session at a time', async () => {
  const hostKey = generateHostKey();
  const sessions: SessionCounter = { open: 0, max: 0 };
  const addresses = await Promise.all(
    ['127.0.0.10', '127.0.0.11', '127.0.0.12'].map((host) =>
      device({
        platform: 'cisco_ios',
        host,
        hostKey,
        sessionCounter: sessions,
        commandLatencyMs: 20,
      }),
    ),
  );
  // An admin loaded the device's key for each address (what a first contact at each pins).
  for (const d of addresses) {
    const pin = await http('PUT', `${stack.url}/v2/host-keys/default/${d.host}/${d.port}`, {
      basic: { username: 'admin', password: ADMIN_SECRET },
      body: { public_key: publicKeyOf(hostKey) },
    });
    assert.equal(pin.status, 200, pin.text);
  }
  const answers = await Promise.all(
    addresses.flatMap((d) =>
      [0, 1].map((i) => submit(d, [`show interface GigabitEthernet0/${i}`])),
    ),
  );
  for (const a of answers) assert.equal(a.status, 202, a.text);
  const done = await Promise.all(
    answers.map((a) => waitForJob(stack.url, a.json.job_id, authOf(addresses[0]!))),
  );
  assert.deepEqual(
    done.map((r) => r.json.status),
    done.map(() => 'finished'),
  );
  assert.equal(sessions.max, 1);
});

// Under shards (docs/shards.md) a device's addresses hash to shards that two hosts may own: the
// addresses here are chosen so that they do, and the device still sees one session at a time.
async function oneDeviceOnTwoHosts(t: TestContext, pinned: boolean) {
  const nc = await connectNats(nats.url, 'test-shard-owners');
  t.after(() => nc.close());
  const locks = await new Kvm(nc).open(Buckets.locks);
  const ownerOf = async (shard: number) => {
    const entry = await locks.get(LockKeys.shard('default', shard));
    const owner = entry?.operation === 'PUT' ? decodeMessage(ShardOwner, entry.value) : null;
    return owner?.state === 'owned' ? owner.host : null;
  };
  const hosts = stack.actors.map((a) => a.hostId);
  // Every shard owned, by both hosts (the second host took its share from the first).
  const owners = await waitUntil(async () => {
    const all = await Promise.all(Array.from({ length: JOB_SHARDS }, (_, n) => ownerOf(n)));
    return hosts.every((h) => all.includes(h)) && all.every((h) => h !== null) && all;
  }, 'both actor hosts to own shards');
  const hostKey = generateHostKey();
  const sessions: SessionCounter = { open: 0, max: 0 };
  const sim = (host: string, port?: number) =>
    device({
      platform: 'cisco_ios',
      host,
      ...(port !== undefined ? { port } : {}),
      hostKey,
      sessionCounter: sessions,
      commandLatencyMs: 20,
    });
  const first = await sim(pinned ? '127.0.0.20' : '127.0.0.21');
  const ownerAt = (address: string) =>
    owners[jobShardOf(deviceKeyOf('default', address, first.port))]!;
  // Another address of the device, on the same port, whose shard the other host owns.
  const other = Array.from({ length: 200 }, (_, i) => `127.0.${pinned ? 1 : 2}.${i + 1}`).find(
    (address) => ownerAt(address) !== ownerAt(first.host),
  );
  assert.ok(other !== undefined, 'an address on the other host’s shards');
  const second = await sim(other, first.port);
  assert.notEqual(ownerAt(second.host), ownerAt(first.host));
  // Pinned by an admin, or at each address's first contact (the device known at the handshake).
  for (const d of pinned ? [first, second] : []) {
    const pin = await http('PUT', `${stack.url}/v2/host-keys/default/${d.host}/${d.port}`, {
      basic: { username: 'admin', password: ADMIN_SECRET },
      body: { public_key: publicKeyOf(hostKey) },
    });
    assert.equal(pin.status, 200, pin.text);
  }
  const run = async (d: SimulatedDevice, n: number) => {
    const a = await submit(d, [`show interface GigabitEthernet0/${n}`]);
    assert.equal(a.status, 202, a.text);
    return (await waitForJob(stack.url, a.json.job_id, authOf(d))).json.status as string;
  };
  // One job at each address in turn: the first host's session stays warm after its job.
  assert.equal(await run(first, 1), 'finished');
  assert.equal(await run(second, 2), 'finished');
  assert.equal(sessions.max, 1, 'a session at each address, one after the other');
  assert.equal(await run(first, 3), 'finished');
  // Then both addresses at once.
  const together = await Promise.all(
    [first, second].flatMap((d) => [4, 5, 6].map((n) => run(d, n))),
  );
  assert.deepEqual(
    together,
    together.map(() => 'finished'),
  );
  assert.equal(sessions.max, 1);
}

test('when one device (one pinned host key) is reached at addresses whose shards two actor hosts own, then it never holds two sessions at once', async (t) => {
  await oneDeviceOnTwoHosts(t, true);
});

test('when one device is first met at two addresses whose shards two actor hosts own, then it never holds two sessions at once', async (t) => {
  await oneDeviceOnTwoHosts(t, false);
});

test('when a device keeps refusing connections, then its breaker opens, fails jobs fast with CIRCUIT_OPEN, and one probe closes it again', async () => {
  const d = await device();
  await d.setFaults({ refuse: true });
  for (let i = 0; i < 2; i++) {
    const a = await submit(d, ['show version']);
    const r = await waitForJob(stack.url, a.json.job_id, authOf(d));
    assert.equal(r.json.error_code, 'CONNECTION_REFUSED');
    assert.equal(r.json.error_retryable, true);
  }
  const fast = await submit(d, ['show version']);
  const open = await waitForJob(stack.url, fast.json.job_id, authOf(d));
  assert.equal(open.json.status, 'failed');
  assert.equal(open.json.error_code, 'CIRCUIT_OPEN');
  await d.setFaults({});
  // Until the open period ends every job fails fast; then one is let through as the probe.
  await waitUntil(
    async () => {
      const probe = await submit(d, ['show version']);
      const r = await waitForJob(stack.url, probe.json.job_id, authOf(d));
      if (r.json.status === 'finished') return true;
      assert.equal(r.json.error_code, 'CIRCUIT_OPEN', r.text);
      return false;
    },
    'the breaker to let a probe through',
    { everyMs: 200 },
  );
  const after = await submit(d, ['show version']);
  assert.equal((await waitForJob(stack.url, after.json.job_id, authOf(d))).json.status, 'finished');
});

test('when a user fails to log in repeatedly, then further Basic submissions to that device get 403', async () => {
  const d = await device();
  const wrong = { basic: { username: d.username, password: 'not-the-password' } };
  for (let i = 0; i < 2; i++) {
    const a = await submit(d, ['show version'], {}, wrong);
    assert.equal(a.status, 202);
    assert.equal(
      (await waitForJob(stack.url, a.json.job_id, wrong)).json.error_code,
      'AUTH_FAILED',
    );
  }
  const locked = await submit(d, ['show version'], {}, wrong);
  assert.equal(locked.status, 403, locked.text);
  assert.match(locked.json.message, /locked out/);
  // Another user of the same device is not affected.
  const other = { basic: { username: 'someone-else', password: 'x' } };
  assert.equal((await submit(d, ['show version'], {}, other)).status, 202);
});

test('when jobs are cancelled, then queued ones never run, a running one is aborted, and ended ones answer 409', async () => {
  const d = await device();
  await d.setFaults({ hang: '^show interface GigabitEthernet0/9$' });
  const running = await submit(d, ['show interface GigabitEthernet0/9'], { read_timeout: 60 });
  const queued = await submit(d, ['show interface GigabitEthernet0/8']);
  await waitUntil(
    async () =>
      (await http('GET', `${stack.url}/v2/send-command/${running.json.job_id}`, authOf(d))).json
        .status === 'started',
    'the hanging job to start',
  );
  const c1 = await http('DELETE', `${stack.url}/v2/send-command/${queued.json.job_id}`, authOf(d));
  assert.equal(c1.status, 204);
  const c2 = await http('DELETE', `${stack.url}/v2/send-command/${running.json.job_id}`, authOf(d));
  assert.equal(c2.status, 204);
  for (const id of [running.json.job_id, queued.json.job_id]) {
    const r = await waitForJob(stack.url, id, authOf(d));
    assert.equal(r.json.status, 'cancelled');
    assert.equal(r.json.error_code, 'CANCELLED');
  }
  await d.setFaults({});
  // The aborted session is gone: the next job on this device runs at once.
  const next = await submit(d, ['show version']);
  assert.equal((await waitForJob(stack.url, next.json.job_id, authOf(d))).json.status, 'finished');
  assert.ok(!d.stats.commands.some((c) => c.command === 'show interface GigabitEthernet0/8'));
  const again = await http('DELETE', `${stack.url}/v2/send-command/${next.json.job_id}`, authOf(d));
  assert.equal(again.status, 409);
  const unknown = await http('DELETE', `${stack.url}/v2/send-command/${randomUUID()}`, authOf(d));
  assert.equal(unknown.status, 404);
});

test('when a job runs past JOB_TIMEOUT, then it fails with JOB_TIMEOUT and its session is closed', async () => {
  const d = await device();
  await d.setFaults({ hang: '^show interface GigabitEthernet0/5$' });
  const a = await submit(d, ['show interface GigabitEthernet0/5'], { read_timeout: 60 });
  const r = await waitForJob(stack.url, a.json.job_id, authOf(d), 10_000);
  assert.equal(r.json.status, 'failed');
  assert.equal(r.json.error_code, 'JOB_TIMEOUT');
  await d.setFaults({});
  await waitUntil(() => d.stats.sessionsOpen === 0, 'the session to be closed');
});
