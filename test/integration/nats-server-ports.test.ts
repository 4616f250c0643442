// A port chosen as free is free only until something binds it. A CI run failed at the start of
// a 3-node cluster: "Error listening on router port: … address already in use" (the ports are
// chosen in the range the kernel also gives outgoing connections, and the nodes connect to each
// other while they start). Here the first port chosen is one already taken.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { NatsCluster, NatsServerProcess, freePort } from '@svc/launcher';
import { connectNats } from '@svc/nats';
import { waitUntil } from '../harness/mod.js';

/** A port held by this process for the test, and a chooser that offers it first. */
async function takenFirst(t: TestContext) {
  // Holds the port only: a node routed to it (the cluster's first try) is hung up on at once.
  const holder: Server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  const address = holder.address();
  const taken = typeof address === 'object' && address ? address.port : 0;
  let offered = false;
  const choosePort = async () => {
    if (offered) return freePort();
    offered = true;
    return taken;
  };
  return { taken, choosePort, offered: () => offered };
}

test('when the client port chosen for a server is taken before it binds, then it starts on another', async (t) => {
  const { taken, choosePort, offered } = await takenFirst(t);
  const server = await NatsServerProcess.start({ choosePort });
  t.after(() => server.stop());
  assert.ok(offered(), 'the taken port was offered');
  assert.notEqual(server.port, taken);
  const nc = await connectNats(server.url, 'ports-test');
  await nc.flush();
  await nc.close();
});

// The test runner found a `svc-nats-*` folder left in its temporary folder after every run: the
// data folder a start made for itself stayed when that start failed (the first try above).
test('when a start fails, then the data folder it made for itself is removed', async (t) => {
  const { taken } = await takenFirst(t);
  const own = await mkdtemp(join(tmpdir(), 'ports-test-'));
  const before = process.env['TMPDIR'];
  process.env['TMPDIR'] = own;
  t.after(async () => {
    if (before === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = before;
    await rm(own, { recursive: true, force: true });
  });
  // A port given by the caller is not chosen again: the start fails.
  await assert.rejects(NatsServerProcess.start({ port: taken }), /address already in use/);
  assert.deepEqual(await readdir(own), []);
});

test('when a route port chosen for a cluster is taken before its node binds, then the cluster starts on other ports', async (t) => {
  const { taken, choosePort, offered } = await takenFirst(t);
  const cluster = await NatsCluster.start(3, { choosePort });
  const nc = await connectNats(cluster.url, 'ports-cluster-test');
  t.after(async () => {
    await nc.close();
    await cluster.stop();
  });
  assert.ok(offered(), 'the taken port was offered');
  for (const node of cluster.nodes) {
    assert.notEqual(node.options.cluster?.routePort, taken);
    assert.notEqual(node.port, taken);
  }
  // The nodes are routed to each other: a stream with three replicas is placed (once the
  // cluster that just started has elected its JetStream leader).
  // Not checked at once: the API answers only once that leader is elected.
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const info = await waitUntil(
    () => jsm.streams.add({ name: 'R3', subjects: ['r3.>'], num_replicas: 3 }).catch(() => null),
    'a stream with three replicas placed',
    { timeoutMs: 30_000, everyMs: 250 },
  );
  assert.equal((info.cluster?.replicas?.length ?? 0) + 1, 3);
});
