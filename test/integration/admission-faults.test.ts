import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Buckets, MessageIds, Streams, Subjects } from '@svc/proto';
import { connectNats } from '@svc/nats';
import {
  deviceStackForTest,
  http,
  waitForJob,
  waitUntil,
  loseMessage,
  type HttpAnswer,
} from '../harness/mod.js';

/** Sends until the answer is not a 503 (a client retrying a refused request, as SPEC asks). */
async function untilAccepted(
  send: () => Promise<HttpAnswer>,
): Promise<HttpAnswer & { refusals: number }> {
  // Refusals of attempts that went past the key (not "still being admitted"): each may have
  // recorded its job before its answer's bound passed.
  let refusals = 0;
  for (;;) {
    const a = await send();
    if (a.status !== 503) return { ...a, refusals };
    assert.ok(a.headers['retry-after'], 'a 503 carries Retry-After');
    if (!String(a.json?.message).includes('still being admitted')) refusals++;
  }
}

test('when an idempotency key points at a job that has no record (a refused attempt left it), then the retry is admitted as a new job that runs', async (t) => {
  const { nats, device, stack, auth, cleanup } = await deviceStackForTest(
    t,
    { platform: 'cisco_ios', enable: 'svc-demo' },
    // A short admission bound: the retry may take the key over once the attempt that left it
    // can no longer write its record.
    { env: { STORE_TIMEOUT: '1' } },
  );
  const nc = await connectNats(nats.url, 'test');
  cleanup.push(() => nc.close());
  const submit = (key: string, command: string) =>
    http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      headers: { 'x-idempotency-key': key },
      body: { host: '127.0.0.1', port: device.port, commands: [command] },
    });
  // A first job with the key: the only key in svc-idem is the one this caller's header maps to.
  const key = `k-${randomUUID()}`;
  const first = await submit(key, 'show version');
  assert.equal(first.status, 202, first.text);
  assert.equal((await waitForJob(stack.url, first.json.job_id, auth)).json.status, 'finished');
  const idem = await new Kvm(jetstream(nc)).open(Buckets.idempotency);
  const keys: string[] = [];
  for await (const k of await idem.keys()) keys.push(k);
  assert.equal(keys.length, 1);
  // What an attempt refused after it claimed the key leaves: the key, and no record of its job.
  const ghost = randomUUID();
  await idem.put(keys[0]!, new TextEncoder().encode(ghost));

  const retry = await untilAccepted(() => submit(key, 'show version'));
  assert.equal(retry.status, 202, retry.text);
  assert.notEqual(retry.json.job_id, ghost, 'never a 202 for a job that has no record');
  // The retry that took the key over ran the whole admission. It may have been answered 503
  // itself (STORE_TIMEOUT of 1 s on a loaded machine) after recording the job: a keyed attempt
  // keeps its key and record then, and the next retry is an idempotent repeat of that job.
  assert.ok(
    retry.json.idempotent === false || retry.refusals > 0,
    'a repeat only of a job an earlier, refused retry recorded',
  );
  const done = await waitForJob(stack.url, retry.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
  // The key now names the job that ran: a second retry is an idempotent repeat of it.
  const again = await submit(key, 'show version');
  assert.equal(again.status, 202, again.text);
  assert.equal(again.json.job_id, retry.json.job_id);
  assert.equal(again.json.idempotent, true);
});

test('when the NATS server is frozen (SIGSTOP), then submissions and reads get 503 with Retry-After within STORE_TIMEOUT, not the client timeout', async (t) => {
  const { nats, device, stack, auth, cleanup } = await deviceStackForTest(
    t,
    { platform: 'cisco_ios', enable: 'svc-demo' },
    { env: { STORE_TIMEOUT: '2' } },
  );
  let frozen = false;
  cleanup.push(() => {
    if (frozen) process.kill(nats.pid!, 'SIGCONT');
  });
  const body = { host: '127.0.0.1', port: device.port, commands: ['show version'] };
  const first = await http('POST', `${stack.url}/v2/send-command`, { ...auth, body });
  assert.equal(first.status, 202, first.text);
  await waitForJob(stack.url, first.json.job_id, auth);

  process.kill(nats.pid!, 'SIGSTOP');
  frozen = true;
  // A client that gives up after 10 s, as the ones that found this did: the answer comes first.
  const client = { ...auth, timeoutMs: 10_000 };
  const submitted = await http('POST', `${stack.url}/v2/send-command`, {
    ...client,
    headers: { 'x-idempotency-key': `k-${randomUUID()}` },
    body,
  });
  assert.equal(submitted.status, 503, submitted.text);
  assert.equal(submitted.headers['retry-after'], '10');
  assert.equal(typeof submitted.json.message, 'string');
  const read = await http('GET', `${stack.url}/v2/send-command/${first.json.job_id}`, client);
  assert.equal(read.status, 503, read.text);
  assert.equal(read.headers['retry-after'], '10');

  process.kill(nats.pid!, 'SIGCONT');
  frozen = false;
  const after = await untilAccepted(() =>
    http('POST', `${stack.url}/v2/send-command`, { ...auth, body }),
  );
  assert.equal(after.status, 202, after.text);
  assert.equal((await waitForJob(stack.url, after.json.job_id, auth)).json.status, 'finished');
});

