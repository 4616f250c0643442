// Issue 23: a drain that could not remove its consumer (the store did not answer: a NATS node
// frozen, then resumed) must not leave the host without its mailbox. A work-queue stream takes
// one consumer per subject: while the drain's stays, the host cannot re-create its own, and the
// jobs placed on it wait for good (frozen-leader at the load: 10 jobs `queued` for
// three minutes, handed back only when the host stopped).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Consumers, DefaultTopology, Streams, Subjects, encodeJson } from '@svc/proto';
import { commandEnvelope } from '@svc/proto/test-fixtures';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs, drainConsumerConfig } from '@svc/jobs';
import { NatsServerProcess, waitUntil } from '../harness/mod.js';

/** A nats-server on which the drain's user may not delete consumers, and the job store as it. */
async function deniedDeletes(t: TestContext) {
  // The drain runs as a user who may not delete consumers: every delete it asks for fails.
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
  return { admin, jobs, jsm: await jetstreamManager(admin) };
}

test('when a drain cannot remove its consumer, then the host can take its mailbox back once the drain has gone quiet', async (t) => {
  const { jobs, jsm } = await deniedDeletes(t);
  const host = 'host-left';
  // A short idle threshold for the test; the default (30 s) works the same way.
  const outcome = await jobs.drain(host, {
    failStarted: false,
    reason: 'test',
    consumerIdleMs: 2000,
  });
  assert.deepEqual(outcome.handedBack, []);

  // The host re-creates its consumer as it does after a stall (actor-host intake).
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

test("when an earlier drain's consumer still holds a job and cannot be removed, then a drain hands back none of the device's later jobs before it", async (t) => {
  const { admin, jobs, jsm } = await deniedDeletes(t);
  const host = 'host-held';
  const envelopes = ['job-held-1', 'job-held-2', 'job-held-3'].map(commandEnvelope);
  for (const envelope of envelopes) {
    await jobs.enqueue(envelope, { announce: false });
    await jetstream(admin).publish(Subjects.actor(host), encodeJson(envelope));
  }
  // An earlier drain was given the first job and died; its consumer stayed (its delete failed).
  const options = { failStarted: false, reason: 'test', consumerIdleMs: 60_000 };
  await jsm.consumers.add(Streams.actor, drainConsumerConfig(host, options.consumerIdleMs));
  const earlier = await jetstream(admin).consumers.get(Streams.actor, Consumers.drain(host));
  const held = await earlier.next({ expires: 5000 });
  assert.equal(held?.seq, 1, 'the first job delivered to the earlier drain');

  // Handing back the later jobs now would place them before the first.
  const refused = await jobs.drain(host, options).then(
    (outcome) => `handed back ${JSON.stringify(outcome.handedBack)}`,
    (err: unknown) => err,
  );
  assert.ok(refused instanceof Error, String(refused));
  for (const envelope of envelopes) {
    const stored = await jobs.get(envelope.job_id);
    assert.equal(stored?.record.placement, undefined, `${envelope.job_id} not handed back`);
  }
  // Once the earlier drain's consumer is gone (the server removes it once idle), all of them go
  // back, in order.
  await jsm.consumers.delete(Streams.actor, Consumers.drain(host));
  const outcome = await jobs.drain(host, options);
  assert.deepEqual(
    outcome.handedBack,
    envelopes.map((e) => e.job_id),
  );
});
