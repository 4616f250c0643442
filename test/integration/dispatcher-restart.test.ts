import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startDevice } from '@svc/test/support';
import { loadDispatcherConfig, startDispatcher } from '@svc/dispatcher';
import { jetstreamManager } from '@nats-io/jetstream';
import { Consumers, Streams } from '@svc/proto';
import { connectNats } from '@svc/nats';
import {
  NatsServerProcess,
  http,
  silentLogger,
  startInProcessStack,
  testEnv,
  waitForJob,
  waitHealthy,
  waitUntil,
} from '../harness/mod.js';

test('when the dispatcher is down, then a queued job waits and runs once a dispatcher is back', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  const stack = await startInProcessStack(nats.url);
  const cleanup: (() => Promise<unknown>)[] = [() => stack.stop(), () => device.stop()];
  t.after(async () => {
    for (const step of cleanup) await step();
    await nats.stop();
  });
  await waitHealthy(stack.url);
  const auth = { basic: { username: device.username, password: device.password } };

  await stack.dispatcher.stop();
  const a = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: { host: '127.0.0.1', port: device.port, commands: ['show version'] },
  });
  assert.equal(a.status, 202);
  const nc = await connectNats(nats.url, 'dispatcher-2');
  // The job's envelope is stored and waits undelivered on the dispatchers' consumer: nothing
  // but a dispatcher could move it on, so it is still queued.
  const jsm = await jetstreamManager(nc);
  await waitUntil(async () => {
    const info = await jsm.consumers.info(Streams.jobs, Consumers.dispatch('default'));
    return info.num_pending === 1 && info.num_ack_pending === 0;
  }, 'the envelope to wait on the dispatch consumer');
  const waiting = await http('GET', `${stack.url}/v2/send-command/${a.json.job_id}`, auth);
  assert.equal(waiting.json.status, 'queued');

  // The first dispatcher released its lease on stop, so the new one leads at once.
  const second = await startDispatcher(loadDispatcherConfig(testEnv(nats.url)), {
    nc,
    log: silentLogger('dispatcher'),
  });
  cleanup.unshift(
    () => second.stop(),
    () => nc.close(),
  );
  const done = await waitForJob(stack.url, a.json.job_id, auth);
  assert.equal(done.json.status, 'finished');
  assert.equal(device.stats.handshakes, 1);
});
