import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

/**
 * Secrets never show and texts never garble: a job's own secrets are masked only where they
 * stand as whole tokens (error texts show host, port, user and command whole), and transcripts
 * mask every secret the platform's configuration syntax shows, while outputs stay what the
 * device printed.
 */

let nats: NatsServerProcess;
let stack: InProcessStack;
const started: { stop(): Promise<void> }[] = [];

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url, {
    env: { JOB_DEDUP_ENABLED: 'false', CONNECTION_POOL_ENABLED: 'false' },
  });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  for (const s of started) await s.stop();
  await nats?.stop();
});

async function device(options: Parameters<typeof startDevice>[0]): Promise<SimulatedDevice> {
  const d = await startDevice(options);
  started.push(d);
  return d;
}

type Auth = { basic: { username: string; password: string } };

async function run(path: string, auth: Auth, body: Record<string, unknown>) {
  const a = await http('POST', `${stack.url}${path}`, { ...auth, body });
  assert.equal(a.status, 202, a.text);
  return (await waitForJob(stack.url, a.json.job_id, auth)).json;
}

test('when the password is 1, then a refused connection names 127.0.0.1 and its port whole', async () => {
  const gone = await startDevice({ platform: 'cisco_ios' });
  const port = gone.port;
  await gone.stop();
  const r = await run(
    '/v2/send-command',
    { basic: { username: 'ops', password: '1' } },
    {
      host: '127.0.0.1',
      port,
      commands: ['show version'],
    },
  );
  assert.equal(r.error_code, 'CONNECTION_REFUSED', r.error);
  assert.ok(r.error.includes(`127.0.0.1:${port}`), r.error);
  assert.ok(!r.error.includes('***'), r.error);
});

test('when the password is admin, then administrator stays whole in the error and the transcript', async () => {
  const d = await device({
    platform: 'cisco_ios',
    username: 'ops',
    password: 'admin',
    enable: 'admin',
  });
  const auth: Auth = { basic: { username: 'ops', password: 'admin' } };
  const r = await run('/v2/send-command', auth, {
    host: '127.0.0.1',
    port: d.port,
    commands: ['show administrator'],
    transcript: true,
  });
  assert.equal(r.error_code, 'COMMAND_ERROR', r.error);
  assert.match(r.error, /command "show administrator" rejected/);
  const t = await http('GET', `${stack.url}/v2/jobs/${r.job_id}/transcript`, auth);
  assert.equal(t.status, 200, t.text);
  const text = t.json.entries.map((e: { data: string }) => e.data).join('');
  assert.match(text, /show administrator/);
  assert.ok(!text.includes('***istrator'), text);
});

test('when a configuration job types secrets in IOS syntax, then the transcript masks each and the outputs stay as printed', async () => {
  const d = await device({ platform: 'cisco_ios', enable: 'svc-demo' });
  const auth: Auth = { basic: { username: d.username, password: d.password } };
  const secrets = {
    tacacs: 'TacKey-41c2',
    radius: '0822455D0A16',
    isakmp: 'IsaKey-77aa',
    auth: 'SnmpAuth-91f0',
    priv: 'SnmpPriv-12bb',
    wpa: 'WpaKey-5e3d',
    generic: 'Gen-8c1f',
  };
  const lines = [
    `tacacs-server key ${secrets.tacacs}`,
    `radius-server key 7 ${secrets.radius}`,
    `crypto isakmp key ${secrets.isakmp} address 192.0.2.1`,
    `snmp-server user mon grp v3 auth sha ${secrets.auth} priv aes 128 ${secrets.priv}`,
    `wpa-psk ascii 0 ${secrets.wpa}`,
    `description password=${secrets.generic}`,
  ];
  const r = await run('/v2/send-config', auth, {
    host: '127.0.0.1',
    port: d.port,
    platform: 'cisco_ios',
    commands: lines,
    transcript: true,
  });
  assert.equal(r.status, 'finished', `${r.error_code}: ${r.error}`);
  const t = await http('GET', `${stack.url}/v2/jobs/${r.job_id}/transcript`, auth);
  assert.equal(t.status, 200, t.text);
  const text = JSON.stringify(t.json);
  for (const [name, value] of Object.entries(secrets)) {
    assert.ok(!text.includes(value), `${name} shows in the transcript`);
  }
  assert.match(text, /tacacs-server key \*\*\*/);
  assert.match(text, /priv aes 128 \*\*\*/);
  // The job's outputs are the device's own words, secrets included.
  assert.ok(JSON.stringify(r.results).includes(secrets.tacacs), JSON.stringify(r.results));
});
