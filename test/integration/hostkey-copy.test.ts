import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '@nats-io/transport-node';
import { startDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
} from '../harness/mod.js';

const ADMIN_SECRET = 'hostkey-copy-admin-secret-0123456789';

// The device guards of every job (lockout, breaker, rate budgets) key by the device's pinned
// host key; they read it from a watched copy of `svc-hostkeys`, not with a request per lookup.
test('when a job runs over a pooled session on a pinned device, then its device guards read no pinned host key from the bucket', async (t) => {
  const nats = await NatsServerProcess.start();
  const stack = await startInProcessStack(nats.url, {
    env: { JOB_DEDUP_ENABLED: 'false', SVC_ADMIN_SECRET: ADMIN_SECRET },
  });
  const device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  const tap = await connect({ servers: nats.url });
  t.after(async () => {
    await tap.close();
    await stack.stop();
    await device.stop();
    await nats.stop();
  });
  await waitHealthy(stack.url);
  const auth = { basic: { username: device.username, password: device.password } };
  const run = async (command: string) => {
    const a = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: { host: device.host, port: device.port, commands: [command] },
    });
    assert.equal(a.status, 202, a.text);
    const done = await waitForJob(stack.url, a.json.job_id as string, auth, 60_000);
    assert.equal(done.json.status, 'finished', done.text);
  };

  // First contact pins the device's key (trust on first use) and leaves a pooled session.
  await run('show version');
  const pins = await http('GET', `${stack.url}/v2/host-keys`, {
    basic: { username: 'admin', password: ADMIN_SECRET },
  });
  assert.equal(pins.status, 200, pins.text);
  assert.equal((pins.json.host_keys as unknown[]).length, 1, 'the key is pinned');

  const reads: string[] = [];
  const sub = tap.subscribe('$JS.API.DIRECT.GET.KV_svc-hostkeys.>', {
    callback: (_err, msg) => {
      reads.push(msg.subject);
    },
  });
  await tap.flush();
  await run('show version');
  sub.unsubscribe();
  // The job's end was written after its guards ran, on connections flushed in order.
  await tap.flush();
  assert.deepEqual(reads, [], 'device guards read the pin from the watched copy');
});
