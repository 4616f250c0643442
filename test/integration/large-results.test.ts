import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { Buckets, ObjectBuckets, decodeJson, type FailedJob, type JobRecord } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { loadPlatform, repeatedOutput, startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

/**
 * Results larger than one NATS message (max_payload, 1 MiB by default) live in the `svc-results`
 * object store; the job record points at them and every read path answers the whole output.
 */

const CAP = 4 * 1024 * 1024;
/** A 3 MB session on a shared 2-core machine takes a while; this is a hang guard, not a timing. */
const WAIT_MS = 180_000;
let nats: NatsServerProcess;
let stack: InProcessStack;
let device: SimulatedDevice;
let nc: NatsConnection;
let auth: { basic: { username: string; password: string } };
/** Largest results kept inside the record: the actor's threshold. */
let inlineLimit: number;
const bigLine = loadPlatform('cisco_ios').commands.find((e) => e.repeatTo !== undefined)!
  .output as string;

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', hostname: 'R1', enable: 'svc-demo' });
  auth = { basic: { username: device.username, password: device.password } };
  stack = await startInProcessStack(nats.url, { env: { SVC_MAX_RESULT_BYTES: String(CAP) } });
  await waitHealthy(stack.url);
  nc = await connectNats(nats.url, 'large-results-test');
  inlineLimit = nc.info!.max_payload - 32 * 1024;
});

after(async () => {
  await nc?.close();
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

const big = (chars: number) => `show tech-support bytes ${chars}`;
/** What the device prints for `big(chars)`, as the driver hands it back. */
const expected = (chars: number) => repeatedOutput(bigLine.replaceAll('{hostname}', 'R1'), chars);

async function submit(path: string, commands: string[]): Promise<string> {
  const res = await http('POST', `${stack.url}${path}`, {
    ...auth,
    body: {
      host: '127.0.0.1',
      port: device.port,
      platform: 'cisco_ios',
      enable: device.enable,
      commands,
    },
  });
  assert.equal(res.status, 202, res.text);
  return res.json.job_id as string;
}

async function storedRecord(jobId: string): Promise<JobRecord> {
  const kv = await new Kvm(nc).open(Buckets.jobs);
  return decodeJson<JobRecord>((await kv.get(jobId))!.value);
}

test('when a show command prints 3 MB, then the job finishes and every GET answers exactly the output', async () => {
  const chars = 3_000_000;
  const jobId = await submit('/v2/send-command', [big(chars)]);
  const done = await waitForJob(stack.url, jobId, auth, WAIT_MS);
  assert.equal(done.json.status, 'finished', done.text.slice(0, 500));
  const output = done.json.results[big(chars)] as string;
  assert.equal(output.length, expected(chars).length);
  assert.equal(output, expected(chars));

  // The record holds a pointer, not the text.
  const record = await storedRecord(jobId);
  assert.equal(record.results, null);
  assert.equal(record.results_ref?.bucket, ObjectBuckets.results);
  assert.equal(record.results_ref?.name, jobId);
  assert.ok(record.results_ref.size > chars);
  assert.match(record.results_ref.digest, /^SHA-256=/);

  for (const path of [`/v2/jobs/${jobId}`, `/v1/send_command/${jobId}`]) {
    const read = await http('GET', `${stack.url}${path}`, auth);
    assert.equal(read.status, 200, path);
    assert.equal(read.json.results[big(chars)], expected(chars), path);
  }
});

test('when results are just above the inline limit, then they are stored in two chunks and read back exactly', async () => {
  const chars = inlineLimit + 1000;
  const jobId = await submit('/v2/send-command', [big(chars)]);
  const done = await waitForJob(stack.url, jobId, auth, WAIT_MS);
  assert.equal(done.json.status, 'finished', done.text.slice(0, 500));
  assert.equal(done.json.results[big(chars)], expected(chars));
  const os = await new Objm(nc).open(ObjectBuckets.results);
  const info = await os.info(jobId);
  assert.equal(info?.chunks, 2);
  assert.equal((await storedRecord(jobId)).results_ref?.size, info?.size);
});

test('when results fit the inline limit, then the record keeps them and no object is written', async () => {
  // JSON escapes each newline (one every ~100 characters): stay well below the limit.
  const chars = inlineLimit - 40_000;
  const jobId = await submit('/v2/send-command', [big(chars)]);
  const done = await waitForJob(stack.url, jobId, auth, WAIT_MS);
  assert.equal(done.json.status, 'finished', done.text.slice(0, 500));
  const record = await storedRecord(jobId);
  assert.equal(record.results_ref, undefined);
  assert.equal(record.results?.[big(chars)], expected(chars));
  const os = await new Objm(nc).open(ObjectBuckets.results);
  assert.equal(await os.info(jobId), null);
});

test('when a structured job prints 3 MB with no template, then its GET answers the raw output', async () => {
  const chars = 3_000_000;
  const jobId = await submit('/v2/send-command-structured', [big(chars)]);
  await waitForJob(stack.url, jobId, auth, WAIT_MS);
  const done = await http('GET', `${stack.url}/v2/send-command-structured/${jobId}`, auth);
  assert.equal(done.status, 200);
  assert.equal(done.json.status, 'finished', done.text.slice(0, 500));
  assert.equal(done.json.results[big(chars)], expected(chars));
});

test('when a batch job prints 3 MB, then the batch jobs page carries the whole output', async () => {
  const chars = 3_000_000;
  const created = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'command',
      commands: [big(chars)],
      enable: device.enable,
      devices: [{ host: '127.0.0.1', port: device.port, platform: 'cisco_ios' }],
    },
  });
  assert.equal(created.status, 202, created.text);
  const jobId = created.json.jobs[0].job_id as string;
  await waitForJob(stack.url, jobId, auth, WAIT_MS);
  const page = await http('GET', `${stack.url}/v2/batches/${created.json.batch_id}/jobs`, auth);
  assert.equal(page.status, 200, page.text.slice(0, 500));
  assert.equal(page.json.jobs[0].status, 'finished');
  assert.equal(page.json.jobs[0].results[big(chars)], expected(chars));
});

