// Issue 23: 42 jobs stayed `queued` for good on an actor host whose NATS node was frozen
// (`frozen-leader`, `SVC_FAULT_FREEZE_WHERE=actor-host`): the placement consumer had sent them
// into the frozen connection (delivered, never received), and the host's intake, which replaces
// a stalled consumer so that such jobs are sent again, could not delete it while the cluster
// refused (JetStream "temporarily unavailable"), then went on with it: its ack_wait is hours, so
// the jobs waited in the stream. Here the deletion is refused by the host user's permissions,
// until a reload grants it (the cluster answering again).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Consumers, DefaultTopology, Streams, Subjects } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { createLogger } from '@svc/telemetry';
import { IntakeChecks, ShardIntake, shardSource } from '@svc/device-actor';
import {
  NatsServerProcess,
  captureLogs,
  natsCredentials,
  natsUsers,
  waitUntil,
} from '../harness/mod.js';

test('when the server stops answering long enough for the intake to find its consumer stalled, then a job sent into the lost connection is delivered again once the server answers', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-intake-stall-'));
  await writeFile(join(dataDir, 'users.conf'), natsUsers('host', ['$JS.API.CONSUMER.DELETE.>']));
  const nats = await NatsServerProcess.start({ dataDir, extraConfig: 'include "users.conf"' });
  const nc = await connectNats(nats.url, 'intake-stall-test', natsCredentials('admin'));
  const hostNc = await connectNats(nats.url, 'intake-stall-host', natsCredentials('host'));
  const logs = captureLogs();
  let intake: ShardIntake | null = null;
  let checks: IntakeChecks | null = null;
  let draining = false;
  t.after(async () => {
    process.kill(nats.pid!, 'SIGCONT');
    draining = true;
    await intake?.close();
    checks?.stop();
    await hostNc.close();
    await nc.close();
    await nats.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  await ensureTopology(nc, DefaultTopology);
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const subject = Subjects.jobShard('default', 0);
  const hostJsm = await jetstreamManager(hostNc);
  const log = createLogger('device-actor', 'DEBUG', logs.sink);
  checks = new IntakeChecks(hostJsm, log);
  const source = shardSource('default', 0, () => Promise.resolve(true), checks);
  await jsm.consumers.add(Streams.jobs, source.consumer);

  // A job sent into a connection that lost it: taken off the shard's consumer, never acknowledged.
  await js.publish(subject, 'lost');
  const lost = await (await js.consumers.get(Streams.jobs, Consumers.shard('default', 0))).next();
  assert.equal(lost?.string(), 'lost');

  const delivered: string[] = [];
  // The server refusing the host's deletion of its consumer (a permissions violation).
  let refusals = 0;
  void (async () => {
    for await (const s of hostNc.status()) {
      if (s.type === 'error' && String(s.error).includes('CONSUMER.DELETE')) refusals++;
    }
  })();
  intake = new ShardIntake(
    hostNc,
    hostJsm,
    log,
    () => draining,
    (m) => delivered.push(m.string()),
    source,
  );
  await js.publish(subject, 'first');
  await waitUntil(() => delivered.includes('first'), 'the intake consuming');
  assert.ok(!delivered.includes('lost'), 'the lost job is pending on the consumer, not sent again');

  // The server freezes: the intake finds its consumer stalled; its deletion is refused.
  process.kill(nats.pid!, 'SIGSTOP');
  await waitUntil(
    () => logs.lines.some((l) => l.includes('consumer stalled; consuming again')),
    'the intake finding its consumer stalled',
    { timeoutMs: 60_000 },
  );
  process.kill(nats.pid!, 'SIGCONT');
  await waitUntil(() => refusals > 0, 'the deletion of the stalled consumer refused', {
    timeoutMs: 60_000,
  });
  // The cluster answers again (the host may delete its consumer now).
  await writeFile(join(dataDir, 'users.conf'), natsUsers('host', []));
  process.kill(nats.pid!, 'SIGHUP');

  await waitUntil(() => delivered.includes('lost'), 'the lost job delivered again', {
    timeoutMs: 30_000,
  });
});
