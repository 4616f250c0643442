// Every consumer of NATS messages and records decodes them against their schema: a message that
// is not JSON, or JSON of the wrong shape, is dropped (logged, terminated, counted) and the
// consumer goes on. Each case is proven by a later good message doing its work.
import { test } from 'node:test';
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import {
  Buckets,
  Consumers,
  JOB_SHARDS,
  LockKeys,
  JobEnvelope,
  Streams,
  Subjects,
  decodeMessage,
  encodeJson,
  isJobId,
  jobShardOf,
} from '@svc/proto';
import { connectNats } from '@svc/nats';
import { commandEnvelope } from '@svc/proto/test-fixtures';
import { deviceKeyOf, envelopeSubjectOf } from '@svc/device-access';
import { deviceStackForTest, http, waitForJob, waitUntil } from '../harness/mod.js';

const NOT_JSON = new TextEncoder().encode('{"v":1, not json');

/** A job envelope of the schema's shape (its job has no record) for a device of `where`. */
function envelopeForTest(
  jobId: string,
  where: { context: string; host: string; port: number },
): JobEnvelope {
  const envelope = commandEnvelope(jobId);
  return { ...envelope, spec: { ...envelope.spec, ...where }, address: where.host };
}

/** `svc_malformed_messages_total` by consumer, from the gateway's /metrics (one process). */
async function dropped(url: string): Promise<Record<string, number>> {
  const text = (await http('GET', `${url}/metrics`)).text;
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^svc_malformed_messages_total\{consumer="([^"]+)"\} (\d+)$/gm)) {
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