test('when a show job with 3 MB of output fails on a rejected command, then the outputs are kept and the failed registry entry stays small', async () => {
  const chars = 3_000_000;
  const jobId = await submit('/v2/send-command', [big(chars), 'show bogus']);
  const done = await waitForJob(stack.url, jobId, auth, WAIT_MS);
  assert.equal(done.json.status, 'failed', done.text.slice(0, 500));
  assert.equal(done.json.error_code, 'COMMAND_ERROR');
  assert.equal(done.json.results[big(chars)], expected(chars));
  assert.match(done.json.results['show bogus'], /% Invalid input/);
  const failed = await new Kvm(nc).open(Buckets.failed);
  const entry = (await failed.get(jobId))!;
  assert.ok(entry.value.length < inlineLimit, `registry entry of ${entry.value.length} bytes`);
  const archived = decodeJson<FailedJob>(entry.value).record!;
  assert.equal(archived.results, null);
  assert.equal(archived.results_ref?.name, jobId);
});

test('when results exceed SVC_MAX_RESULT_BYTES, then the job fails RESULT_TOO_LARGE naming the sizes', async () => {
  const chars = CAP + 1000;
  const jobId = await submit('/v2/send-command', [big(chars)]);
  const done = await waitForJob(stack.url, jobId, auth, WAIT_MS);
  assert.equal(done.json.status, 'failed', done.text.slice(0, 500));
  assert.equal(done.json.error_code, 'RESULT_TOO_LARGE');
  assert.equal(done.json.error_retryable, false);
  assert.match(done.json.error, new RegExp(`exceed SVC_MAX_RESULT_BYTES \\(${CAP} bytes\\)`));
  assert.equal(done.json.results, null);
  const os = await new Objm(nc).open(ObjectBuckets.results);
  assert.equal(await os.info(jobId), null);
});

test('when a job with 3 MB of results is streamed after it ended, then the result event carries the whole output', async () => {
  const chars = 3_000_000;
  const jobId = await submit('/v2/send-command', [big(chars)]);
  await waitForJob(stack.url, jobId, auth, WAIT_MS);
  const basic = Buffer.from(`${auth.basic.username}:${auth.basic.password}`).toString('base64');
  const res = await fetch(`${stack.url}/v2/send-command/${jobId}/stream`, {
    headers: { authorization: `Basic ${basic}`, accept: 'text/event-stream' },
  });
  assert.equal(res.status, 200);
  // The stream of an ended job ends after its result event.
  const body = await res.text();
  const block = body.split('\n\n').find((b) => /^event: result$/m.test(b));
  assert.ok(block, body.slice(0, 500));
  const data = JSON.parse(/^data: (.*)$/m.exec(block)![1]!) as {
    status: string;
    results: Record<string, string>;
  };
  assert.equal(data.status, 'finished');
  assert.equal(data.results[big(chars)], expected(chars));
});

test('when a stored results object is gone (expired), then GET answers the job with results null', async () => {
  const chars = 1_500_000;
  const jobId = await submit('/v2/send-command', [big(chars)]);
  const done = await waitForJob(stack.url, jobId, auth, WAIT_MS);
  assert.equal(done.json.status, 'finished', done.text.slice(0, 500));
  const os = await new Objm(nc).open(ObjectBuckets.results);
  assert.equal((await os.delete(jobId)).success, true);
  const read = await http('GET', `${stack.url}/v2/jobs/${jobId}`, auth);
  assert.equal(read.status, 200, read.text.slice(0, 500));
  assert.equal(read.json.status, 'finished');
  assert.equal(read.json.results, null);
});
