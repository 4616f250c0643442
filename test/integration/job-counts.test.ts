// The gateway's job counts come from the job records' writes, read in bursts (each write carries
// its record's summary in a header), not from the jobs' events. A scrape catches up first.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Buckets, Headers, Subjects, encodeJson } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { deviceStackForFile, http, waitForJob, waitUntil } from '../harness/mod.js';

const lab = deviceStackForFile(
  { platform: 'cisco_ios', hostname: 'R1', enable: 'svc-demo' },
  { env: { JOB_DEDUP_ENABLED: 'false' } },
);
let connection: NatsConnection | null = null;
/** The test's own connection (the stack's NATS is up only once its `before` ran). */
async function natsOfTest(): Promise<NatsConnection> {
  connection ??= await connectNats(lab.nats.url, 'test-job-counts');
  return connection;
}
after(() => connection?.close());

/** The job counters of one scrape, by their series (name and labels as written). */
async function scrape(): Promise<Map<string, number>> {
  const text = (await http('GET', `${lab.stack.url}/metrics`)).text;
  const out = new Map<string, number>();
  for (const m of text.matchAll(
    /^((?:svc_queue_jobs_total|svc_jobs_total|svc_malformed_messages_total)\{[^}]*\}|svc_queue_processing_time_seconds_count|svc_jobs_duration_seconds_count\{[^}]*\}) (\S+)$/gm,
  )) {
    out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** What changed between two scrapes (series that did not change left out). */
function changes(before: Map<string, number>, now: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [series, value] of now) {
    const delta = value - (before.get(series) ?? 0);
    if (delta !== 0) out[series] = delta;
  }
  return out;
}

/** What one finished cisco_ios job adds to the counts: each of its states once. */
const ONE_FINISHED_JOB = {
  'svc_queue_jobs_total{status="queued"}': 1,
  'svc_queue_jobs_total{status="started"}': 1,
  'svc_queue_jobs_total{status="finished"}': 1,
  svc_queue_processing_time_seconds_count: 1,
  'svc_jobs_total{platform="cisco_ios",status="finished"}': 1,
  'svc_jobs_duration_seconds_count{platform="cisco_ios"}': 1,
};

const submit = (commands: string[], extra: Record<string, unknown> = {}) =>
  http('POST', `${lab.stack.url}/v2/send-command`, {
    ...lab.auth,
    body: { host: '127.0.0.1', port: lab.device.port, platform: 'cisco_ios', commands, ...extra },
  });

test('when a job has ended, then the next scrape counts each of its states once', async () => {
  const first = await scrape();
  const submitted = await submit(['show version']);
  assert.equal(submitted.status, 202, submitted.text);
  const done = await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  assert.equal(done.json.status, 'finished', done.text);
  // No waiting for the counts: the scrape reads every record write stored before it.
  assert.deepEqual(changes(first, await scrape()), {
    ...ONE_FINISHED_JOB,
  });
});

test('when a job record is written, then the write carries the record summary in its header', async () => {
  const submitted = await submit(['show version']);
  const done = await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  const jsm = await jetstreamManager(await natsOfTest());
  const stored = await jsm.streams.getMessage(`KV_${Buckets.jobs}`, {
    last_by_subj: Subjects.kvEntry(Buckets.jobs, submitted.json.job_id),
  });
  assert.ok(stored, 'the record write is stored');
  const summary = JSON.parse(stored.header.get(Headers.recordSummary)) as unknown;
  assert.deepEqual(summary, {
    status: 'finished',
    platform: 'cisco_ios',
    enqueued_at: done.json.enqueued_at,
    started_at: done.json.started_at,
    ended_at: done.json.ended_at,
    // The host that started it: what a reaper reaping that host fails (docs/shards.md).
    actor_host: lab.stack.actors[0]!.hostId,
  });
});

test('when a running job is cancelled and its outputs are written to its record after, then it is counted cancelled once', async (t) => {
  await lab.device.setFaults({ hang: '^show ip interface brief$' });
  t.after(() => lab.device.setFaults({}));
  lab.device.resetStats();
  const first = await scrape();
  const submitted = await submit(['show version', 'show ip interface brief'], {
    read_timeout: 60,
  });
  assert.equal(submitted.status, 202, submitted.text);
  await waitUntil(
    () => lab.device.stats.commands.some((c) => c.command === 'show ip interface brief'),
    'the device to read the command that hangs',
  );
  const url = `${lab.stack.url}/v2/send-command/${submitted.json.job_id}`;
  assert.equal((await http('DELETE', url, lab.auth)).status, 204);
  // The actor adds the outputs after the gateway wrote `cancelled`: a second write of the end.
  const record = await waitUntil(async () => {
    const read = await http('GET', url, lab.auth);
    return read.json.command_status != null && read;
  }, 'the outputs of the cancelled job in its record');
  assert.equal(record.json.status, 'cancelled');
  assert.deepEqual(changes(first, await scrape()), {
    'svc_queue_jobs_total{status="queued"}': 1,
    'svc_queue_jobs_total{status="started"}': 1,
    'svc_queue_jobs_total{status="cancelled"}': 1,
    svc_queue_processing_time_seconds_count: 1,
    'svc_jobs_total{platform="cisco_ios",status="cancelled"}': 1,
    'svc_jobs_duration_seconds_count{platform="cisco_ios"}': 1,
  });
});

test('when a record write carries a summary that is not JSON or of the wrong shape, then the counts drop it and count the next job', async () => {
  const first = await scrape();
  const js = jetstream(await natsOfTest());
  const write = async (key: string, summary: string) => {
    const h = natsHeaders();
    h.set(Headers.recordSummary, summary);
    await js.publish(Subjects.kvEntry(Buckets.jobs, key), encodeJson({ job_id: key }), {
      headers: h,
    });
  };
  await write('bad-summary-1', '{"status": "finished", not json');
  await write('bad-summary-2', JSON.stringify({ status: 'finished', platform: 42 }));
  const submitted = await submit(['show version']);
  await waitForJob(lab.stack.url, submitted.json.job_id, lab.auth);
  // The reaper's enqueue check reads the same writes in its own bursts (a later write that is not
  // a creation may be a drain's fence): it drops them too, and counts them under its own name.
  const reaperDropped = 'svc_malformed_messages_total{consumer="reaper"}';
  const now = await waitUntil(async () => {
    const scraped = await scrape();
    return changes(first, scraped)[reaperDropped] === 2 && scraped;
  }, 'the reaper to drop both malformed summaries');
  assert.deepEqual(changes(first, now), {
    'svc_malformed_messages_total{consumer="gateway_metrics"}': 2,
    [reaperDropped]: 2,
    ...ONE_FINISHED_JOB,
  });
});
