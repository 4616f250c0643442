import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Streams, Subjects, decodeJson, encodeJson, type JobEnvelope } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

/**
 * Jobs an actor host would misread never run there (docs/operations.md, upgrades): a real NATS
 * server, the in-process services, a simulated device over SSH and real HTTP. The dispatcher of
 * an earlier release is played by the test: it places a job on the actor host without looking
 * at what the job requires.
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
  stack = await startInProcessStack(nats.url, { actors: 1 });
  await waitHealthy(stack.url);
  nc = await connectNats(nats.url, 'actor-capabilities-test');
});

after(async () => {
  await nc?.close();
  await stack?.stop();
  await junos?.stop();
  await nats?.stop();
});

test('when a dry run reaches an actor host that lacks a capability it requires, then the job fails ACTOR_OUTDATED and the device is never contacted', async () => {
  // No placement by the service's dispatcher: the test places the job as an older one would.
  await stack.dispatcher.stop();
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
  const stored = await jsm.streams.getMessage(Streams.jobs, {
    last_by_subj: Subjects.jobs('default'),
  });
  assert.ok(stored, 'the envelope is in the context stream');
  const envelope = decodeJson<JobEnvelope>(stored.data);
  assert.equal(envelope.job_id, made.json.job_id);
  assert.deepEqual(envelope.requires, ['config_workflows'], 'the gateway says what it needs');
  // A need of a later release: this actor host does not have it.
  const later: JobEnvelope = {
    ...envelope,
    requires: ['config_workflows', 'from_a_later_release'],
  };
  const host = stack.actors[0]!.hostId;
  await jetstream(nc).publish(Subjects.actor(host), encodeJson(later));
  const done = await waitForJob(stack.url, envelope.job_id, auth);
  assert.equal(done.json.status, 'failed', done.text);
  assert.equal(done.json.error_code, 'ACTOR_OUTDATED');
  assert.match(done.json.error, /from_a_later_release/);
  assert.equal(done.json.error_retryable, true);
  assert.equal(junos.stats.handshakes, 0, 'the device was never contacted');
});
