// Issue 23: the reaper's enqueue check failed `NOT_ENQUEUED` a job whose envelope had reached the
// queue (`frozen-leader`, 1 job in 1 run). Its probe relies on `SVC_JOBS` remembering the job id
// as a message id; nats-server 2.9 forgets the ids of messages already consumed when it restarts
// (it rebuilds them from the messages it still stores). A job placed on an actor host and waiting
// there behind its device's running job was then taken for one whose envelope never arrived.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { Consumers, Streams, jobShardOf } from '@svc/proto';
import { deviceKeyOf } from '@svc/device-access';
import { connectNats } from '@svc/nats';
import { startDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  captureLogs,
  http,
  startInProcessStack,
  submitCommand,
  submitHeldJob,
  waitForJob,
  waitHealthy,
  waitUntil,
} from '../harness/mod.js';

test('when nats-server restarts while a job waits on its actor host past ENQUEUE_GRACE, then the enqueue check leaves it to run', async (t) => {
  // Its envelope stays stored on its shard subject until it ends, so a restarted server still
  // knows its message id (it rebuilds the ids from what it stores).
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-enqueue-restart-'));
  let nats = await NatsServerProcess.start({ dataDir });
  const logs = captureLogs();
  const stack = await startInProcessStack(nats.url, {
    env: {
      ENQUEUE_GRACE: '1',
      JOB_REAPER_INTERVAL: '0.5',
      JOB_DEDUP_ENABLED: 'false',
      RATE_LIMIT_DEVICE_PER_MINUTE: '0',
    },
    logSink: logs.sink,
  });
  const device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  t.after(async () => {
    await stack.stop();
    await device.stop();
    await nats.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  await waitHealthy(stack.url);
  const auth = { basic: { username: device.username, password: device.password } };
  const submit = (command: string) => submitCommand(stack.url, auth, device, command);

  // The device holds a first job (its command never answered); the second waits behind it on
  // the actor host, its envelope delivered from its shard and not acknowledged, its record
  // `queued`.
  const held = await submitHeldJob(device, { hang: 'show clock' }, 'show clock', submit);
  const waiting = await submit('show version');
  const shard = jobShardOf(deviceKeyOf('default', '127.0.0.1', device.port));
  const nc = await connectNats(nats.url, 'enqueue-check-restart-test');
  const jsm = await jetstreamManager(nc);
  await waitUntil(
    async () =>
      (await jsm.consumers.info(Streams.jobs, Consumers.shard('default', shard)))
        .num_ack_pending === 2,
    'the second job delivered to the actor host',
  );
  await nc.close();

  await nats.stop();
  nats = await NatsServerProcess.start({ dataDir, port: nats.port });
  await waitHealthy(stack.url, 30_000);

  // The reaper's check of the waiting job has run (its outcome is logged either way).
  await waitUntil(
    () =>
      logs.lines.some(
        (l) =>
          l.includes(waiting) &&
          (l.includes('failed a job') || l.includes('enqueue check: envelope stored')),
      ),
    "the reaper's enqueue check of the waiting job",
    { timeoutMs: 60_000 },
  );
  const cancelled = await http('DELETE', `${stack.url}/v2/send-command/${held}`, auth);
  assert.equal(cancelled.status, 204, cancelled.text);
  const ended = await waitForJob(stack.url, waiting, auth);
  assert.equal(ended.json.status, 'finished', ended.text);
  assert.ok(device.stats.commands.some((c) => c.command === 'show version'));
});
