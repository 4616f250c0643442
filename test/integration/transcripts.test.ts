// Session transcripts: a failed job always keeps one (what was sent and received, timestamped,
// secrets redacted), a finished job only when asked, the job's submitter alone may read it, and
// the size cap keeps the start and the end. Real nats-server, HTTP and SSH device simulators.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type HttpOptions,
  type InProcessStack,
} from '../harness/mod.js';

const ADMIN_SECRET = 'transcript-admin-secret-0123456789';
/** Small, so that a job of twenty commands crosses it. */
const CAP = 4096;
const CONFIG_SECRET = 'Cfg-S3cret-Value-77';
const WEBHOOK_SECRET = 'whsec-Token-0f1e2d3c';

let nats: NatsServerProcess;
let device: SimulatedDevice;
let stack: InProcessStack;
let me: HttpOptions;
let apiKey: string;

before(async () => {
  nats = await NatsServerProcess.start();
  // Password and enable secret differ, so each is looked for on its own.
  device = await startDevice({
    platform: 'cisco_ios',
    hostname: 'TR1',
    password: 'Dev-Passw0rd-91',
    enable: 'En-Secr3t-42',
  });
  stack = await startInProcessStack(nats.url, {
    env: {
      SVC_ADMIN_SECRET: ADMIN_SECRET,
      TRANSCRIPT_MAX_BYTES: String(CAP),
      WEBHOOK_ALLOW_HTTP: 'true',
      // Every job of the `audited` context keeps its transcript; `default` only on request.
      SVC_CONTEXTS: 'default,audited',
      WORKER_CONTEXTS: 'default,audited',
      TRANSCRIPT_CONTEXTS: 'audited',
    },
  });
  await waitHealthy(stack.url);
  me = { basic: { username: device.username, password: device.password } };
  const key = await http('POST', `${stack.url}/v2/api-keys`, {
    basic: { username: 'admin', password: ADMIN_SECRET },
    body: { role: 'admin', ttl: 600 },
  });
  assert.equal(key.status, 201, key.text);
  apiKey = key.json.token;
});

