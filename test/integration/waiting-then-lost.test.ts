// A job waits on its shard behind its device's running job: its envelope stays stored there
// until it ends, delivered to the shard's owner and not yet acknowledged. If the stream loses that
// envelope meanwhile (a work-queue stream of nats-server 2.9 can lose a stored message across a
// leader change, as run 203 showed for `SVC_JOBS`), a later owner of the shard would never see
// it and the job would stay `queued` for good. The reaper's enqueue check found it waiting, looks
// at it again each cycle, and fails it NOT_ENQUEUED once its envelope is gone: the owner that
// still holds it has its start refused, so it never runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstreamManager } from '@nats-io/jetstream';
import { MessageIds, Streams } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { envelopeSubjectOf } from '@svc/device-access';
import {
  captureLogs,
  deviceStackForTest,
  http,
  loseMessage,
  submitCommand,
  submitHeldJob,
  waitForJob,
  waitUntil,
} from '../harness/mod.js';

const HANG = 'show interface GigabitEthernet0/1';

test('when the envelope of a job waiting on its shard is lost before it starts, then the reaper fails the job NOT_ENQUEUED and it never runs', async (t) => {
  const logs = captureLogs();
  const { nats, device, stack, auth, cleanup } = await deviceStackForTest(
    t,
    { platform: 'cisco_ios', enable: 'svc-demo' },
    {
      env: {
        ENQUEUE_GRACE: '1',
        JOB_REAPER_INTERVAL: '0.5',
        JOB_DEDUP_ENABLED: 'false',
        RATE_LIMIT_DEVICE_PER_MINUTE: '0',
      },
      logSink: logs.sink,
    },
  );
  const nc = await connectNats(nats.url, 'waiting-then-lost-test');
  cleanup.push(() => nc.close());
  const submit = (command: string) => submitCommand(stack.url, auth, device, command);

  // The device holds a first job (its command never answered); the second waits behind it.
  const held = await submitHeldJob(device, { hang: HANG }, HANG, submit);
  const waiting = await submit('show version');
  await waitUntil(
    () =>
      logs.lines.some((l) => l.includes(waiting) && l.includes('enqueue check: envelope stored')),
    "the reaper's enqueue check to find the second job's envelope waiting",
    { timeoutMs: 30_000 },
  );

  // The stream loses it.
  const jsm = await jetstreamManager(nc);
  const subject = envelopeSubjectOf({
    spec: { context: 'default', host: device.host, port: device.port },
    address: device.host,
  });
  assert.ok(await loseMessage(jsm, Streams.jobs, subject, MessageIds.envelope(waiting)));

  const failed = await waitForJob(stack.url, waiting, auth);
  assert.equal(failed.json.status, 'failed', failed.text);
  assert.equal(failed.json.error_code, 'NOT_ENQUEUED', failed.text);
  assert.match(failed.json.error, /left the queue before the job started/, failed.text);

  // The device goes on: its first job cancelled, a third runs, and only then is it certain that
  // the lost one, ahead of it in the owner's mailbox, had its turn and did not run.
  const cancelled = await http('DELETE', `${stack.url}/v2/send-command/${held}`, auth);
  assert.equal(cancelled.status, 204, cancelled.text);
  const third = await submit('show ip interface brief');
  const ran = await waitForJob(stack.url, third, auth);
  assert.equal(ran.json.status, 'finished', ran.text.slice(0, 800));
  assert.ok(
    !device.stats.commands.some((c) => c.command === 'show version'),
    'the lost job never ran',
  );
});
