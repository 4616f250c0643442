import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { NatsConnection } from '@nats-io/transport-node';
import { Buckets, DefaultTopology } from '@svc/proto';
import { bucketKeys, connectNats, ensureTopology, type Stores } from '@svc/nats';
import { HostKeyStore } from '@svc/device-access';
import { NatsServerProcess, waitUntil } from '../harness/mod.js';

// Heartbeats, pins and failed jobs are written while someone lists them: a listing of a bucket
// must end however the bucket is written meanwhile (the KV client's `keys()` could wait forever).

let nats: NatsServerProcess;
let reader: NatsConnection;
let writer: NatsConnection;
let readerStores: Stores;
let writerStores: Stores;

before(async () => {
  nats = await NatsServerProcess.start();
  reader = await connectNats(nats.url, 'test-reader');
  writer = await connectNats(nats.url, 'test-writer');
  readerStores = await ensureTopology(reader, DefaultTopology);
  writerStores = await ensureTopology(writer, DefaultTopology);
});

after(async () => {
  await reader?.close();
  await writer?.close();
  await nats?.stop();
});

/** An ed25519 public key blob as SSH sends it (type, then 32 bytes), distinct per `seed`. */
function ed25519Blob(seed: number): Buffer {
  const type = Buffer.from('ssh-ed25519');
  const len = (n: number) => Buffer.from([0, 0, 0, n]);
  return Buffer.concat([len(type.length), type, len(32), Buffer.alloc(32, seed % 256)]);
}

/**
 * The listing's result once it has ended; the polling helper fails the test naming `what` when
 * it has not ended by its deadline (a hung listing never settles).
 */
async function ended<T>(what: string, listing: Promise<T>): Promise<T> {
  let outcome: { value: T } | { error: unknown } | null = null;
  listing.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  );
  const done = await waitUntil(() => outcome, `${what} to end`, { timeoutMs: 10_000 });
  if ('error' in done) throw done.error;
  return done.value;
}

test('when pinned host keys are written while they are listed, then every listing ends and names every pinned device', async () => {
  const listing = new HostKeyStore(readerStores[Buckets.hostKeys]);
  const pinning = new HostKeyStore(writerStores[Buckets.hostKeys]);
  await pinning.put('default', '192.0.2.1', 22, ed25519Blob(1));
  await pinning.put('default', '192.0.2.2', 22, ed25519Blob(2));
  // Another process re-pins one device as fast as its writes are acknowledged.
  let writing = true;
  let writes = 0;
  const rewrites = (async () => {
    while (writing) {
      await pinning.put('default', '192.0.2.2', 22, ed25519Blob(++writes));
    }
  })();
  try {
    for (let i = 0; i < 150; i++) {
      const pins = await ended(`listing ${i + 1}`, listing.list());
      assert.deepEqual(
        pins.map((p) => p.host),
        ['192.0.2.1', '192.0.2.2'],
      );
    }
  } finally {
    writing = false;
    await rewrites;
  }
  assert.ok(writes > 0, 'the bucket was written during the listings');
});

test('when a key of a bucket is deleted, then the listing still names it and reading it tells', async () => {
  const kv = readerStores[Buckets.hostKeys];
  await kv.put('listing-kept', new Uint8Array([1]));
  await kv.put('listing-gone', new Uint8Array([1]));
  await kv.delete('listing-gone');
  const keys = await bucketKeys(kv);
  assert.ok(keys.includes('listing-kept'), keys.join(' '));
  assert.ok(keys.includes('listing-gone'), keys.join(' '));
  assert.equal((await kv.get('listing-gone'))?.operation, 'DEL');
});
