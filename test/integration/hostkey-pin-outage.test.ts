// A device's first contact pins its host key inside the SSH handshake (`pinFirst`, a create in
// `svc-hostkeys`). A create the store did not answer (a NATS node lost: "jetstream is not
// enabled" from the node going away, in the lone clone's `cluster-failover` run) was thrown out
// of the handshake's check, and the job failed INTERNAL with the NATS error's text, where every
// other state change of an actor goes through the outage. Here the first create is dropped on
// its way to a real nats-server by a relay, as a node that went away would lose it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Buckets, DefaultTopology } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { HostKeyStore } from '@svc/device-access';
import { NatsPublishFilter, NatsServerProcess } from '../harness/mod.js';

test('when the store does not answer the first pin of a host key, then the pin is tried again and stored', async (t) => {
  const nats = await NatsServerProcess.start();
  const filter = await NatsPublishFilter.start(nats.url);
  const admin = await connectNats(nats.url, 'test-admin');
  await ensureTopology(admin, DefaultTopology);
  const nc = await connectNats(filter.url, 'test-actor');
  t.after(async () => {
    await nc.close();
    await admin.close();
    await filter.stop();
    await nats.stop();
  });
  let dropped = 0;
  filter.drop((subject) => {
    if (!subject.startsWith(`$KV.${Buckets.hostKeys}.`) || dropped > 0) return false;
    dropped++;
    return true;
  });
  const store = new HostKeyStore(await new Kvm(jetstream(nc)).open(Buckets.hostKeys));
  const blob = Buffer.from('ssh-ed25519 AAAA-test-key');
  const pinned = await store.pinFirst('default', '192.0.2.7', 22, blob);
  assert.equal(dropped, 1, 'the first create was lost');
  assert.equal(pinned.public_key, blob.toString('base64'));
  const read = new HostKeyStore(await new Kvm(jetstream(admin)).open(Buckets.hostKeys));
  assert.equal((await read.get('default', '192.0.2.7', 22))?.public_key, blob.toString('base64'));
});
