import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Sealer, Streams, decodeJson, encodeJson, type JobEnvelope } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { envelopeSubjectOf } from '@svc/device-access';
import { loadDeviceActorConfig, startDeviceActorService } from '@svc/device-actor';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  silentLogger,
  startInProcessStack,
  testEnv,
  waitForJob,
  waitUntil,
  type InProcessStack,
} from '../harness/mod.js';

/**
 * Jobs an actor host would misread never run there (docs/operations.md, upgrades): a real NATS
 * server, the in-process services, a simulated device over SSH and real HTTP. A gateway of a
 * later release is played by the test: the job it stores needs a capability this release's
 * actor hosts lack.
 */

let nats: NatsServerProcess;
let stack: InProcessStack;
let nc: NatsConnection;
let junos: SimulatedDevice;
let auth: { basic: { username: string; password: string } };

before(async () => {
  nats = await NatsServerProcess.start();
  junos = await startDevice({ platform: 'juniper_junos', hostname: 'J1' });
  auth = { basic: { username: junos.username, password: junos.password } };
  // No actor host yet: the job waits on its shard subject until the test has replaced it.
  stack = await startInProcessStack(nats.url, { actors: 0 });
  // Healthy but for its workers (none yet).
  await waitUntil(
    async () =>
      (await http('GET', `${stack.url}/healthcheck`).catch(() => null))?.json?.components?.queue
        ?.status === 'healthy',
    'the gateway serving',
  );
  nc = await connectNats(nats.url, 'actor-capabilities-test');
});

after(async () => {
  await nc?.close();
  await stack?.stop();
  await junos?.stop();
  await nats?.stop();
});

test('when a dry run reaches an actor host that lacks a capability it requires, then the job fails ACTOR_OUTDATED and the device is never contacted', async (t) => {
  const made = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: {
      host: '127.0.0.1',
      port: junos.port,
      platform: 'juniper_junos',
      dry_run: true,
      commands: ['set system location dry'],
    },
  });
  assert.equal(made.status, 202, made.text);
  const jsm = await jetstreamManager(nc);
  const subject = envelopeSubjectOf({
    spec: { context: 'default', host: '127.0.0.1', port: junos.port },
    address: '127.0.0.1',
  });
  const stored = await jsm.streams.getMessage(Streams.jobs, { last_by_subj: subject });
  assert.ok(stored, "the envelope is on its device's shard subject");
  const envelope = decodeJson<JobEnvelope>(stored.data);
  assert.equal(envelope.job_id, made.json.job_id);
  assert.deepEqual(envelope.requires, ['config_workflows'], 'the gateway says what it needs');
  // A need of a later release in its place: the actor host started next does not have it.
  const later: JobEnvelope = {
    ...envelope,
    requires: ['config_workflows', 'from_a_later_release'],
  };
  assert.ok(await jsm.streams.deleteMessage(Streams.jobs, stored.seq));
  await jetstream(nc).publish(subject, encodeJson(later));
  const env = testEnv(nats.url);
  const actorNc = await connectNats(nats.url, 'actor-capabilities-host');
  const actor = await startDeviceActorService(loadDeviceActorConfig(env), {
    nc: actorNc,
    log: silentLogger('device-actor'),
    sealer: Sealer.fromSetting(env['SVC_ENCRYPTION_KEY']!),
  });
  t.after(async () => {
    await actor.stop();
    await actorNc.close();
  });
  const done = await waitForJob(stack.url, envelope.job_id, auth);
  assert.equal(done.json.status, 'failed', done.text);
  assert.equal(done.json.error_code, 'ACTOR_OUTDATED');
  assert.match(done.json.error, /from_a_later_release/);
  assert.equal(done.json.error_retryable, true);
  assert.equal(junos.stats.handshakes, 0, 'the device was never contacted');
});