after(async () => {
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

const target = () => ({ host: device.host, port: device.port, platform: 'cisco_ios' });

async function submit(path: string, body: object, auth: HttpOptions = me): Promise<string> {
  const a = await http('POST', `${stack.url}${path}`, {
    ...auth,
    body: { ...target(), enable: device.enable, ...body },
  });
  assert.equal(a.status, 202, a.text);
  return a.json.job_id as string;
}

test('when a config job fails on a rejected line, then its transcript shows the device error line and holds no password, enable secret, config secret or webhook secret', async () => {
  const jobId = await submit('/v2/send-config', {
    enable: device.enable,
    commands: [`username ops secret 0 ${CONFIG_SECRET}`, 'bogus command here'],
    // Delivery fails (nothing listens); the secret must not reach the transcript either way.
    webhook_url: 'http://127.0.0.1:9/hook',
    webhook_secret: WEBHOOK_SECRET,
  });
  const job = await waitForJob(stack.url, jobId, me);
  assert.equal(job.json.status, 'failed', job.text);

  const t = await http('GET', `${stack.url}/v2/jobs/${jobId}/transcript`, me);
  assert.equal(t.status, 200, t.text);
  assert.equal(t.headers['cache-control'], 'no-store');
  assert.equal(t.json.job_id, jobId);
  assert.equal(t.json.truncated, false);
  const sent = t.json.entries.filter((e: { dir: string }) => e.dir === 'sent');
  const received = t.json.entries.filter((e: { dir: string }) => e.dir === 'received');
  assert.ok(sent.length > 0 && received.length > 0);
  for (const e of t.json.entries) assert.ok(!Number.isNaN(Date.parse(e.at)), e.at);
  // The device's own error line, as it printed it.
  assert.ok(
    received.some((e: { data: string }) => /% Invalid input detected/.test(e.data)),
    t.text,
  );
  assert.ok(sent.some((e: { data: string }) => /bogus command here/.test(e.data)));
  // The enable secret was typed into the session: it is there as ***.
  assert.ok(
    sent.some((e: { data: string }) => e.data === '***\n'),
    t.text,
  );
  assert.match(t.text, /username ops secret 0 \*\*\*/);
  // grep: none of the secrets, anywhere in the body.
  for (const secret of [device.password, device.enable, CONFIG_SECRET, WEBHOOK_SECRET]) {
    assert.ok(!t.text.includes(secret), `transcript holds ${secret}`);
  }
});

test('when another caller asks for a transcript, then it is 403 (even an admin key); unknown jobs and finished jobs that did not ask are 404', async () => {
  const jobId = await submit('/v2/send-command', { commands: ['show bogus-thing'] });
  const job = await waitForJob(stack.url, jobId, me);
  assert.equal(job.json.status, 'failed', job.text);
  assert.equal((await http('GET', `${stack.url}/v2/jobs/${jobId}/transcript`, me)).status, 200);

  const other = await http('GET', `${stack.url}/v2/jobs/${jobId}/transcript`, {
    basic: { username: device.username, password: 'another-callers-password' },
  });
  assert.equal(other.status, 403, other.text);
  assert.equal(typeof other.json.message, 'string');
  const admin = await http('GET', `${stack.url}/v2/jobs/${jobId}/transcript`, { bearer: apiKey });
  assert.equal(admin.status, 403, admin.text);
  const none = await http('GET', `${stack.url}/v2/jobs/${jobId}/transcript`);
  assert.equal(none.status, 401);

  const unknown = await http(
    'GET',
    `${stack.url}/v2/jobs/00000000-0000-4000-8000-000000000000/transcript`,
    me,
  );
  assert.equal(unknown.status, 404);
  assert.equal(typeof unknown.json.message, 'string');

  const finished = await submit('/v2/send-command', { commands: ['show version'] });
  assert.equal((await waitForJob(stack.url, finished, me)).json.status, 'finished');
  const notKept = await http('GET', `${stack.url}/v2/jobs/${finished}/transcript`, me);
  assert.equal(notKept.status, 404);
  assert.match(notKept.json.message, /no transcript/);
});

test('when a context is in TRANSCRIPT_CONTEXTS, then its finished jobs keep a transcript without asking; another context does not', async () => {
  const audited = await submit('/v2/send-command', {
    context: 'audited',
    commands: ['show version'],
  });
  assert.equal((await waitForJob(stack.url, audited, me)).json.status, 'finished');
  const t = await http('GET', `${stack.url}/v2/jobs/${audited}/transcript`, me);
  assert.equal(t.status, 200, t.text);
  assert.equal(t.json.job_id, audited);
  assert.ok(
    t.json.entries.some(
      (e: { dir: string; data: string }) => e.dir === 'sent' && /show version/.test(e.data),
    ),
    t.text,
  );
  assert.ok(
    t.json.entries.some(
      (e: { dir: string; data: string }) => e.dir === 'received' && /TR1/.test(e.data),
    ),
    t.text,
  );
  for (const secret of [device.password, device.enable]) {
    assert.ok(!t.text.includes(secret), `transcript holds ${secret}`);
  }
  const plain = await submit('/v2/send-command', { commands: ['show version'] });
  assert.equal((await waitForJob(stack.url, plain, me)).json.status, 'finished');
  assert.equal((await http('GET', `${stack.url}/v2/jobs/${plain}/transcript`, me)).status, 404);
});

test('when a finished job asked for its transcript and passes the cap, then the start and the end are kept within the cap', async () => {
  const commands: string[] = Array.from({ length: 20 }, (_, i) =>
    i % 2 === 0 ? 'show version' : 'show ip interface brief',
  );
  commands.push('show running-config');
  const jobId = await submit('/v2/send-command', { commands, transcript: true });
  const job = await waitForJob(stack.url, jobId, me);
  assert.equal(job.json.status, 'finished', job.text);
  const t = await http('GET', `${stack.url}/v2/jobs/${jobId}/transcript`, me);
  assert.equal(t.status, 200, t.text);
  assert.equal(t.json.max_chars, CAP);
  assert.equal(t.json.truncated, true);
  assert.ok(t.json.omitted_chars > 0);
  const chars = t.json.entries.reduce((n: number, e: { data: string }) => n + e.data.length, 0);
  assert.ok(chars <= CAP, `${chars} characters kept`);
  // The start (the first command) and the end (the last one) are both there.
  assert.equal(t.json.entries[0].dir, 'sent');
  assert.match(t.json.entries[0].data, /terminal length 0|show version/);
  const last = t.json.entries.filter((e: { dir: string }) => e.dir === 'sent').at(-1);
  assert.match(last.data, /show running-config/);
});

test('when svc jobs transcript runs for a failed job, then it prints the entries (json parsed)', async () => {
  const jobId = await submit('/v2/send-command', { commands: ['show nonsense'] });
  assert.equal((await waitForJob(stack.url, jobId, me)).json.status, 'failed');
  const bin = fileURLToPath(new URL('../../../node_modules/.bin/svc', import.meta.url));
  const child = spawn(process.execPath, [bin, '-o', 'json', 'jobs', 'transcript', jobId], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: '/nonexistent',
      SVC_URL: stack.url,
      SVC_USERNAME: device.username,
      SVC_PASSWORD: device.password,
    },
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise((r) => child.on('close', r));
  assert.equal(code, 0);
  const t = JSON.parse(out);
  assert.ok(t.entries.some((e: { data: string }) => /% Invalid input/.test(e.data)));
  assert.ok(!out.includes(device.password));
});
