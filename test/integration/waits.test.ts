// Every wait says why (issue 24, finding 3): a service started while NATS is unreachable says
// what it waits for (the NATS URL, never a credential); the gateway answers /healthcheck 503
// naming NATS until it is up. Real processes, real nats-server, real HTTP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  NatsServerProcess,
  ServiceProcess,
  freePort,
  http,
  testEnv,
  waitUntil,
} from '../harness/mod.js';

const NATS_SECRET = 'Nats-Pw-never-in-a-line';

test('when the gateway starts while NATS is unreachable, then it says it waits for NATS, answers /healthcheck 503 naming it, and serves once NATS is up', async (t) => {
  const port = await freePort();
  const natsUrl = `nats://127.0.0.1:${port}`;
  const gateway = ServiceProcess.start(
    'gateway',
    testEnv(natsUrl, { LOG_LEVEL: 'INFO', NATS_USER: 'gateway', NATS_PASSWORD: NATS_SECRET }),
  );
  let nats: NatsServerProcess | null = null;
  t.after(async () => {
    await gateway.kill('SIGTERM');
    await nats?.stop();
  });
  const waiting = JSON.parse(await gateway.waitFor(/"message":"waiting for NATS at/)) as Record<
    string,
    unknown
  >;
  assert.equal(waiting['nats_url'], natsUrl);
  assert.equal(waiting['level'], 'WARNING');
  const line = JSON.parse(await gateway.waitFor(/answering 503 until NATS is up/)) as {
    http: string;
  };
  const early = await http('GET', `${line.http}/healthcheck`);
  assert.equal(early.status, 503, early.text);
  assert.equal(early.json.status, 'degraded');
  assert.equal(early.json.components.redis.status, 'unhealthy');
  assert.match(early.json.message, new RegExp(`waiting for NATS at ${natsUrl}`));
  const submit = await http('POST', `${line.http}/v2/send-command`, { body: {} });
  assert.equal(submit.status, 503);
  assert.match(submit.json.message, /NATS/);

  nats = await NatsServerProcess.start({
    port,
    extraConfig: `authorization { users: [ { user: gateway, password: "${NATS_SECRET}" } ] }`,
  });
  const url = await gateway.httpUrl();
  assert.equal(url, line.http, 'the same listener address once NATS is up');
  await waitUntil(async () => {
    const h = await http('GET', `${url}/healthcheck`);
    return h.json?.components?.redis?.status === 'healthy';
  }, 'a healthy store on /healthcheck');
  assert.ok(gateway.output.some((l) => /connected to NATS/.test(l)));
  assert.ok(!gateway.output.some((l) => l.includes(NATS_SECRET)), 'no NATS password logged');
});

test('when the reaper starts while NATS is unreachable, then it says which NATS it waits for, without the credentials of the URL', async (t) => {
  const port = await freePort();
  const reaper = ServiceProcess.start(
    'reaper',
    testEnv(`nats://reaper:${NATS_SECRET}@127.0.0.1:${port}`, { LOG_LEVEL: 'INFO' }),
  );
  t.after(() => reaper.kill('SIGTERM'));
  const waiting = JSON.parse(await reaper.waitFor(/"message":"waiting for NATS at/)) as Record<
    string,
    unknown
  >;
  assert.equal(waiting['nats_url'], `nats://127.0.0.1:${port}`);
  assert.ok(typeof waiting['repeat_seconds'] === 'number' && waiting['repeat_seconds'] <= 30);
  assert.ok(!reaper.output.some((l) => l.includes(NATS_SECRET)), 'no NATS password logged');
});
