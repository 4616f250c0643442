// The watched copy of a bucket (`KvMirror`): a writer waits for its own write to reach the copy
// by a signal from the watch (`caughtUp`), as the host-key store does before the next job's
// guards read the copy. Real nats-server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { KvMirror, connectNats } from '@svc/nats';
import { NatsServerProcess } from '../harness/mod.js';

test('when a writer waits for its own put and delete in a watched copy, then the copy holds each once caughtUp resolves', async (t) => {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, 'test');
  t.after(async () => {
    await nc.close();
    await nats.stop();
  });
  const kv = await new Kvm(jetstream(nc)).create('mirror-test');
  await kv.put('other', new TextEncoder().encode('x'));
  const mirror = await KvMirror.start(kv);
  t.after(() => mirror.stop());

  // What the copy holds when caughtUp resolves, asked before the write it waits for.
  const when = (key: string, revision: number | null) =>
    mirror.caughtUp(key, revision, 30_000).then((caught) => ({
      caught,
      revision: mirror.get(key)?.revision ?? null,
    }));
  // `other` is the bucket's first message: the next put is revision 2, then 3.
  const firstSeen = when('k', 2);
  assert.equal(await kv.put('k', new TextEncoder().encode('1')), 2);
  assert.deepEqual(await firstSeen, { caught: true, revision: 2 });
  const secondSeen = when('k', 3);
  assert.equal(await kv.put('k', new TextEncoder().encode('2')), 3);
  assert.deepEqual(await secondSeen, { caught: true, revision: 3 });
  assert.equal(new TextDecoder().decode(mirror.get('k')!.value), '2');
  // Already there: resolves at once, as true.
  assert.equal(await mirror.caughtUp('k', 2, 30_000), true);

  const deleteSeen = when('k', null);
  await kv.delete('k');
  assert.deepEqual(await deleteSeen, { caught: true, revision: null });
  assert.notEqual(mirror.get('other'), null, 'other keys stay in the copy');
  // A revision the bucket never reaches: the bound answers, false.
  assert.equal(await mirror.caughtUp('k', 1000, 50), false);
});

test('when a copy is kept of the keys only, then it holds the keys and their deletes, and no value reaches it', async (t) => {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, 'test');
  t.after(async () => {
    await nc.close();
    await nats.stop();
  });
  const kv = await new Kvm(jetstream(nc)).create('mirror-keys-test');
  await kv.put('a.held.1', new TextEncoder().encode('sealed-1'));
  await kv.put('b.other', new TextEncoder().encode('x'));
  const mirror = await KvMirror.start(kv, '*.held.*', undefined, { keysOnly: true });
  t.after(() => mirror.stop());
  assert.equal(await mirror.caughtUp('a.held.1', 1, 30_000), true);
  const added = mirror.caughtUp('a.held.2', 3, 30_000);
  await kv.put('a.held.2', new TextEncoder().encode('sealed-2'));
  assert.equal(await added, true);
  assert.deepEqual(
    [...mirror.entries()].map(([key, e]) => [key, e.value.length]),
    [
      ['a.held.1', 0],
      ['a.held.2', 0],
    ],
  );
  const removed = mirror.caughtUp('a.held.1', null, 30_000);
  await kv.delete('a.held.1');
  assert.equal(await removed, true);
  assert.equal(mirror.get('a.held.1'), null);
  assert.notEqual(mirror.get('a.held.2'), null);
});

test('when the bucket holds keys but none the copy follows, then the copy is ready once started', async (t) => {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, 'test');
  t.after(async () => {
    await nc.close();
    await nats.stop();
  });
  const kv = await new Kvm(jetstream(nc)).create('mirror-ready-test');
  await kv.put('b.other', new TextEncoder().encode('x'));
  // Nothing of `*.held.*` to wait for: a copy not ready would send every read to the bucket
  // until the first such key was written, however long that takes.
  const empty = await KvMirror.start(kv, '*.held.*', undefined, { keysOnly: true });
  t.after(() => empty.stop());
  assert.equal(empty.ready, true, 'a copy with nothing to copy is ready');
  assert.equal(empty.get('b.other'), null);

  // A copy with keys to copy is ready once it holds them, not before.
  await kv.put('a.held.1', new TextEncoder().encode('x'));
  const full = await KvMirror.start(kv, '*.held.*');
  t.after(() => full.stop());
  assert.ok(!full.ready || full.get('a.held.1') !== null, 'ready before it holds its keys');
  await full.caughtUp('a.held.1', 2, 30_000);
  assert.equal(full.ready, true);
  assert.notEqual(full.get('a.held.1'), null);
});
