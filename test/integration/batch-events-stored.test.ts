// A batch's stream (`GET /v2/batches/{id}/stream`) replays the batch's events from SVC_EVENTS.
// A job's batch event was published without waiting for the stream to store it: one published
// while no stream took its subject (a cluster electing the stream's leader after a node loss)
// was dropped, and the stream never showed that device's change, only the batch's end. Here the
// stream is made to take no batch subject while the jobs are cancelled (what an election looks
// like to a publisher: no responder), then given it back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventSource } from 'eventsource';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Streams, Subjects } from '@svc/proto';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitHealthy,
  waitUntil,
} from '../harness/mod.js';

test('when a batch job event is published while its stream takes no writes, then it is stored once the stream does, before the batch end', async (t) => {
  const nats = await NatsServerProcess.start();
  const stack = await startInProcessStack(nats.url, {
    // Jobs of context `idle` are never run (no actor host serves it): they stay queued until
    // the batch is cancelled.
    env: { SVC_CONTEXTS: 'default,idle', WORKER_CONTEXTS: 'default', SSE_RETRY: '0.2' },
  });
  const nc = await connect({ servers: nats.url });
  let es: EventSource | null = null;
  t.after(async () => {
    es?.close();
    await nc.close();
    await stack.stop();
    await nats.stop();
  });
  await waitHealthy(stack.url, 30_000);
  const me = { basic: { username: 'operator', password: 'device-secret' } };
  const created = await http('POST', `${stack.url}/v2/batches`, {
    ...me,
    body: {
      kind: 'command',
      context: 'idle',
      platform: 'cisco_ios',
      commands: ['show version'],
      devices: [
        { host: '127.0.0.1', port: 2201 },
        { host: '127.0.0.1', port: 2202 },
      ],
    },
  });
  assert.equal(created.status, 202, created.text);
  const batchId = created.json.batch_id as string;

  const events: { event: string; status?: string; job_id?: string }[] = [];
  const authorization =
    'Basic ' + Buffer.from(`${me.basic.username}:${me.basic.password}`).toString('base64');
  es = new EventSource(`${stack.url}/v2/batches/${batchId}/stream`, {
    fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, authorization } }),
  });
  for (const name of ['job', 'summary']) {
    es.addEventListener(name, (e) => {
      const data = JSON.parse(e.data) as { status?: string; job_id?: string };
      events.push({ event: name, status: data.status, job_id: data.job_id });
    });
  }
  await waitUntil(() => events.length === 2, 'the two queued events');

  // The stream stops taking the batch subjects: a publish finds no responder, as in an election.
  const jsm = await jetstreamManager(nc);
  const config = (await jsm.streams.info(Streams.events)).config;
  await jsm.streams.update(Streams.events, { ...config, subjects: ['svc.events.nobody'] });
  // Every publish of the batch's events, stored or not, as core subscribers see them.
  const published: string[] = [];
  const sub = nc.subscribe(Subjects.batchEvents(batchId));
  void (async () => {
    for await (const m of sub) published.push(m.subject);
  })();
  await nc.flush();

  const cancelled = http('DELETE', `${stack.url}/v2/batches/${batchId}`, me);
  // Both jobs' `cancelled` events went out while nothing stored them.
  const cancelledSubject = Subjects.batchJobEvent(batchId, 'cancelled');
  await waitUntil(
    () => published.filter((s) => s === cancelledSubject).length >= 2,
    'the two cancelled events published',
  );
  await jsm.streams.update(Streams.events, config);
  const answer = await cancelled;
  assert.equal(answer.status, 200, answer.text);

  await waitUntil(
    () => events.some((e) => e.event === 'summary'),
    `the summary (events so far: ${JSON.stringify(events)})`,
    { timeoutMs: 60_000, everyMs: 100 },
  );
  sub.unsubscribe();
  // Every device's change, then the end: none lost to the outage, none twice.
  const ids = (created.json.jobs as { job_id: string }[]).map((j) => j.job_id).sort();
  const cancelledIds = events
    .filter((e) => e.event === 'job' && e.status === 'cancelled')
    .map((e) => e.job_id);
  assert.deepEqual(cancelledIds.sort(), ids, JSON.stringify(events));
  assert.deepEqual(
    events.map((e) => e.event),
    ['job', 'job', 'job', 'job', 'summary'],
    JSON.stringify(events),
  );
});
