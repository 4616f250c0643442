// After a NATS node dies, the dispatcher's watch of the actor hosts' heartbeats opens a new
// consumer, which nats-server 2.9.10 took up to about 40 s to create (bucket-watch-node-lost).
// The hosts beat on meanwhile; only the dispatcher's copy of their beats stopped. Judged by the
// clock alone, every host looked silent once DISPATCH_HOST_LIVENESS had passed, and no device
// that needed a host was placed until the watch was back. Here the dispatcher's requests to
// create a consumer of the heartbeats are held by the test and its consumer is deleted: its copy
// stops while the hosts go on beating, on a real nats-server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Buckets, Streams, WorkerHeartbeat, decodeMessage } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { loadDispatcherConfig, startDispatcher } from '@svc/dispatcher';
import { startDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  holdRequests,
  http,
  silentLogger,
  startInProcessStack,
  testEnv,
  waitForJob,
  waitHealthy,
  waitUntil,
} from '../harness/mod.js';

test("when the dispatcher's copy of the heartbeats stops while the hosts beat on, then it still places a new device's job on them", async (t) => {
  const nats = await NatsServerProcess.start();
  const first = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  const second = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  const stack = await startInProcessStack(nats.url);
  const nc = await connectNats(nats.url, 'dispatcher-stalled-copy');
  // The dispatcher's requests to create a consumer of the heartbeats, held once armed.
  const heartbeats = Streams.kv(Buckets.workers);
  const hold = holdRequests(nc, (subject) =>
    subject.startsWith(`$JS.API.CONSUMER.CREATE.${heartbeats}`),
  );
  t.after(async () => {
    hold.release();
    await dispatcher?.stop();
    await stack.stop();
    await nc.close();
    await first.stop();
    await second.stop();
    await nats.stop();
  });
  await waitHealthy(stack.url);

  // This test's dispatcher leads instead of the stack's, on the held connection.
  await stack.dispatcher.stop();
  const config = loadDispatcherConfig(testEnv(nats.url));
  const dispatcher = await startDispatcher(config, {
    nc: hold.nc,
    log: silentLogger('dispatcher'),
  });

  const submit = async (device: typeof first) => {
    const auth = { basic: { username: device.username, password: device.password } };
    const a = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: { host: device.host, port: device.port, commands: ['show version'] },
    });
    assert.equal(a.status, 202, a.text);
    return waitForJob(stack.url, a.json.job_id as string, auth);
  };
  const before = await submit(first);
  assert.equal(before.json.status, 'finished', before.text);

  // The copy stops: every consumer of the heartbeats is deleted (the other services' copies
  // open theirs again at once), and the dispatcher's new one waits for the test.
  hold.arm();
  const stoppedAt = Date.now();
  const jsm = await jetstreamManager(nc);
  for await (const c of jsm.consumers.list(heartbeats)) {
    await jsm.consumers.delete(heartbeats, c.name).catch(() => false);
  }
  await hold.reached; // the dispatcher's watch is opening a new consumer

  // The host beats on, past the liveness and the watch's two heartbeats since the copy stopped:
  // judged by the clock, it would be silent by now.
  const workers = await new Kvm(nc).open(Buckets.workers);
  const hostId = stack.actors[0]!.hostId;
  const pastMs = config.DISPATCH_HOST_LIVENESS * 1000 + 4000;
  await waitUntil(
    async () => {
      const entry = await workers.get(hostId);
      if (entry?.operation !== 'PUT') return false;
      return Date.parse(decodeMessage(WorkerHeartbeat, entry.value).last_beat) > stoppedAt + pastMs;
    },
    'the actor host to beat on past the liveness',
    { timeoutMs: pastMs + 20_000 },
  );

  // A device the dispatcher never placed needs a live host.
  const after = await submit(second);
  assert.equal(after.json.status, 'finished', after.text);
  assert.ok(hold.count > 0, "the dispatcher's copy was still stopped");
});
