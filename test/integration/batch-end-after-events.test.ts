// A batch stream ends at the batch's summary. An actor host publishes a batch job's events until
// SVC_EVENTS stores them (batch-events-stored.test.ts); one retried through an election could be
// stored after the batch's end, which the gateway published as soon as every job's record had
// ended: a stream then ended without that device's last change. Here the actor host's batch
// events are dropped on their way to a real nats-server (a relay) until the batch has ended,
// then let through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Streams, Subjects } from '@svc/proto';
import {
  captureLogs,
  filteredDeviceStackForTest,
  followBatchStream,
  http,
  postDeviceBatch,
  waitUntil,
} from '../harness/mod.js';

test("when a batch job's end event is stored only after every job's record ended, then the batch's end comes after it and its stream shows it", async (t) => {
  const logs = captureLogs();
  const { device, stack, auth, nats, filter } = await filteredDeviceStackForTest(
    t,
    { platform: 'cisco_ios' },
    (service) => service.startsWith('actor'),
    // The gateway learns that the job ended from its record (the actor host's event is dropped).
    { env: { BATCH_SWEEP_INTERVAL: '0.5' }, logSink: logs.sink },
  );
  const nc = await connect({ servers: nats.url });
  let client: ReturnType<typeof followBatchStream> | null = null;
  t.after(async () => {
    client?.close();
    await nc.close();
  });

  filter.drop((subject) => subject.startsWith('svc.events.batch.'));
  const batchId = await postDeviceBatch(stack.url, device, auth);
  client = followBatchStream(stack.url, batchId, auth);
  const { events } = client;
  await waitUntil(async () => {
    const batch = await http('GET', `${stack.url}/v2/batches/${batchId}`, auth);
    return batch.json.status === 'finished';
  }, 'the batch ended (every job record ended)');

  // Until the job's events are let through, the gateway either publishes the batch's end (what
  // it did before) or says it waits for them.
  const jsm = await jetstreamManager(nc);
  const endStored = () =>
    jsm.streams
      .getMessage(Streams.events, { last_by_subj: Subjects.batchEvent(batchId, 'finished') })
      .then((m) => m !== null)
      .catch(() => false);
  const waits = () =>
    logs.lines.some((l) => l.includes('batch end waits for job events') && l.includes(batchId));
  await waitUntil(async () => waits() || (await endStored()), 'the batch end stored, or held');
  filter.drop(null);

  await client.untilSummary();
  assert.deepEqual(
    events.map((e) => [e.event, e.status]),
    [
      ['job', 'queued'],
      ['job', 'started'],
      ['job', 'finished'],
      ['summary', 'finished'],
    ],
  );
});
