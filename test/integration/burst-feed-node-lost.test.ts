// cluster-failover hung in its teardown in 2 of 4 CI runs: the reaper's stop waits for its
// cycle, and the cycle waited for ever on the enqueue check's read of the record writes
// (`BurstFeed`). A read fetches what was pending; a record rewritten meanwhile leaves it waiting
// for a message that will not come, until the fetch expires. When the node serving the feed's
// consumer (one replica) dies in that wait, the server's expiry never comes, and the NATS client
// (@nats-io/jetstream 3.3.1) asks the lost consumer for its state again and again instead of
// ending the fetch: every later reaper cycle, and every gateway scrape of /metrics, waited too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { BurstFeed, connectNats } from '@svc/nats';
import { NatsCluster, holdRequests, silentLogger, waitUntil } from '../harness/mod.js';

test('when the node serving a burst feed dies while a read waits for a message, then the read ends and the feed reads on', async (t) => {
  const cluster = await NatsCluster.start(3);
  const nc = await connectNats(cluster.url, 'burst-feed-test');
  const bucket = 'feed-node-lost';
  const stream = `KV_${bucket}`;
  // The feed's connection, its pulls held once armed.
  const hold = holdRequests(
    nc,
    (subject) => subject.startsWith(`$JS.API.CONSUMER.MSG.NEXT.${stream}.`),
    {
      publishes: true,
    },
  );
  let feed: BurstFeed | null = null;
  t.after(async () => {
    hold.release();
    feed?.stop();
    await nc.close();
    await cluster.stop();
  });
  // A cluster that just started elects its JetStream leader first.
  const kv = await waitUntil(
    () => new Kvm(jetstream(nc)).create(bucket, { replicas: 3 }).catch(() => null),
    'the bucket created',
    { timeoutMs: 30_000, everyMs: 250 },
  );
  const put = (key: string) => kv.put(key, new TextEncoder().encode(key));
  const first = await put('a');
  const seen: number[] = [];
  feed = new BurstFeed(jetstream(hold.nc), {
    stream,
    from: new Date(0),
    everyMs: 3_600_000, // reads only when the test asks
    log: silentLogger('burst-feed-test'),
    label: 'test',
    onMessage: (m) => seen.push(m.seq),
  });
  await feed.catchUp();
  assert.deepEqual(seen, [first]);

  // Two writes pending; the first removed once the read has asked for both, as a record
  // rewritten between two reads is: the read waits for a message that will not come.
  const removed = await put('x');
  const kept = await put('y');
  hold.arm();
  let readEnded = false;
  const reading = feed.catchUp().then(() => (readEnded = true));
  await hold.reached;
  const jsm = await jetstreamManager(nc);
  await jsm.streams.deleteMessage(stream, removed, false);
  // The feed's consumer (the stream's only one) and the node serving it.
  const [consumer] = await jsm.consumers.list(stream).next();
  const serving = consumer?.cluster?.leader;
  assert.ok(serving, "the feed's consumer has a node");
  await cluster.nodes[Number(serving.slice(1)) - 1]!.kill();
  hold.release();

  await waitUntil(() => readEnded, 'the read under way to end after its node died', {
    timeoutMs: 60_000,
    everyMs: 100,
  });
  await reading;
  // The feed reads on from the last message it read, through a node that lives.
  const later = await waitUntil(() => put('z').catch(() => null), 'a write after the node died', {
    timeoutMs: 60_000,
    everyMs: 500,
  });
  await waitUntil(
    async () => {
      await feed.catchUp();
      return seen.includes(later);
    },
    'the feed to read the write made after the node died',
    { timeoutMs: 60_000, everyMs: 250 },
  );
  assert.ok(seen.includes(kept), 'the write pending when the node died is read too');
  assert.ok(!seen.includes(removed), 'the removed write is not read');
});
