// A batch job's events come from two processes: `queued` from the gateway that admitted it,
// `started` and the end from the actor host that ran it, each published until SVC_EVENTS stores
// it (batch-events-stored.test.ts). Both retried through an election, the gateway's `queued`
// could be stored after the job's later events, and a batch stream then showed the device
// going back to `queued` after it had run. Here the gateway's batch events are dropped on their
// way to a real nats-server (a relay) until the job has finished, then let through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  followBatchStream,
  filteredDeviceStackForTest,
  postDeviceBatch,
  waitUntil,
} from '../harness/mod.js';

test("when the gateway's queued event of a batch job is stored only after the job ran, then the batch stream never shows the job queued again", async (t) => {
  const { device, stack, auth, filter } = await filteredDeviceStackForTest(
    t,
    { platform: 'cisco_ios' },
    (service) => service === 'gateway',
  );
  filter.drop((subject) => subject.startsWith('svc.events.batch.'));
  const batchId = await postDeviceBatch(stack.url, device, auth);
  const client = followBatchStream(stack.url, batchId, auth);
  t.after(() => client.close());
  const { events } = client;
  await waitUntil(
    () => events.some((e) => e.status === 'finished'),
    `the actor host's events in the stream (so far: ${JSON.stringify(events)})`,
    { timeoutMs: 30_000 },
  );
  // Still being tried: the gateway's end waits for its own batch events.
  assert.ok(filter.dropped > 0, 'the gateway tried to store its queued event');
  filter.drop(null);

  await client.untilSummary();
  assert.deepEqual(
    events.map((e) => [e.event, e.status]),
    [
      ['job', 'started'],
      ['job', 'finished'],
      ['summary', 'finished'],
    ],
  );
});
