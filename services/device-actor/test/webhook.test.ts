import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Sealer, type JobRecord } from '@svc/proto';
import { createLogger } from '@svc/telemetry';
import { loadDeviceActorConfig } from '../src/config.js';
import { createWebhookNotifier } from '../src/actor-host/webhook.js';

let hits = 0;
const receiver = createServer((req, res) => {
  hits++;
  req.resume();
  res.writeHead(204).end();
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const address = receiver.address();
const port = typeof address === 'object' && address ? address.port : 0;
after(() => receiver.close());

const log = createLogger('device-actor', 'ERROR');
const sealer = new Sealer([Buffer.alloc(32, 7)]);
const secrets = { username: 'u', password: 'p', enable: null, webhook_secret: null };
const record = (webhook_url: string) =>
  ({
    job_id: 'j1',
    status: 'finished',
    enqueued_at: new Date().toISOString(),
    ended_at: new Date().toISOString(),
    spec: { webhook_url },
  }) as unknown as JobRecord;

test('when a webhook names a host that resolves to loopback and no setting allows it, then nothing is sent', async () => {
  const notify = createWebhookNotifier(
    loadDeviceActorConfig({ WEBHOOK_ALLOW_HTTP: 'true' }),
    log,
    sealer,
  );
  assert.equal(await notify(record(`http://localhost:${port}/hook`), secrets), 'refused');
  assert.equal(await notify(record(`http://127.0.0.1:${port}/hook`), secrets), 'refused');
  assert.equal(hits, 0);
});

test('when WEBHOOK_ALLOW_NETWORKS allows loopback, then the same webhook is delivered', async () => {
  const notify = createWebhookNotifier(
    loadDeviceActorConfig({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_NETWORKS: '127.0.0.0/8' }),
    log,
    sealer,
  );
  assert.equal(await notify(record(`http://localhost:${port}/hook`), secrets), 'delivered');
  assert.equal(hits, 1);
  // Jobs carry the URL sealed (it may hold credentials); jobs queued before that, in clear.
  const sealed = sealer.seal(`http://localhost:${port}/hook?token=t0k`);
  assert.ok(!sealed.includes('t0k'));
  assert.equal(await notify(record(sealed), secrets), 'delivered');
  assert.equal(hits, 2);
});
