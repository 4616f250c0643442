// Rate limits, idempotency and in-flight dedup across two gateway instances on one NATS, under
// concurrent submissions. No actor runs, so accepted jobs stay queued and can be counted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { loadGatewayConfig, startGateway, type RunningGateway } from '@svc/gateway';
import { Sealer } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { generateHostKey, publicKeyOf } from '@svc/test/support';
import { NatsServerProcess, http, silentLogger, testEnv, type HttpAnswer } from '../harness/mod.js';

const DEVICE_LIMIT = 5;
const CALLER_LIMIT = 8;
const ADMIN_SECRET = 'limits-admin-secret-0123456789';

let nats: NatsServerProcess;
const conns: NatsConnection[] = [];
const gateways: RunningGateway[] = [];
let urls: string[];

before(async () => {
  nats = await NatsServerProcess.start();
  const env = testEnv(nats.url, {
    RATE_LIMIT_PER_MINUTE: String(CALLER_LIMIT),
    RATE_LIMIT_DEVICE_PER_MINUTE: String(DEVICE_LIMIT),
    SVC_ADMIN_SECRET: ADMIN_SECRET,
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
  urls = gateways.map((g) => g.httpUrl!);
});

after(async () => {
  for (const g of gateways) await g.stop();
  for (const c of conns) await c.close();
  await nats?.stop();
});

async function counts(): Promise<{ records: number; queued: number }> {
  const nc = conns[0]!;
  const kv = await new Kvm(jetstream(nc)).open('svc-jobs');
  const info = await (await jetstreamManager(nc)).streams.info('SVC_JOBS');
  return { records: (await kv.status()).values, queued: info.state.messages };
}

/** A fresh Basic caller per test, so budgets and keys never leak between tests. */
const caller = (name: string) => ({
  basic: { username: `${name}-${randomUUID().slice(0, 8)}`, password: 'pw-limits' },
});
const body = (host: string, command: string) => ({ host, port: 22, commands: [command] });

/** Waits until the current minute has room for a burst, so a window edge cannot split it. */
async function awayFromWindowEdge(): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 50_000) await new Promise((r) => setTimeout(r, 60_500 - intoMinute));
}

test('when concurrent submits on two instances exceed the per-device limit, then exactly the limit is accepted and 429s eat no budget', async () => {
  await awayFromWindowEdge();
  const who = caller('rl');
  const start = await counts();
  const burst = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      http('POST', `${urls[i % 2]}/v2/send-command`, {
        ...who,
        body: body('10.0.0.1', `show interface ${i}`),
      }),
    ),
  );
  const accepted = burst.filter((a) => a.status === 202);
  const limited = burst.filter((a) => a.status === 429);
  assert.equal(accepted.length, DEVICE_LIMIT, burst.map((a) => a.status).join());
  assert.equal(limited.length, 20 - DEVICE_LIMIT);
  for (const a of limited) {
    assert.ok(Number(a.headers['retry-after']) >= 1 && Number(a.headers['retry-after']) <= 60);
    assert.equal(a.headers['x-ratelimit-limit'], String(DEVICE_LIMIT));
    assert.equal(a.headers['x-ratelimit-remaining'], '0');
    assert.ok(Number(a.headers['x-ratelimit-reset']) >= 1);
    assert.equal(typeof a.json.message, 'string');
  }
  // The 15 refusals took nothing from the caller's budget: 8 - 5 = 3 more fit on other devices.
  const more = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      http('POST', `${urls[i % 2]}/v2/send-command`, {
        ...who,
        body: body(`10.0.1.${i + 1}`, 'show version'),
      }),
    ),
  );
  assert.equal(
    more.filter((a) => a.status === 202).length,
    CALLER_LIMIT - DEVICE_LIMIT,
    more.map((a) => a.status).join(),
  );
  const limitedByCaller = more.find((a) => a.status === 429)!;
  assert.equal(limitedByCaller.headers['x-ratelimit-limit'], String(CALLER_LIMIT));
  const end = await counts();
  assert.equal(end.records - start.records, CALLER_LIMIT, 'one record per accepted job');
  assert.equal(end.queued - start.queued, CALLER_LIMIT, 'one queued message per accepted job');

  // Another caller has its own budget on the same device.
  const other = await http('POST', `${urls[0]}/v2/send-command`, {
    ...caller('rl2'),
    body: body('10.0.0.1', 'show version'),
  });
  assert.equal(other.status, 202);
  // Invalid requests are refused before the budget (422, not 429).
  const invalid = await http('POST', `${urls[0]}/v2/send-command`, {
    ...who,
    body: { host: 'bad host!', commands: ['x'] },
  });
  assert.equal(invalid.status, 422);
});

