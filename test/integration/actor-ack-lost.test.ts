// An actor host acknowledges a job's message once the job's end is stored: a core publish,
// never answered. One sent while the NATS node leading the host's consumer died never arrived
// (`nats-node-killed`: 6 of 695 once): the job had finished, but its message stayed pending on
// the consumer for its ack wait (6 h), and the queue depth counted it all that time (a phantom
// queue; a stream that never empties). Here the acknowledgement is dropped on its way to a real
// nats-server (a relay between the actor host and the server), then let through again. The job
// comes from its shard of `SVC_JOBS` (docs/shards.md), where it stays until acknowledged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Streams } from '@svc/proto';
import { filteredDeviceStackForTest, http, waitForJob, waitUntil } from '../harness/mod.js';

test("when an actor host's acknowledgement of a finished job is lost, then it is sent again and the queue depth returns to 0", async (t) => {
  const { device, stack, auth, filter } = await filteredDeviceStackForTest(
    t,
    { platform: 'cisco_ios' },
    (service) => service.startsWith('actor'),
  );
  const depth = async () => {
    const a = await http('GET', `${stack.url}/v2/contexts`, auth);
    assert.equal(a.status, 200, a.text);
    return a.json.contexts[0].queue_depth as number;
  };

  filter.drop((subject) => subject.startsWith(`$JS.ACK.${Streams.jobs}.`));
  const submitted = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: {
      host: device.host,
      port: device.port,
      enable: device.enable,
      commands: ['show version'],
    },
  });
  assert.equal(submitted.status, 202, submitted.text);
  const job = await waitForJob(stack.url, submitted.json.job_id as string, auth);
  assert.equal(job.json.status, 'finished', job.text);
  await waitUntil(() => filter.dropped > 0, "the job's acknowledgement dropped");
  filter.drop(null);
  // The finished job still counts: its message is still on its shard, pending on its consumer.
  assert.equal(await depth(), 1);

  await waitUntil(async () => (await depth()) === 0, 'the queue depth back to 0', {
    timeoutMs: 30_000,
    everyMs: 250,
  });
});
