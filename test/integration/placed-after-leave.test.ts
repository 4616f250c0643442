// An actor host that stops hands its unstarted jobs back and deletes its heartbeat; a host
// that goes silent is reaped after WORKER_STALE_THRESHOLD, and its heartbeat is deleted too.
// A placement that lands on the host's subject after that (the dispatcher's publish, retried in
// place while the store did not answer, or decided before it saw the host leave) was read by
// nobody: no heartbeat names the host, so no drain came back to it, and the job stayed `queued`
// for good. Here the dispatcher reaches a real nats-server through a relay that holds back its
// placements until the host they are for has stopped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstreamManager } from '@nats-io/jetstream';
import {
  Buckets,
  DefaultTopology,
  HostDrain,
  LockKeys,
  Streams,
  Subjects,
  decodeMessage,
} from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { filteredDeviceStackForTest, http, waitForJob, waitUntil } from '../harness/mod.js';

test('when a placement lands on the subject of an actor host that has left, then the job is placed again and runs', async (t) => {
  const { nats, device, stack, auth, filter } = await filteredDeviceStackForTest(
    t,
    { platform: 'cisco_ios', enable: 'svc-demo' },
    (service) => service === 'dispatcher',
    { actors: 2 },
  );
  // The dispatcher's placements go nowhere for now; the first one names its host.
  let placedOn: string | null = null;
  filter.drop((subject) => {
    if (!subject.startsWith('svc.actor.')) return false;
    placedOn ??= subject;
    return true;
  });
  const submitted = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: {
      host: device.host,
      port: device.port,
      platform: 'cisco_ios',
      commands: ['show version'],
    },
  });
  assert.equal(submitted.status, 202, submitted.text);
  const jobId = submitted.json.job_id as string;
  await waitUntil(() => placedOn !== null, "the dispatcher's placement of the job");
  const leaving = stack.actors.find((a) => Subjects.actor(a.hostId) === placedOn);
  assert.ok(leaving, `a host of the stack is placed on (${placedOn})`);
  await leaving.stop();

  // The retried placement now lands on the subject of the host that left.
  filter.drop(null);
  const nc = await connectNats(nats.url, 'placed-after-leave-test');
  t.after(() => nc.close());
  const jsm = await jetstreamManager(nc);
  await waitUntil(async () => {
    const info = await jsm.streams.info(Streams.actor, { subjects_filter: placedOn! });
    return (info.state.subjects?.[placedOn!] ?? 0) > 0;
  }, 'the placement stored on the subject of the host that left');
  const done = await waitForJob(stack.url, jobId, auth, 60_000);
  assert.equal(done.json.status, 'finished', done.text);
  assert.ok(device.stats.commands.some((c) => c.command === 'show version'));
  // The reaper's drain of the subject says it handed the job back.
  const locks = (await ensureTopology(nc, DefaultTopology))[Buckets.locks];
  const drain = await waitUntil(async () => {
    const entry = await locks.get(LockKeys.drain(leaving.hostId));
    const record = entry?.operation === 'PUT' ? decodeMessage(HostDrain, entry.value) : null;
    return record?.state === 'done' ? record : null;
  }, 'the drain of the subject of the host that left');
  assert.deepEqual(drain.handed_back, [jobId]);
});
