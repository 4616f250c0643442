// Batch admission: the rate budgets and the queue capacity a batch needs are judged for the
// batch as a whole, so a refused batch queues nothing and takes nothing, and its message names
// the device where the budget or the queue runs out. No actor runs: accepted jobs stay queued.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectNats } from '@svc/nats';
import { generateHostKey, publicKeyOf } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  type HttpOptions,
  type InProcessStack,
} from '../harness/mod.js';

const DEVICE_LIMIT = 2;
const ADMIN_SECRET = 'batches-admin-secret-0123456789';
const CALLER_LIMIT = 6;
const MAX_QUEUE_DEPTH = 3;

let nats: NatsServerProcess;
let nc: NatsConnection;
/** Rate limits on, no queue limit. */
let limited: InProcessStack;
/** MAX_QUEUE_DEPTH on its own context-sharing stack, no rate limits. */
let capped: InProcessStack;

before(async () => {
  nats = await NatsServerProcess.start();
  nc = await connectNats(nats.url, 'batches-admission');
  limited = await startInProcessStack(nats.url, {
    actors: 0,
    env: {
      RATE_LIMIT_PER_MINUTE: String(CALLER_LIMIT),
      RATE_LIMIT_DEVICE_PER_MINUTE: String(DEVICE_LIMIT),
      SVC_ADMIN_SECRET: ADMIN_SECRET,
    },
  });
});

after(async () => {
  await capped?.stop();
  await limited?.stop();
  await nc?.close();
  await nats?.stop();
});

async function counts(): Promise<{ records: number; queued: number }> {
  const kv = await new Kvm(jetstream(nc)).open('svc-jobs');
  const info = await (await jetstreamManager(nc)).streams.info('SVC_JOBS');
  return { records: (await kv.status()).values, queued: info.state.messages };
}

/** A fresh Basic caller per test, so budgets never leak between tests. */
const caller = (name: string): HttpOptions => ({
  basic: { username: `${name}-${randomUUID().slice(0, 8)}`, password: 'pw-batch' },
});

const batch = (devices: Record<string, unknown>[]) => ({
  kind: 'command',
  commands: ['show version'],
  devices,
});

/** Waits until the current minute has room for the test, so a window edge cannot split it. */
async function awayFromWindowEdge(): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 45_000) await new Promise((r) => setTimeout(r, 60_500 - intoMinute));
}

test('when a batch needs more than the caller budget left, then it is 429 naming the device where the budget runs out, and it queues and takes nothing', async () => {
  await awayFromWindowEdge();
  const who = caller('over');
  const start = await counts();
  const hosts = Array.from({ length: CALLER_LIMIT + 2 }, (_, i) => ({ host: `10.1.0.${i + 1}` }));
  const refused = await http('POST', `${limited.url}/v2/batches`, { ...who, body: batch(hosts) });
  assert.equal(refused.status, 429, refused.text);
  assert.match(
    refused.json.message,
    new RegExp(`^devices\\[${CALLER_LIMIT}\\]: rate limit of ${CALLER_LIMIT} per minute`),
  );
  assert.equal(refused.headers['x-ratelimit-limit'], String(CALLER_LIMIT));
  assert.equal(refused.headers['x-ratelimit-remaining'], '0');
  assert.ok(Number(refused.headers['retry-after']) >= 1);
  assert.ok(Number(refused.headers['x-ratelimit-reset']) >= 1);
  assert.deepEqual(await counts(), start, 'a refused batch leaves no record and no message');

  // The whole budget is still there: a batch of exactly the limit fits, one more job does not.
  const fits = await http('POST', `${limited.url}/v2/batches`, {
    ...who,
    body: batch(hosts.slice(0, CALLER_LIMIT)),
  });
  assert.equal(fits.status, 202, fits.text);
  assert.deepEqual(
    fits.json.jobs.map((j: { host: string }) => j.host),
    hosts.slice(0, CALLER_LIMIT).map((h) => h.host),
  );
  const single = await http('POST', `${limited.url}/v2/send-command`, {
    ...who,
    body: { host: '10.1.9.9', commands: ['show clock'] },
  });
  assert.equal(single.status, 429, single.text);
});