test('when one device (one pinned host key) is reached at two addresses, then both share its per-device limit', async () => {
  await awayFromWindowEdge();
  // An admin loads the device's key for both addresses (what first contact at each would pin).
  const publicKey = publicKeyOf(generateHostKey());
  for (const host of ['127.0.0.4', '127.0.0.5']) {
    const pin = await http('PUT', `${urls[0]}/v2/host-keys/default/${host}/22`, {
      basic: { username: 'admin', password: ADMIN_SECRET },
      body: { public_key: publicKey },
    });
    assert.equal(pin.status, 200, pin.text);
  }
  const who = caller('one-device');
  const answers: HttpAnswer[] = [];
  for (let i = 0; i < 10; i++) {
    answers.push(
      await http('POST', `${urls[i % 2]}/v2/send-command`, {
        ...who,
        body: body(i % 2 === 0 ? '127.0.0.4' : '127.0.0.5', `show interface ${i}`),
      }),
    );
  }
  const statuses = answers.map((a) => a.status);
  assert.equal(statuses.filter((s) => s === 202).length, DEVICE_LIMIT, statuses.join());
  const refused = answers.find((a) => a.status === 429)!;
  assert.equal(refused.headers['x-ratelimit-limit'], String(DEVICE_LIMIT));
});

test('when one idempotency key is sent concurrently to two instances, then one job exists and every answer names it', async () => {
  await awayFromWindowEdge();
  const who = caller('idem');
  const key = `order-${randomUUID()}`;
  const start = await counts();
  const answers = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      http('POST', `${urls[i % 2]}/v2/send-command`, {
        ...who,
        headers: { 'X-Idempotency-Key': key },
        // Different bodies: the key, not the content, decides.
        body: body(`10.0.2.${i + 1}`, `show run ${i}`),
      }),
    ),
  );
  for (const a of answers) assert.equal(a.status, 202, a.text);
  const jobIds = new Set(answers.map((a) => a.json.job_id));
  assert.equal(jobIds.size, 1, 'every answer carries the original job id');
  assert.equal(answers.filter((a) => a.json.idempotent === false).length, 1);
  assert.equal(answers.filter((a) => a.json.idempotent === true).length, 5);
  const end = await counts();
  assert.equal(end.records - start.records, 1);
  assert.equal(end.queued - start.queued, 1);

  // The same key from another caller is another key.
  const stranger = await http('POST', `${urls[1]}/v2/send-command`, {
    ...caller('idem2'),
    headers: { 'X-Idempotency-Key': key },
    body: body('10.0.2.1', 'show run 0'),
  });
  assert.equal(stranger.status, 202);
  assert.equal(stranger.json.idempotent, false);
  assert.ok(!jobIds.has(stranger.json.job_id));
  // A repeat later still answers the original, without taking budget.
  const repeat = await http('POST', `${urls[1]}/v2/send-command`, {
    ...who,
    headers: { 'X-Idempotency-Key': key },
    body: body('10.0.2.9', 'x'),
  });
  assert.equal(repeat.json.job_id, [...jobIds][0]);
  assert.equal(repeat.json.idempotent, true);
});

test('when identical jobs are submitted concurrently to two instances, then one is queued and the rest are deduplicated', async () => {
  await awayFromWindowEdge();
  const who = caller('dedup');
  const start = await counts();
  const submit = (url: string, auth = who, command = 'show ip bgp summary'): Promise<HttpAnswer> =>
    http('POST', `${url}/v2/send-command`, { ...auth, body: body('10.0.3.1', command) });
  const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => submit(urls[i % 2]!)));
  for (const a of answers) assert.equal(a.status, 202, a.text);
  const ids = new Set(answers.map((a) => a.json.job_id));
  assert.equal(ids.size, 1, 'all answers name the in-flight job');
  assert.equal(answers.filter((a) => a.json.deduplicated === true).length, 4);
  const end = await counts();
  assert.equal(end.records - start.records, 1);
  assert.equal(end.queued - start.queued, 1);
  const jobId = [...ids][0] as string;

  // Scoped to the caller: someone else's identical job is a job of its own.
  const stranger = await submit(urls[0]!, caller('dedup2'));
  assert.equal(stranger.json.deduplicated, false);
  assert.notEqual(stranger.json.job_id, jobId);
  // Commands in another order are another job.
  const reordered = await http('POST', `${urls[0]}/v2/send-command`, {
    ...who,
    body: { host: '10.0.3.1', port: 22, commands: ['b', 'a'] },
  });
  const ordered = await http('POST', `${urls[0]}/v2/send-command`, {
    ...who,
    body: { host: '10.0.3.1', port: 22, commands: ['a', 'b'] },
  });
  assert.notEqual(reordered.json.job_id, ordered.json.job_id);

  // Once the job has ended (cancelled here), the same submission is a new job.
  assert.equal((await http('DELETE', `${urls[1]}/v2/send-command/${jobId}`, who)).status, 204);
  const after = await submit(urls[1]!);
  assert.equal(after.status, 202);
  assert.equal(after.json.deduplicated, false);
  assert.notEqual(after.json.job_id, jobId);
});
