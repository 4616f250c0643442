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
import { EventSource } from 'eventsource';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Streams } from '@svc/proto';
import { NatsCluster, http, startInProcessStack, waitHealthy, waitUntil } from '../harness/mod.js';

test('when the node serving a batch stream dies, then the stream goes on and the client gets the batch end on the same connection', async (t) => {
  const cluster = await NatsCluster.start(3);
  const stack = await startInProcessStack(cluster.url, {
    env: {
      NATS_REPLICAS: '3',
      // Jobs of context `idle` are never run (no actor host serves it): they stay queued until
      // the batch is cancelled.
      SVC_CONTEXTS: 'default,idle',
      WORKER_CONTEXTS: 'default',
      SSE_TIMEOUT: '300',
      SSE_RETRY: '0.2',
      // Production-like staleness thresholds, far above an election (cluster-failover.test.ts).
      WORKER_STALE_THRESHOLD: '30',
      DISPATCH_HOST_LIVENESS: '15',
    },
  });
  const nc = await connect({ servers: cluster.url.split(',') });
  let es: EventSource | null = null;
  t.after(async () => {
    es?.close();
    await nc.close();
    await stack.stop();
    await cluster.stop();
  });
  await waitHealthy(stack.url, 30_000);
  const me = { basic: { username: 'operator', password: 'device-secret' } };
  const created = await http('POST', `${stack.url}/v2/batches`, {
    ...me,
    body: {
      kind: 'command',
      context: 'idle',
      platform: 'cisco_ios',
      commands: ['show version'],
      devices: [
        { host: '127.0.0.1', port: 2201 },
        { host: '127.0.0.1', port: 2202 },
      ],
    },
  });
  assert.equal(created.status, 202, created.text);
  const batchId = created.json.batch_id as string;

  const events: { event: string; id: string; status?: string }[] = [];
  let opened = 0;
  const authorization =
    'Basic ' + Buffer.from(`${me.basic.username}:${me.basic.password}`).toString('base64');
  es = new EventSource(`${stack.url}/v2/batches/${batchId}/stream`, {
    fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, authorization } }),
  });
  es.addEventListener('open', () => opened++);
  for (const name of ['job', 'summary']) {
    es.addEventListener(name, (e) => {
      const data = JSON.parse(e.data) as { status?: string };
      events.push({ event: name, id: e.lastEventId, status: data.status });
    });
  }
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
      const cancel = await http('DELETE', `${stack.url}/v2/batches/${batchId}`, me).catch(
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
  assert.equal(opened, 1, 'one connection');
});
