// Issue 23, finding 1: an idempotent retry answered 202 for a job whose attempt then failed.
// Two gateways on one NATS, no actor: the first attempt's envelope publish is held (the jobs
// stream is gone and a plain subscriber takes the message without answering), so the retry on
// the other gateway reads the queued record while the first attempt is still in flight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { loadGatewayConfig, startGateway, type RunningGateway } from '@svc/gateway';
import { Sealer, Streams, Subjects } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { NatsServerProcess, http, silentLogger, testEnv, waitUntil } from '../harness/mod.js';

test('when an idempotent retry is answered 202 while the first attempt fails to publish its envelope, then the job it named still exists and ends failed NOT_ENQUEUED', async (t) => {
  const nats = await NatsServerProcess.start();
  const env = testEnv(nats.url);
  const conns: NatsConnection[] = [];
  const gateways: RunningGateway[] = [];
  t.after(async () => {
    for (const g of gateways) await g.stop().catch(() => undefined);
    for (const c of conns) await c.close().catch(() => undefined);
    await nats.stop();
  });
  for (const name of ['gateway-a', 'gateway-b']) {
    const nc = await connectNats(nats.url, name);
    conns.push(nc);
    gateways.push(
      await startGateway(loadGatewayConfig(env), {
        nc,
        sealer: Sealer.fromSetting(env['SVC_ENCRYPTION_KEY']!),
        log: silentLogger(name),
      }),
    );
  }
  const [a, b] = gateways.map((g) => g.httpUrl!) as [string, string];
  const nc = await connectNats(nats.url, 'test');
  conns.push(nc);
  // Holds every envelope publish: no stream stores it, and this subscriber never answers, so the
  // publish waits for its timeout. Receiving the envelope proves the queued record is written.
  await (await jetstreamManager(nc)).streams.delete(Streams.jobs);
  const envelopes = nc.subscribe(Subjects.jobsAll);
  await nc.flush();
  const envelopeSeen = (async () => {
    for await (const m of envelopes) return m.subject;
    return null;
  })();

  const auth = { basic: { username: `idem-${randomUUID().slice(0, 8)}`, password: 'pw-idem' } };
  const submit = (url: string) =>
    http('POST', `${url}/v2/send-command`, {
      ...auth,
      headers: { 'x-idempotency-key': 'race-key' },
      body: { host: '127.0.0.1', port: 22, commands: ['show version'] },
    });
  const first = submit(a);
  assert.ok(await envelopeSeen, 'the first attempt published its envelope');

  const retry = await submit(b);
  assert.equal(retry.status, 202, retry.text);
  assert.equal(retry.json.idempotent, true, retry.text);
  const jobId = String(retry.json.job_id);

  const refused = await first;
  assert.equal(refused.status, 503, refused.text);

  // The refused attempt goes on until its publish times out, then settles its record: the
  // signal is the record leaving `queued` (gone, or ended).
  // A 202 means the job exists and will end: each gateway reads it, ended with a precise code.
  for (const url of [a, b]) {
    const read = await waitUntil(async () => {
      const r = await http('GET', `${url}/v2/send-command/${jobId}`, auth);
      return r.status === 503 || r.json?.status === 'queued' ? null : r;
    }, `the first attempt to settle job ${jobId}`);
    assert.equal(read.status, 200, `the job a 202 named has a record: ${read.text}`);
    assert.equal(read.json.status, 'failed', read.text);
    assert.equal(read.json.error_code, 'NOT_ENQUEUED', read.text);
  }
});
