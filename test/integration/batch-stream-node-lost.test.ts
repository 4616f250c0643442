// A batch stream is fed by an ordered consumer of the batch's events: one replica, on one node.
// When that node died, the stream went silent, its jobs' later events and the summary unsent,
// until SSE_TIMEOUT (5 minutes by default): the NATS client asks the lost consumer for its state
// again and again, or counts missed heartbeats without ending anything. And the batch's end,
// published once while the cluster elected, could be lost with it. Ending the stream would
// not do either: an EventSource reconnecting during the election is answered 503, which ends it
// for good. Here: a 3-node cluster, an EventSource client (the `eventsource` package), the node
// serving its stream's consumer killed, then the batch cancelled.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Streams } from '@svc/proto';
import {
  IDLE_CONTEXT_ENV,
  NatsCluster,
  OPERATOR,
  followBatchStream,
  http,
  postIdleBatch,
  startInProcessStack,
  waitHealthy,
  waitUntil,
} from '../harness/mod.js';

test('when the node serving a batch stream dies, then the stream goes on and the client gets the batch end on the same connection', async (t) => {
  const cluster = await NatsCluster.start(3);
  const stack = await startInProcessStack(cluster.url, {
    env: {
      NATS_REPLICAS: '3',
      // The batch's jobs stay queued until it is cancelled.
      ...IDLE_CONTEXT_ENV,
      SSE_TIMEOUT: '300',
      SSE_RETRY: '0.2',
      // Production-like staleness thresholds, far above an election (cluster-failover.test.ts).
      WORKER_STALE_THRESHOLD: '30',
      DISPATCH_HOST_LIVENESS: '15',
    },
  });
  const nc = await connect({ servers: cluster.url.split(',') });
  let client: ReturnType<typeof followBatchStream> | null = null;
  t.after(async () => {
    client?.close();
    await nc.close();
    await stack.stop();
    await cluster.stop();
  });
  await waitHealthy(stack.url, 30_000);
  const { batchId } = await postIdleBatch(stack.url, [2201, 2202]);
  client = followBatchStream(stack.url, batchId);
  const { events, opened } = client;
  // Both jobs' `queued` events: the stream's consumer exists and has delivered.
  await waitUntil(() => events.length === 2, 'the two queued events');

  // The stream's consumer (an ordered one, filtered on the batch's events) and its node.
  const jsm = await jetstreamManager(nc);
  const consumers = await jsm.consumers.list(Streams.events).next();
  const feed = consumers.find((c) =>
    [c.config.filter_subject, ...(c.config.filter_subjects ?? [])].some((s) =>
      s?.includes(batchId),
    ),
  );
  const serving = feed?.cluster?.leader;
  assert.ok(serving, `the batch stream's consumer has a node (${consumers.length} consumers)`);
  const victim = Number(serving.slice(1)) - 1;
  await nc.close();
  await cluster.nodes[victim]!.kill();

  // Cancelled once the cluster takes writes again: the jobs' `cancelled` events and the summary.
  await waitUntil(
    async () => {
      const cancel = await http('DELETE', `${stack.url}/v2/batches/${batchId}`, OPERATOR).catch(
        () => null,
      );
      return cancel?.status === 200 || cancel?.status === 409;
    },
    'the batch cancelled',
    { timeoutMs: 90_000, everyMs: 500 },
  );
  await waitUntil(
    () => events.some((e) => e.event === 'summary'),
    `the summary, well before SSE_TIMEOUT (events so far: ${JSON.stringify(events)})`,
    { timeoutMs: 90_000, everyMs: 100 },
  );
  // In order, none twice: the feed opened again after the last event it had sent. The jobs'
  // `cancelled` events and the batch's end are published until stored (the cluster may still
  // be electing), the end after them (batch-events-stored.test.ts).
  assert.deepEqual(
    events.slice(0, 2).map((e) => [e.event, e.status]),
    [
      ['job', 'queued'],
      ['job', 'queued'],
    ],
  );
  assert.deepEqual(events.at(-1), { event: 'summary', id: 'end', status: 'cancelled' });
  const later = events.slice(2, -1);
  assert.ok(
    later.length === 2 && later.every((e) => e.event === 'job' && e.status === 'cancelled'),
    JSON.stringify(events),
  );
  const ids = events.slice(0, -1).map((e) => Number(e.id));
  assert.ok(
    ids.every((id, i) => i === 0 || id > ids[i - 1]!),
    `ids in order, none twice: ${ids.join(',')}`,
  );
  // The stream went on over the loss: the client never had to reconnect (a reconnect during the
  // election is answered 503, which ends an EventSource for good).
  assert.equal(opened(), 1, 'one connection');
});
