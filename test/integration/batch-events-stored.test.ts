// A batch's stream (`GET /v2/batches/{id}/stream`) replays the batch's events from SVC_EVENTS.
// A job's batch event was published without waiting for the stream to store it: one published
// while no stream took its subject (a cluster electing the stream's leader after a node loss)
// was dropped, and the stream never showed that device's change, only the batch's end. Here the
// stream is made to take no batch subject while the jobs are cancelled (what an election looks
// like to a publisher: no responder), then given it back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Streams, Subjects } from '@svc/proto';
import {
  IDLE_CONTEXT_ENV,
  NatsServerProcess,
  OPERATOR,
  followBatchStream,
  http,
  postIdleBatch,
  startInProcessStack,
  waitHealthy,
  waitUntil,
} from '../harness/mod.js';

test('when a batch job event is published while its stream takes no writes, then it is stored once the stream does, before the batch end', async (t) => {
  const nats = await NatsServerProcess.start();
  const stack = await startInProcessStack(nats.url, { env: { ...IDLE_CONTEXT_ENV } });
  const nc = await connect({ servers: nats.url });
  let client: ReturnType<typeof followBatchStream> | null = null;
  t.after(async () => {
    client?.close();
    await nc.close();
    await stack.stop();
    await nats.stop();
  });
  await waitHealthy(stack.url, 30_000);
  const { batchId, jobIds } = await postIdleBatch(stack.url, [2201, 2202]);
  client = followBatchStream(stack.url, batchId);
  const { events } = client;
  await waitUntil(() => events.length === 2, 'the two queued events');

  // The stream stops taking the batch subjects: a publish finds no responder, as in an election.
  const jsm = await jetstreamManager(nc);
  const config = (await jsm.streams.info(Streams.events)).config;
  await jsm.streams.update(Streams.events, { ...config, subjects: ['svc.events.nobody'] });
  // Every publish of the batch's events, stored or not, as core subscribers see them.
  const published: string[] = [];
  const sub = nc.subscribe(Subjects.batchEvents(batchId));
  void (async () => {
    for await (const m of sub) published.push(m.subject);
  })();
  await nc.flush();

  const cancelled = http('DELETE', `${stack.url}/v2/batches/${batchId}`, OPERATOR);
  // Both jobs' `cancelled` events went out while nothing stored them.
  const cancelledSubject = Subjects.batchJobEvent(batchId, 'cancelled');
  await waitUntil(
    () => published.filter((s) => s === cancelledSubject).length >= 2,
    'the two cancelled events published',
  );
  await jsm.streams.update(Streams.events, config);
  const answer = await cancelled;
  assert.equal(answer.status, 200, answer.text);

  await client.untilSummary();
  sub.unsubscribe();
  // Every device's change, then the end: none lost to the outage, none twice.
  const cancelledIds = events
    .filter((e) => e.event === 'job' && e.status === 'cancelled')
    .map((e) => e.job_id);
  assert.deepEqual(cancelledIds.sort(), [...jobIds].sort(), JSON.stringify(events));
  assert.deepEqual(
    events.map((e) => e.event),
    ['job', 'job', 'job', 'job', 'summary'],
    JSON.stringify(events),
  );
});