test('when the jobs stream holds messages no consumer waits on, then health, metrics and contexts report the jobs waiting, not the message count', async (t) => {
  const { nats, device, stack, auth, cleanup } = await deviceStackForTest(
    t,
    { platform: 'cisco_ios', enable: 'svc-demo' },
    { env: { MAX_QUEUE_DEPTH: '1' } },
  );
  const nc = await connectNats(nats.url, 'test');
  cleanup.push(() => nc.close());
  // Messages that no dispatcher will ever take (a context no longer served): the stream
  // counts them, like a replica that kept messages its leader had removed; nobody waits on them.
  for (let i = 0; i < 3; i++) {
    await jetstream(nc).publish('svc.jobs.retired', new TextEncoder().encode('{}'));
  }
  const health = await http('GET', `${stack.url}/healthcheck`);
  assert.equal(health.json.components.queue.depth, 0, health.text);
  const metrics = await http('GET', `${stack.url}/metrics`);
  assert.match(metrics.text, /^svc_queue_depth 0$/m);
  const contexts = await http('GET', `${stack.url}/v2/contexts`, auth);
  assert.equal(contexts.status, 200, contexts.text);
  assert.equal(contexts.json.contexts[0].queue_depth, 0, contexts.text);
  // Admission under MAX_QUEUE_DEPTH=1 sees the same empty queue.
  const a = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: { host: '127.0.0.1', port: device.port, commands: ['show version'] },
  });
  assert.equal(a.status, 202, a.text);
  assert.equal((await waitForJob(stack.url, a.json.job_id, auth)).json.status, 'finished');
});

// Fault run 203 (frozen-leader): 8 accepted jobs stayed `queued` for good with no message of
// theirs left in `SVC_JOBS` or `SVC_ACTOR` and none placed. A work-queue stream of nats-server
// 2.9 can lose a stored message across a leader change (nats-server#5612, #6236); the check's
// probe then answers `duplicate` (the id is still in the window) and the job was judged waiting.
test('when a stored envelope leaves the queue without being placed, then the reaper fails its job with NOT_ENQUEUED and leaves queued jobs whose envelope waits', async (t) => {
  const { nc, url, auth, assertWaitingUntouched, submit } = await recordsWithoutMessages(t);
  const lost = await submit('show clock');
  // Its envelope, on its device's shard of the context's jobs; gone as a lost message is.
  const jsm = await jetstreamManager(nc);
  assert.ok(
    await loseMessage(jsm, Streams.jobs, Subjects.jobShards('default'), MessageIds.envelope(lost)),
    'the envelope of the job to lose is stored',
  );
  const ended = await waitForJob(url, lost, auth);
  assert.equal(ended.json.status, 'failed', ended.text);
  assert.equal(ended.json.error_code, 'NOT_ENQUEUED');
  await assertWaitingUntouched();
});

// The check looked at a job once: found waiting, it was never looked at again. An envelope the
// stream loses after that (the loss of run 203, later in the job's wait) left the job `queued`
// for good.
test('when an envelope the reaper found waiting later leaves the queue without being placed, then the reaper fails its job with NOT_ENQUEUED', async (t) => {
  const { nc, url, auth, ghost, assertWaitingUntouched, submit } = await recordsWithoutMessages(t);
  const later = await submit('show clock');
  // A record created after it, failed by a sweep: that sweep or an earlier one checked the job
  // (past its grace first) and found its envelope waiting.
  const swept = await waitForJob(url, await ghost(), auth);
  assert.equal(swept.json.error_code, 'NOT_ENQUEUED', swept.text);
  const still = await http('GET', `${url}/v2/send-command/${later}`, auth);
  assert.equal(still.json.status, 'queued', still.text);
  // Its envelope, found by its message id (the sweep's probes may still be on the subject).
  const jsm = await jetstreamManager(nc);
  assert.ok(
    await loseMessage(jsm, Streams.jobs, Subjects.jobShards('default'), MessageIds.envelope(later)),
    'the envelope of the job to lose is stored',
  );
  const ended = await waitForJob(url, later, auth);
  assert.equal(ended.json.status, 'failed', ended.text);
  assert.equal(ended.json.error_code, 'NOT_ENQUEUED');
  await assertWaitingUntouched();
});