test('when a batch holds a device more often than the per-device budget, then it is 429 naming that entry, and the budgets are untouched', async () => {
  await awayFromWindowEdge();
  const who = caller('dev');
  const start = await counts();
  // One device three times (distinct platforms, so no entry is a duplicate of another).
  const a = (platform: string) => ({ host: '10.2.0.1', platform });
  const refused = await http('POST', `${limited.url}/v2/batches`, {
    ...who,
    body: batch([a('cisco_ios'), { host: '10.2.0.2' }, a('arista_eos'), a('cisco_nxos')]),
  });
  assert.equal(refused.status, 429, refused.text);
  assert.match(refused.json.message, /^devices\[3\]: rate limit of 2 per minute/);
  assert.equal(refused.headers['x-ratelimit-limit'], String(DEVICE_LIMIT));
  assert.equal(refused.headers['x-ratelimit-remaining'], '0');
  assert.deepEqual(await counts(), start);

  const fits = await http('POST', `${limited.url}/v2/batches`, {
    ...who,
    body: batch([a('cisco_ios'), a('arista_eos')]),
  });
  assert.equal(fits.status, 202, fits.text);
  const third = await http('POST', `${limited.url}/v2/send-command`, {
    ...who,
    body: { host: '10.2.0.1', commands: ['show clock'] },
  });
  assert.equal(third.status, 429, third.text);
  assert.equal(third.headers['x-ratelimit-limit'], String(DEVICE_LIMIT));
});

test('when a batch holds one device (one pinned host key) at two addresses more often than the per-device budget, then it is 429', async () => {
  await awayFromWindowEdge();
  // An admin loads the device's key for both addresses (what first contact at each would pin).
  const publicKey = publicKeyOf(generateHostKey());
  for (const host of ['127.0.0.6', '127.0.0.7']) {
    const pin = await http('PUT', `${limited.url}/v2/host-keys/default/${host}/22`, {
      basic: { username: 'admin', password: ADMIN_SECRET },
      body: { public_key: publicKey },
    });
    assert.equal(pin.status, 200, pin.text);
  }
  const start = await counts();
  const refused = await http('POST', `${limited.url}/v2/batches`, {
    ...caller('one-device'),
    body: batch([
      { host: '127.0.0.6' },
      { host: '127.0.0.7' },
      { host: '127.0.0.6', platform: 'arista_eos' },
    ]),
  });
  assert.equal(refused.status, 429, refused.text);
  assert.equal(refused.headers['x-ratelimit-limit'], String(DEVICE_LIMIT));
  assert.deepEqual(await counts(), start);
});

test('when several budgets of a batch run out, then the refusal is the one at the earliest entry, as admission in device order would meet it', async () => {
  await awayFromWindowEdge();
  const start = await counts();
  const at = (host: string, platform: string) => ({ host, platform });
  const p = ['cisco_ios', 'arista_eos', 'cisco_nxos'];
  // Device 10.6.0.1 runs out at entry 5, device 10.6.0.2 at entry 4.
  const twoDevices = await http('POST', `${limited.url}/v2/batches`, {
    ...caller('first'),
    body: batch([
      at('10.6.0.1', p[0]!),
      at('10.6.0.2', p[0]!),
      at('10.6.0.2', p[1]!),
      at('10.6.0.1', p[1]!),
      at('10.6.0.2', p[2]!),
      at('10.6.0.1', p[2]!),
    ]),
  });
  assert.equal(twoDevices.status, 429, twoDevices.text);
  assert.match(twoDevices.json.message, /^devices\[4\]: /);
  assert.equal(twoDevices.headers['x-ratelimit-limit'], String(DEVICE_LIMIT));
  // The caller budget runs out at entry 6, device 10.6.1.1 only at entry 10.
  const callerFirst = await http('POST', `${limited.url}/v2/batches`, {
    ...caller('first'),
    body: batch([
      ...Array.from({ length: 8 }, (_, i) => ({ host: `10.6.2.${i + 1}` })),
      at('10.6.1.1', p[0]!),
      at('10.6.1.1', p[1]!),
      at('10.6.1.1', p[2]!),
    ]),
  });
  assert.equal(callerFirst.status, 429, callerFirst.text);
  assert.match(callerFirst.json.message, /^devices\[6\]: /);
  assert.equal(callerFirst.headers['x-ratelimit-limit'], String(CALLER_LIMIT));
  assert.deepEqual(await counts(), start);
});

