// Issue 23: under a frozen NATS node, jobs of devices that moved to the live actor host failed
// INTERNAL "timeout" before any command was sent: a new session's host-key check read the pin
// from `svc-hostkeys`, whose leader was the frozen node. The pin the host had already seen
// (its watched copy of the bucket) is what the check falls back to when the bucket does not
// answer. The bucket is made silent here as in admission-replay-race.test.ts: its stream is
// gone and a plain subscriber takes its reads without answering, so each read waits for its
// timeout as against a frozen server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Buckets } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { generateHostKey, startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
} from '../harness/mod.js';

test('when the host-key store does not answer, then a new session to a device whose key was pinned before runs its job, and a changed key is still refused', async (t) => {
  const nats = await NatsServerProcess.start();
  // Every job opens a new session (no warm one): each checks the device's host key.
  const stack = await startInProcessStack(nats.url, {
    env: { CONNECTION_POOL_ENABLED: 'false', JOB_DEDUP_ENABLED: 'false' },
  });
  const devices: SimulatedDevice[] = [];
  const start = async (port = 0) => {
    const d = await startDevice({
      platform: 'cisco_ios',
      enable: 'svc-demo',
      port,
      hostKey: generateHostKey(),
    });
    devices.push(d);
    return d;
  };
  const device = await start();
  let nc: NatsConnection | null = null;
  t.after(async () => {
    await nc?.close();
    await stack.stop();
    for (const d of devices) await d.stop();
    await nats.stop();
  });
  await waitHealthy(stack.url);
  const auth = { basic: { username: device.username, password: device.password } };
  const run = async (command: string, d = device) => {
    const accepted = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: { host: d.host, port: d.port, platform: 'cisco_ios', commands: [command] },
    });
    assert.equal(accepted.status, 202, accepted.text);
    return waitForJob(stack.url, accepted.json.job_id as string, auth);
  };

  // The first contact pins the device's key (the actor host's copy shows its own write).
  const first = await run('show version');
  assert.equal(first.json.status, 'finished', first.text);

  nc = await connectNats(nats.url, 'hostkey-store-silent-test');
  await (await jetstreamManager(nc)).streams.delete(`KV_${Buckets.hostKeys}`);
  nc.subscribe(`$JS.API.DIRECT.GET.KV_${Buckets.hostKeys}.>`);
  nc.subscribe(`$JS.API.STREAM.MSG.GET.KV_${Buckets.hostKeys}`);
  await nc.flush();

  const second = await run('show version');
  assert.equal(second.json.status, 'finished', second.text);
  assert.equal(second.json.error_code, null, second.text);
  assert.ok(second.json.results['show version'] !== undefined, second.text);

  // The copy still holds the pin: the same address offering another key is refused.
  await device.stop();
  const impostor = await start(device.port);
  const third = await run('show version', impostor);
  assert.equal(third.json.status, 'failed', third.text);
  assert.equal(third.json.error_code, 'HOST_KEY_MISMATCH', third.text);
  assert.deepEqual(impostor.stats.authAttempts, []);
});
