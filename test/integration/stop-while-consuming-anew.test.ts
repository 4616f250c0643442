// CI run 39: `cluster-failover` timed out after its load had passed, in `stack.stop()`. After a
// cluster node dies, the dispatcher and the actor host open their consumers again (a new
// consume, the stalled consumer deleted and re-created). A stop that came while one was being
// opened closed the consume it knew, the old one, and then waited for a loop that went on to read
// the new one for good. Here the consumer API requests are held by the test, the service is
// stopped while they wait, and then they are let through: the stop must still end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Buckets, Consumers, DefaultTopology, LockKeys } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { loadDispatcherConfig, startDispatcher } from '@svc/dispatcher';
import { IntakeChecks, ShardIntake, shardSource } from '@svc/device-actor';
import {
  NatsServerProcess,
  holdRequests,
  silentLogger,
  testEnv,
  waitUntil,
} from '../harness/mod.js';

/** Requests held until released; `reached` resolves when the first one is held. */
class Hold {
  #reach!: () => void;
  #release!: () => void;
  readonly reached = new Promise<void>((r) => (this.#reach = r));
  readonly released = new Promise<void>((r) => (this.#release = r));
  async pass(): Promise<void> {
    this.#reach();
    await this.released;
  }
  release(): void {
    this.#release();
  }
}

/** Waits (polling helper, with its deadline) for the stop to end; a failure names it. */
async function ends(stopping: Promise<unknown>, what: string): Promise<void> {
  let ended = false;
  void stopping.then(() => (ended = true));
  await waitUntil(() => ended, what, { timeoutMs: 20_000 });
}

test('when an actor host drains while a shard consumer is being opened, then its intake closes', async (t) => {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, 'intake-stop-test');
  let draining = false;
  const hold = new Hold();
  t.after(async () => {
    hold.release();
    draining = true;
    await nc.close();
    await nats.stop();
  });
  await ensureTopology(nc, DefaultTopology);
  const jsm = await jetstreamManager(nc);
  // The intake's consumer API, its creation held by the test.
  const consumers = new Proxy(jsm.consumers, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop === 'add') {
        return async (...args: Parameters<JetStreamManager['consumers']['add']>) => {
          await hold.pass();
          return target.add(...args);
        };
      }
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
  const heldJsm = new Proxy(jsm, {
    get: (target, prop) => (prop === 'consumers' ? consumers : Reflect.get(target, prop, target)),
  });
  const log = silentLogger('device-actor');
  const checks = new IntakeChecks(heldJsm, log);
  t.after(() => checks.stop());
  const intake = new ShardIntake(
    nc,
    heldJsm,
    log,
    () => draining,
    () => undefined,
    shardSource('default', 0, () => Promise.resolve(true), checks),
  );
  await hold.reached;

  draining = true;
  const closing = intake.close();
  hold.release();
  await ends(closing, 'the intake closing');
});

test('when a dispatcher stops while its job consumer is being opened, then it stops', async (t) => {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, 'dispatcher-stop-test');
  // The dispatcher's connection, its requests to the dispatch consumer's API held once armed.
  const hold = holdRequests(
    nc,
    (subject) =>
      subject.startsWith('$JS.API.CONSUMER.') && subject.includes(Consumers.dispatch('default')),
  );
  t.after(async () => {
    hold.release();
    await nc.close();
    await nats.stop();
  });
  const dispatcher = await startDispatcher(loadDispatcherConfig(testEnv(nats.url)), {
    nc: hold.nc,
    log: silentLogger('dispatcher'),
  });
  // Its context loop is taking the lease (a round trip away): what it asks of its consumer
  // next waits for the test.
  hold.arm();
  await hold.reached;

  const stopping = dispatcher.stop();
  hold.release();
  await ends(stopping, 'the dispatcher stopping');
  // It gave up its lease as it stopped: the next dispatcher leads at once.
  const locks = await new Kvm(jetstream(nc)).open(Buckets.locks);
  const lease = await locks.get(LockKeys.dispatcher('default'));
  assert.notEqual(lease?.operation, 'PUT', 'the context lease released');
});
