// Issue 26 (review leftover): a submission answered 503 at STORE_TIMEOUT while its store work goes
// on. When that work ends, its outcome must not be sent a second time (Fastify then logs "Reply
// was already sent"). The envelope publish is held by a plain subscriber (the jobs stream is
// gone) and answered by the test once the client has its 503.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { Streams, Subjects } from '@svc/proto';
import { connectNats } from '@svc/nats';
import {
  captureLogs,
  deviceStackForTest,
  http,
  waitForJob,
  waitUntil,
  type HttpOptions,
} from '../harness/mod.js';

interface HeldSubmission {
  /** Every log line of the stack. */
  lines: Record<string, unknown>[];
  /** A connection of the test's own. */
  nc: NatsConnection;
  auth: HttpOptions;
  url: string;
  jobId: string;
  /** The envelope publish, not answered yet. */
  held: Msg;
  /** Puts the jobs stream back. */
  restoreStream: () => Promise<void>;
}

/** A submission answered 503 at STORE_TIMEOUT while its envelope publish waits for an answer. */
async function heldSubmission(t: TestContext): Promise<HeldSubmission> {
  const { sink, records: lines } = captureLogs();
  const { nats, device, auth, stack } = await deviceStackForTest(
    t,
    { platform: 'cisco_ios', enable: 'svc-demo' },
    { env: { STORE_TIMEOUT: '1' }, logSink: sink },
  );
  const nc = await connectNats(nats.url, 'test');
  t.after(() => nc.close());

  // No stream takes the envelope and this subscriber answers only when told: the publish waits.
  const jsm = await jetstreamManager(nc);
  const { config: jobsStream } = await jsm.streams.info(Streams.jobs);
  await jsm.streams.delete(Streams.jobs);
  const envelopes = nc.subscribe(Subjects.jobsAll, { max: 1 });
  await nc.flush();
  const held = (async () => {
    for await (const m of envelopes) return m;
    throw new Error('no envelope was published');
  })();

  const jobId = randomUUID();
  const submitted = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    headers: { 'x-request-id': jobId },
    body: { host: '127.0.0.1', port: device.port, commands: ['show version'] },
  });
  assert.equal(submitted.status, 503, submitted.text);
  assert.equal(submitted.headers['retry-after'], '10');
  assert.deepEqual(submitted.json, {
    message: 'the job store did not answer in time; retry later',
  });
  return {
    lines,
    nc,
    auth,
    url: stack.url,
    jobId,
    held: await held,
    restoreStream: async () => {
      await jsm.streams.add(jobsStream);
    },
  };
}

/** The lines in which Fastify reports a second answer to one request. */
function answeredTwice(lines: Record<string, unknown>[]): Record<string, unknown>[] {
  return lines.filter((l) => String(l['message']).includes('Reply was already sent'));
}

test('when a submission answered 503 at STORE_TIMEOUT has its envelope stored late, then its job runs and the request is not answered again', async (t) => {
  const { lines, nc, auth, url, jobId, held, restoreStream } = await heldSubmission(t);
  // The held publish reaches the restored stream and gets the stream's own acknowledgement.
  await restoreStream();
  const ack = await nc.request(held.subject, held.data, {
    timeout: 5000,
    ...(held.headers ? { headers: held.headers } : {}),
  });
  held.respond(ack.data);

  // The late work completed: the job it queued ran on the device.
  const done = await waitForJob(url, jobId, auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.deepEqual(answeredTwice(lines), []);
});

test('when a submission answered 503 at STORE_TIMEOUT then fails to store its envelope, then its job ends NOT_ENQUEUED and the request is not answered again', async (t) => {
  const { lines, auth, url, jobId, held } = await heldSubmission(t);
  held.respond(
    JSON.stringify({ error: { code: 503, err_code: 10008, description: 'stream offline' } }),
  );

  // The late failure completed: the store error is logged once the job is settled (failed, as a
  // dedup hit may have named it).
  await waitUntil(
    () => lines.some((l) => l['message'] === 'store request failed'),
    'the late store failure to be logged',
  );
  const read = await http('GET', `${url}/v2/send-command/${jobId}`, auth);
  assert.equal(read.json.status, 'failed', read.text);
  assert.equal(read.json.error_code, 'NOT_ENQUEUED', read.text);
  assert.deepEqual(answeredTwice(lines), []);
});
