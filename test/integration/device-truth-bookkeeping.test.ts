import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Buckets } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  waitUntil,
  type InProcessStack,
} from '../harness/mod.js';

// The guards' bookkeeping after a session (a breaker closed again) is the service's own: when
// the store cannot take it, the job still says what the device said.
let nats: NatsServerProcess;
let stack: InProcessStack;
let nc: NatsConnection;
let device: SimulatedDevice;

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url, {
    env: {
      // One refusal leaves the breaker closed but not clean, so a success must be written.
      BREAKER_THRESHOLD: '3',
      RATE_LIMIT_DEVICE_PER_MINUTE: '0',
      JOB_DEDUP_ENABLED: 'false',
    },
  });
  await waitHealthy(stack.url);
  nc = await connectNats(nats.url, 'device-truth-bookkeeping-test');
  device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
});

after(async () => {
  await nc?.close();
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

test('when the breaker store fails after the device answered, then the job is finished with the output the device gave', async () => {
  const auth = { basic: { username: device.username, password: device.password } };
  const submit = () =>
    http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: {
        host: device.host,
        port: device.port,
        platform: 'cisco_ios',
        commands: ['show version'],
      },
    });
  await device.setFaults({ refuse: true });
  const refused = await submit();
  assert.equal(refused.status, 202, refused.text);
  const first = await waitForJob(stack.url, refused.json.job_id, auth);
  assert.equal(first.json.error_code, 'CONNECTION_REFUSED', first.text);

  // The device answers each command 1.5 s after reading it: time to take the breakers' store
  // away once the job's command has reached the device (its guards were passed by then).
  await device.setFaults({ commandLatencyMs: 1500 });
  const accepted = await submit();
  assert.equal(accepted.status, 202, accepted.text);
  await waitUntil(
    () => device.stats.commands.some((c) => c.command === 'show version'),
    "the job's command to reach the device",
  );
  await (await jetstreamManager(nc)).streams.delete(`KV_${Buckets.breakers}`);

  const ended = await waitForJob(stack.url, accepted.json.job_id, auth);
  assert.equal(ended.json.status, 'finished', ended.text);
  assert.equal(ended.json.error_code, null, ended.text);
  assert.ok(
    String(ended.json.results['show version']).startsWith('Cisco IOS Software'),
    ended.text,
  );
});