// The check skipped every job of a batch: a later wave's jobs are queued with their envelopes
// held until the wave is released, so "no envelope" is their normal state. A batch job whose
// envelope the stream lost (released or not held at all) stayed `queued` for good, and its
// batch never ended.
test("when the envelope of a batch's job leaves the queue unplaced, then the reaper fails it NOT_ENQUEUED, leaves the job held for a later wave queued, and checks that one once released", async (t) => {
  const { nc, url, auth, ghost, assertWaitingUntouched } = await recordsWithoutMessages(t);
  const created = await http('POST', `${url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'config',
      commands: ['interface Gi0/1', 'description lost'],
      max_parallel: 1,
      devices: [
        { host: '127.0.0.1', port: 2201 },
        { host: '127.0.0.1', port: 2202 },
      ],
    },
  });
  assert.equal(created.status, 202, created.text);
  const [first, held] = (created.json.jobs as { job_id: string }[]).map((j) => j.job_id);
  const jsm = await jetstreamManager(nc);
  const lose = (jobId: string) =>
    loseMessage(jsm, Streams.jobs, Subjects.jobShards('default'), MessageIds.envelope(jobId));
  // A record created after both, failed by a sweep: that sweep or an earlier one looked at both.
  assert.equal((await waitForJob(url, await ghost(), auth)).json.error_code, 'NOT_ENQUEUED');
  for (const id of [first, held]) {
    const still = await http('GET', `${url}/v2/send-command/${id}`, auth);
    assert.equal(still.json.status, 'queued', `${id}: ${still.text}`);
  }
  assert.ok(await lose(first!), "the first wave's envelope is stored");
  const ended = await waitForJob(url, first!, auth);
  assert.equal(ended.json.error_code, 'NOT_ENQUEUED', ended.text);
  // The first wave ended: the next is released (its envelope published, its hold removed).
  const batches = await new Kvm(jetstream(nc)).open(Buckets.batches);
  const holdKey = `${created.json.batch_id}.held.${held}`;
  await waitUntil(async () => (await batches.get(holdKey))?.operation !== 'PUT', 'the release');
  await waitUntil(() => lose(held!), "the released job's envelope, stored and then lost");
  const released = await waitForJob(url, held!, auth);
  assert.equal(released.json.error_code, 'NOT_ENQUEUED', released.text);
  await waitUntil(async () => {
    const b = await http('GET', `${url}/v2/batches/${created.json.batch_id}`, auth);
    return b.json?.status !== 'running' && b.json;
  }, 'the batch to end');
  await assertWaitingUntouched();
});

/**
 * A stack without actor hosts (a job that has its message stays queued), one such job, and
 * `ghost()`: a record as a gateway writes it first, without the envelope it would publish next.
 */
async function recordsWithoutMessages(t: TestContext) {
  const { nats, device, stack, auth } = await deviceStackForTest(
    t,
    { platform: 'cisco_ios', enable: 'svc-demo' },
    { actors: 0, env: { ENQUEUE_GRACE: '1' } },
  );
  const nc = await connectNats(nats.url, 'test');
  t.after(() => nc.close());
  const submit = async (command: string): Promise<string> => {
    const answer = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: { host: '127.0.0.1', port: device.port, commands: [command] },
    });
    assert.equal(answer.status, 202, answer.text);
    return answer.json.job_id as string;
  };
  const waiting = await submit('show version');
  const kv = await new Kvm(jetstream(nc)).open(Buckets.jobs);
  const model = await kv.get(waiting);
  const ghost = async (): Promise<string> => {
    const id = randomUUID();
    const record = {
      ...(JSON.parse(new TextDecoder().decode(model!.value)) as Record<string, unknown>),
      job_id: id,
      enqueued_at: new Date().toISOString(),
    };
    await kv.create(id, new TextEncoder().encode(JSON.stringify(record)));
    return id;
  };
  /** The job that has its message is still queued: the sweeps that failed the others left it. */
  const assertWaitingUntouched = async () => {
    const still = await http('GET', `${stack.url}/v2/send-command/${waiting}`, auth);
    assert.equal(still.json.status, 'queued', still.text);
  };
  return { nc, url: stack.url, auth, ghost, submit, assertWaitingUntouched };
}

test('when a queued record has no message (a gateway died between the two writes), then the reaper fails it with NOT_ENQUEUED and leaves queued jobs that have one', async (t) => {
  const { url, auth, ghost, assertWaitingUntouched } = await recordsWithoutMessages(t);
  const ended = await waitForJob(url, await ghost(), auth);
  assert.equal(ended.json.status, 'failed', ended.text);
  assert.equal(ended.json.error_code, 'NOT_ENQUEUED');
  await assertWaitingUntouched();
});

test("when the reaper's record feed loses its consumer, then it reads on from where it was and still fails a record left without its message", async (t) => {
  const { nc, url, auth, ghost, assertWaitingUntouched } = await recordsWithoutMessages(t);
  // The feed has read through its consumer once the first ghost is failed.
  const first = await waitForJob(url, await ghost(), auth);
  assert.equal(first.json.error_code, 'NOT_ENQUEUED', first.text);
  // Its consumer gone (as with the node holding it lost): every consumer of the records' stream.
  const jsm = await jetstreamManager(nc);
  const stream = `KV_${Buckets.jobs}`;
  let deleted = 0;
  for await (const c of jsm.consumers.list(stream)) {
    if (await jsm.consumers.delete(stream, c.name)) deleted++;
  }
  assert.ok(deleted > 0, 'the feed had a consumer to lose');
  const second = await waitForJob(url, await ghost(), auth);
  assert.equal(second.json.status, 'failed', second.text);
  assert.equal(second.json.error_code, 'NOT_ENQUEUED');
  await assertWaitingUntouched();
});