test('when batch entries duplicate each other or an in-flight job, then they answer that job and only new jobs take budget', async () => {
  await awayFromWindowEdge();
  const who = caller('dup');
  const single = await http('POST', `${limited.url}/v2/send-command`, {
    ...who,
    body: { host: '10.3.0.1', commands: ['show version'] },
  });
  assert.equal(single.status, 202, single.text);
  const created = await http('POST', `${limited.url}/v2/batches`, {
    ...who,
    body: batch([{ host: '10.3.0.1' }, { host: '10.3.0.2' }, { host: '10.3.0.2' }]),
  });
  assert.equal(created.status, 202, created.text);
  const ids = created.json.jobs.map((j: { job_id: string }) => j.job_id);
  assert.equal(ids[0], single.json.job_id);
  assert.equal(ids[1], ids[2]);
  assert.notEqual(ids[1], ids[0]);
  // 1 single + 1 new batch job taken: 4 of the 6 left.
  const rest = await http('POST', `${limited.url}/v2/batches`, {
    ...who,
    body: batch(Array.from({ length: 4 }, (_, i) => ({ host: `10.3.1.${i + 1}` }))),
  });
  assert.equal(rest.status, 202, rest.text);
  const over = await http('POST', `${limited.url}/v2/send-command`, {
    ...who,
    body: { host: '10.3.2.1', commands: ['show version'] },
  });
  assert.equal(over.status, 429, over.text);
});

test('when 300 devices are admitted at once, then the answer, the record and the jobs page keep the device order', async () => {
  const who = caller('order');
  const hosts = Array.from({ length: 300 }, (_, i) => ({
    host: `10.4.${Math.floor(i / 250)}.${(i % 250) + 1}`,
    port: 2000 + i,
  }));
  // The caller budget of this stack is small; another stack with no limits would do as well,
  // but the order holds whatever the limits: use a stack of its own without them.
  const open = await startInProcessStack(nats.url, { actors: 0 });
  try {
    const created = await http('POST', `${open.url}/v2/batches`, { ...who, body: batch(hosts) });
    assert.equal(created.status, 202, created.text);
    assert.deepEqual(
      created.json.jobs.map((j: { host: string; port: number }) => `${j.host}:${j.port}`),
      hosts.map((h) => `${h.host}:${h.port}`),
    );
    assert.equal(new Set(created.json.jobs.map((j: { job_id: string }) => j.job_id)).size, 300);
    const page = await http(
      'GET',
      `${open.url}/v2/batches/${created.json.batch_id}/jobs?page=2&per_page=100`,
      who,
    );
    assert.equal(page.status, 200, page.text);
    assert.deepEqual(
      page.json.jobs.map((j: { job_id: string }) => j.job_id),
      created.json.jobs.slice(100, 200).map((j: { job_id: string }) => j.job_id),
    );
  } finally {
    await open.stop();
  }
});

test('when a batch does not fit in the queue left under MAX_QUEUE_DEPTH, then it is 503 naming the device where the queue is full, and nothing is queued', async () => {
  capped = await startInProcessStack(nats.url, {
    actors: 0,
    env: { MAX_QUEUE_DEPTH: String(MAX_QUEUE_DEPTH), SVC_CONTEXTS: 'default,capped' },
  });
  const who = caller('cap');
  const start = await counts();
  const hosts = Array.from({ length: MAX_QUEUE_DEPTH + 2 }, (_, i) => ({
    host: `10.5.0.${i + 1}`,
  }));
  const refused = await http('POST', `${capped.url}/v2/batches`, {
    ...who,
    body: { ...batch(hosts), context: 'capped' },
  });
  assert.equal(refused.status, 503, refused.text);
  assert.match(refused.json.message, /^devices\[3\]: queue of context capped is full/);
  assert.equal(refused.headers['retry-after'], '10');
  assert.deepEqual(await counts(), start, 'a refused batch leaves no record and no message');

  const fits = await http('POST', `${capped.url}/v2/batches`, {
    ...who,
    body: { ...batch(hosts.slice(0, MAX_QUEUE_DEPTH)), context: 'capped' },
  });
  assert.equal(fits.status, 202, fits.text);
});
