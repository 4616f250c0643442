// The reaper announces each drain of a silent actor host (`HostDrain` under `LockKeys.drain`):
// under way, then done with the jobs it handed back. A dispatcher holds the devices whose last
// job is on the host while a drain is under way, and once it is done, only those whose jobs it
// handed back. A drain that failed half way was recorded done all the same: the devices whose
// jobs it had not reached yet were let go on elsewhere while those jobs still sat on the silent
// host's subject (only the actor host's wait for the device's earlier job kept the order, for
// DEVICE_ORDER_WAIT_MS). Here the reaper reaches a real nats-server through a relay that drops
// its requests on demand, and its drain fails the way `drain-consumer-left` shows: an earlier
// drain's consumer still holds a job and cannot be removed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import {
  Buckets,
  Consumers,
  HostDrain,
  LockKeys,
  Streams,
  Subjects,
  decodeMessage,
  encodeJson,
} from '@svc/proto';
import { commandEnvelope } from '@svc/proto/test-fixtures';
import { drainConsumerConfig } from '@svc/jobs';
import { reaperBehindRelay, staleHeartbeat } from '../harness/mod.js';

test("when a reaper's drain of a silent host fails, then its record stays under way with what it handed back, and the next drain's record is done with every job", async (t) => {
  const { reaper, filter, admin, stores, jobs } = await reaperBehindRelay(t);
  const host = 'host-silent';
  const envelopes = ['job-silent-1', 'job-silent-2', 'job-silent-3'].map(commandEnvelope);
  for (const envelope of envelopes) {
    await jobs.enqueue(envelope, { announce: false });
    await jetstream(admin).publish(Subjects.actor(host), encodeJson(envelope));
  }
  await stores[Buckets.workers].put(host, encodeJson(staleHeartbeat(host)));

  // An earlier drain was given the first job and died; its consumer stayed, and the reaper's
  // deletes of it go nowhere.
  const options = { failStarted: false, reason: 'test', consumerIdleMs: 60_000 };
  const jsm = await jetstreamManager(admin);
  await jsm.consumers.add(Streams.actor, drainConsumerConfig(host, options.consumerIdleMs));
  const earlier = await jetstream(admin).consumers.get(Streams.actor, Consumers.drain(host));
  assert.equal((await earlier.next({ expires: 5000 }))?.seq, 1, 'the first job held');
  const deleteEarlier = `$JS.API.CONSUMER.DELETE.${Streams.actor}.${Consumers.drain(host)}`;
  filter.drop((subject) => subject === deleteEarlier);

  const record = async () => {
    const entry = await stores[Buckets.locks].get(LockKeys.drain(host));
    assert.ok(entry, 'a drain record');
    return decodeMessage(HostDrain, entry.value);
  };
  // The drain fails (the cycle says so) and hands back nothing: the device's later jobs would
  // otherwise go before the first.
  await assert.rejects(reaper.cycle(), /earlier drain .* still holds 1/);
  const failed = await record();
  assert.equal(failed.state, 'draining', 'a failed drain is not done');
  assert.deepEqual(failed.handed_back, []);

  // The earlier drain's consumer goes (the server removes it once idle); the next cycle drains
  // the host whole, in order, and says so.
  filter.drop(null);
  await jsm.consumers.delete(Streams.actor, Consumers.drain(host));
  assert.deepEqual(await reaper.cycle(), [host]);
  const done = await record();
  assert.equal(done.state, 'done');
  assert.deepEqual(
    done.handed_back,
    envelopes.map((e) => e.job_id),
  );
});