test('when every consumer is sent messages that are not JSON or of the wrong shape, then each drops them and the next good message still does its work', async (t) => {
  const { nats, device, auth, stack } = await deviceStackForTest(t, {
    platform: 'cisco_ios',
    enable: 'svc-demo',
  });
  const nc = await connectNats(nats.url, 'test-bad-writer');
  t.after(() => nc.close());
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const workers = await new Kvm(js).open(Buckets.workers);
  const records = await new Kvm(js).open(Buckets.jobs);
  const locks = await new Kvm(js).open(Buckets.locks);
  // The good job's device (the gateway resolves 127.0.0.1 to itself): its shard subject.
  const spec = { context: 'default', host: '127.0.0.1', port: device.port };
  const shard = jobShardOf(deviceKeyOf('default', '127.0.0.1', device.port));

  // The dispatcher's consumer of jobs from gateways of an earlier release.
  await js.publish(Subjects.jobs('default'), NOT_JSON);
  await js.publish(Subjects.jobs('default'), encodeJson({ v: 1, job_id: 'wrong-shape' }));
  // The actor host's intake of the good job's shard.
  await js.publish(envelopeSubjectOf({ spec, address: '127.0.0.1' }), NOT_JSON);
  await js.publish(
    envelopeSubjectOf({ spec, address: '127.0.0.1' }),
    encodeJson({ v: 1, job_id: 'x', spec: {} }),
  );
  // Well-formed envelopes on a subject their job does not route to: one of another context on
  // this context's own subject (the dispatcher would forward it into that context's shards),
  // and one of another context on the good job's shard (the actor host would run it there).
  const elsewhere = { ...spec, context: 'elsewhere' };
  // Of the envelope's shape, with job ids: only where they arrived makes them wrong.
  const misrouted = [randomUUID(), randomUUID()].map((id) => envelopeForTest(id, elsewhere));
  for (const envelope of misrouted) {
    assert.ok(isJobId(envelope.job_id));
    decodeMessage(JobEnvelope, encodeJson(envelope));
  }
  await js.publish(Subjects.jobs('default'), encodeJson(misrouted[0]));
  await js.publish(envelopeSubjectOf({ spec, address: '127.0.0.1' }), encodeJson(misrouted[1]));
  // An envelope of the good job's shard whose id is not a job id (a store key, a log field).
  await js.publish(
    envelopeSubjectOf({ spec, address: '127.0.0.1' }),
    encodeJson(envelopeForTest('x\n{"forged":true}', spec)),
  );
  // Shard owners (the dispatcher's plan and the actor host's ownership): another shard's entry
  // of the wrong shape, which the plan overwrites with an owner.
  await locks.put(LockKeys.shard('default', (shard + 1) % JOB_SHARDS), encodeJson({ host: 7 }));
  // Events: no service consumes job events (they are for outside subscribers; the gateway's
  // counts read the record writes, below), so these reach no consumer of ours.
  nc.publish(Subjects.jobEvent('bad-event', 'finished'), NOT_JSON);
  nc.publish(
    Subjects.jobEvent('bad-event', 'finished'),
    encodeJson({ job_id: 'bad-event', status: 'finished', platform: 42 }),
  );
  await nc.flush();
  // Heartbeats (dispatcher placement, reaper, cluster status).
  await workers.put('bogus', NOT_JSON);
  await workers.put('bogus-shape', encodeJson({ host_id: 'bogus-shape', contexts: 'default' }));
  // Job records (the gateway's job index, and its job counts: written without a summary
  // header, as by an earlier release, the counts read each record and drop these two).
  await records.put('bad-record', NOT_JSON);
  await records.put('bad-shape', encodeJson({ job_id: 'bad-shape', status: 'nonsense' }));
  // A silent host: the reaper reaps it past the bad heartbeats.
  const long_ago = new Date(Date.now() - 3_600_000).toISOString();
  await workers.put(
    'ghost',
    encodeJson({
      host_id: 'ghost',
      contexts: ['default'],
      capacity: 1,
      busy: 0,
      active_jobs: 0,
      started_at: long_ago,
      last_beat: long_ago,
      pool_size: 0,
      pool_hits: 0,
      pool_misses: 0,
      draining: false,
    }),
  );

  // A good job after all of them runs: dispatcher, actor intake and placement went on.
  const a = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: { host: '127.0.0.1', port: device.port, commands: ['show version'] },
  });
  assert.equal(a.status, 202, a.text);
  const done = await waitForJob(stack.url, a.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);

  // The reaper went past the bad heartbeats and reaped the silent host.
  await waitUntil(
    async () => (await workers.get('ghost'))?.operation !== 'PUT' || null,
    'the reaper to reap the silent host',
  );
  // The dispatcher has settled everything on the context's subject (forwarded or dropped).
  await waitUntil(async () => {
    const info = await jsm.consumers.info(Streams.jobs, Consumers.dispatch('default'));
    return info.num_pending + info.num_ack_pending === 0 || null;
  }, 'the dispatcher to settle what the context subject held');
  const leaked = await jsm.streams.info(Streams.jobs, {
    subjects_filter: `${Subjects.jobs('elsewhere')}.>`,
  });
  assert.deepEqual(leaked.state.subjects ?? {}, {}, 'a job forwarded into another context');
  // The bad messages were terminated: nothing is left on the work queues.
  await waitUntil(
    async () => (await jsm.streams.info(Streams.jobs)).state.messages === 0,
    `${Streams.jobs} to be empty`,
  );
  // The job counts saw the good job's end after the bad records.
  await waitUntil(
    async () =>
      /^svc_jobs_total\{platform="cisco_ios",status="finished"\} 1$/m.test(
        (await http('GET', `${stack.url}/metrics`)).text,
      ),
    'the job counts to count the good job',
  );
  // The job index went past the bad records: the good job is listed.
  const listed = await http('GET', `${stack.url}/v2/jobs`, auth);
  assert.equal(listed.status, 200, listed.text);
  assert.ok(
    listed.json.jobs.some((j: { job_id: string }) => j.job_id === a.json.job_id),
    listed.text,
  );
  const counts = await dropped(stack.url);
  assert.equal(counts['job_index'], 2, JSON.stringify(counts));
  assert.equal(counts['dispatcher'], 3, JSON.stringify(counts));
  assert.equal(counts['actor_host'], 4, JSON.stringify(counts));
  // The wrong-shaped owner entry was dropped by the dispatcher and by the actor host.
  assert.ok((counts['dispatcher_shards'] ?? 0) >= 1, JSON.stringify(counts));
  assert.ok((counts['actor_shards'] ?? 0) >= 1, JSON.stringify(counts));
  assert.equal(counts['gateway_metrics'], 2, JSON.stringify(counts));
  for (const consumer of ['dispatcher_heartbeats', 'reaper', 'cluster_status']) {
    assert.ok((counts[consumer] ?? 0) >= 2, `${consumer}: ${JSON.stringify(counts)}`);
  }
});
