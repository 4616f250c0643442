import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { Buckets, DefaultTopology } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { NatsServerProcess } from '../harness/mod.js';

/**
 * Issue 23 (`frozen-leader` with an actor host on the frozen node): a read served by a replica
 * behind its leader (a node back from a freeze) said a job had no record, or still had one
 * deleted since; the actor host dropped the job's last copy (stranded `queued`), and the gateway
 * answered an idempotent repeat 202 for a job whose record was gone (404 after). Reads that
 * decide go to the leader: the buckets of jobs and their keys are read without direct gets,
 * also when an earlier release made them with direct gets on.
 */
const LEADER_READ = [Buckets.jobs, Buckets.failed, Buckets.dedup, Buckets.idempotency];

test('when the stores are opened, then the buckets of job records and their keys are read through the leader, even if made with direct gets before', async (t) => {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, 'test');
  t.after(async () => {
    await nc.close();
    await nats.stop();
  });
  // An earlier release's bucket: direct gets on (the client's default).
  await new Kvm(jetstream(nc)).create(Buckets.idempotency, { history: 1 });
  const stores = await ensureTopology(nc, DefaultTopology);
  for (const bucket of LEADER_READ) {
    const kv = stores[bucket] as KV & { direct: boolean };
    assert.equal(kv.direct, false, `${bucket} read through the leader`);
  }
});
