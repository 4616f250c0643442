// cluster-failover took 50 and 65 s to run jobs accepted after the kill, with nothing in the logs:
// the dispatcher's view of the actor hosts comes from a watch of their heartbeats, and the KV
// client's watch is an ordered consumer of one replica, on one node. When that node dies, the
// watch hears nothing more until the client misses two of its 30 s heartbeats (@nats-io/kv 3.3.1,
// fixed): every host looks dead once DISPATCH_HOST_LIVENESS passes, and no job is placed for a
// minute. Every copy of a bucket (`KvMirror`: breakers, lockouts, batches, heartbeats) had the
// same blind minute. Here: a 3-node cluster, a copy of a bucket, the node serving its watch killed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { KvMirror, connectNats, watchBucket } from '@svc/nats';
import { NatsCluster, NatsServerProcess, silentLogger, waitUntil } from '../harness/mod.js';

test('when the node serving the watch of a copy of a bucket dies, then the copy sees the next write well before the KV client would', async (t) => {
  const cluster = await NatsCluster.start(3);
  const urls = cluster.url.split(',');
  const nc = await connectNats(cluster.url, 'bucket-watch-test');
  let mirror: KvMirror | null = null;
  let writer: Awaited<ReturnType<typeof connectNats>> | null = null;
  t.after(async () => {
    mirror?.stop();
    await nc.close();
    await writer?.close();
    await cluster.stop();
  });
  // A cluster that just started elects its JetStream leader first.
  const kv = await waitUntil(
    () => new Kvm(jetstream(nc)).create('watch-node-lost', { replicas: 3 }).catch(() => null),
    'the bucket created',
    { timeoutMs: 30_000, everyMs: 250 },
  );
  await kv.put('beat', new TextEncoder().encode('0'));
  mirror = await KvMirror.start(kv, '>', silentLogger('bucket-watch-test'));
  await waitUntil(() => mirror?.get('beat') !== null, 'the copy holding the first value');

  // The watch's consumer (the bucket's only consumer) and the node serving it.
  const jsm = await jetstreamManager(nc);
  const [watcher] = await jsm.consumers.list('KV_watch-node-lost').next();
  const serving = watcher?.cluster?.leader;
  assert.ok(serving, 'the watch consumer has a node');
  const victim = Number(serving.slice(1)) - 1;
  await cluster.nodes[victim]!.kill();

  // Written through a node that lives, once a second, as a heartbeat would be.
  writer = await connectNats(urls.filter((_, i) => i !== victim).join(','), 'bucket-writer');
  const kvLive = await new Kvm(jetstream(writer)).open('watch-node-lost');
  let beat = 0;
  const seen = () => new TextDecoder().decode(mirror?.get('beat')?.value ?? new Uint8Array());
  // Before the KV client's own recovery could even begin (two missed 30 s heartbeats, then a new
  // consumer): on nats-server 2.9.10 a new consumer can take several 5 s tries while the cluster
  // settles (measured up to about 40 s after the kill).
  await waitUntil(
    async () => {
      await kvLive.put('beat', new TextEncoder().encode(String(++beat))).catch(() => undefined);
      return seen() !== '0';
    },
    'the copy to see a write made after the node died',
    { timeoutMs: 55_000, everyMs: 1000 },
  );
  assert.notEqual(seen(), '0');
});

test('when the connection of a bucket watch closes, then its iteration ends (no retry keeps the process alive)', async (t) => {
  const nats = await NatsServerProcess.start();
  t.after(() => nats.stop());
  const nc = await connectNats(nats.url, 'bucket-watch-closing');
  const kv = await new Kvm(jetstream(nc)).create('watch-closing');
  await kv.put('k', new TextEncoder().encode('1'));
  const watch = await watchBucket(kv);
  const keys: string[] = [];
  const ended = (async () => {
    for await (const e of watch) keys.push(e.key);
  })();
  await waitUntil(() => keys.length === 1, 'the first value');
  await nc.close();
  await ended;
  assert.deepEqual(keys, ['k']);
});
