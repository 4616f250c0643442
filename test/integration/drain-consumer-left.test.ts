// Issue 23: a drain that could not remove its consumer (the store did not answer: a NATS node
// frozen, then resumed) must not leave the host without its mailbox. A work-queue stream takes
// one consumer per subject: while the drain's stays, the host cannot re-create its own, and the
// jobs placed on it wait for good (frozen-leader at the load: 10 jobs `queued` for
// three minutes, handed back only when the host stopped).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AckPolicy, DeliverPolicy, jetstreamManager } from '@nats-io/jetstream';
import { Consumers, DefaultTopology, Streams, Subjects } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { NatsServerProcess, waitUntil } from '../harness/mod.js';

test('when a drain cannot remove its consumer, then the host can take its mailbox back once the drain has gone quiet', async (t) => {
  // The drain runs as a user who may not delete consumers: its last step fails, every time.
  const nats = await NatsServerProcess.start({
    extraConfig: `authorization { users: [
      { user: "admin", password: "admin-pass" },
      { user: "drainer", password: "drainer-pass",
        permissions: { publish: { deny: ["$JS.API.CONSUMER.DELETE.>"] }, subscribe: ">" } }
    ] }`,
  });
  const admin = await connectNats(nats.url, 'test-admin', {
    NATS_USER: 'admin',
    NATS_PASSWORD: 'admin-pass',
  });
  const drainer = await connectNats(nats.url, 'test-drainer', {
    NATS_USER: 'drainer',
    NATS_PASSWORD: 'drainer-pass',
  });
  t.after(async () => {
    await drainer.close();
    await admin.close();
    await nats.stop();
  });
  await ensureTopology(admin, DefaultTopology);
  const jobs = await Jobs.open(drainer, await ensureTopology(drainer, DefaultTopology), {
    transientRetryMs: 500,
  });
  const host = 'host-left';
  // A short idle threshold for the test; the default (30 s) works the same way.
  const outcome = await jobs.drain(host, {
    failStarted: false,
    reason: 'test',
    consumerIdleMs: 2000,
  });
  assert.deepEqual(outcome.handedBack, []);

  // The host re-creates its consumer as it does after a stall (actor-host intake).
  const jsm = await jetstreamManager(admin);
  let lastError = '';
  await waitUntil(
    async () => {
      try {
        await jsm.consumers.add(Streams.actor, {
          durable_name: Consumers.actor(host),
          filter_subject: Subjects.actor(host),
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
        });
        return true;
      } catch (err) {
        lastError = String(err);
        return false;
      }
    },
    'the host re-creating its consumer',
    { timeoutMs: 60_000, everyMs: 500 },
  ).catch((err: unknown) => assert.fail(`${String(err)}; last refusal: ${lastError}`));
});
