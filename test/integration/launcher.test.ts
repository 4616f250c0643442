// `npm start` (services/launcher) as a user runs it: a spawned process, its printed lines, the
// local nats-server it starts. Real nats-server, real HTTP, SSH device simulator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as netConnect } from 'node:net';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  ServiceProcess,
  freePort,
  http,
  waitForJob,
  waitUntil,
} from '../harness/mod.js';

/** The environment of a person's shell: no NATS_URL, no keys; ports picked by the system. */
function userEnv(dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    NATS_URL: '',
    SVC_ENCRYPTION_KEY: '',
    NATS_USER: '',
    NATS_PASSWORD: '',
    SVC_DATA_DIR: dataDir,
    SVC_PORT: '0',
    SVC_HTTP_PORT: '0',
    LOG_LEVEL: 'ERROR',
    PATH: `${process.env['PATH'] ?? ''}:/usr/sbin`,
    ...extra,
  };
}

/** `KEY=value` lines of an env file (comments skipped). */
function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

async function refused(options: Parameters<typeof connect>[0]): Promise<string> {
  try {
    const nc = await connect({ ...options, reconnect: false, timeout: 5000 });
    await nc.close();
  } catch (err) {
    return String(err);
  }
  throw new Error(`connection to ${String(options?.servers)} was accepted`);
}

test('when npm start runs its own nats-server, then it listens on loopback with generated credentials, refuses clients without them, and prints where they are', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-launcher-'));
  const device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  let launcher = ServiceProcess.start('launcher', userEnv(dataDir));
  const connections: NatsConnection[] = [];
  t.after(async () => {
    for (const nc of connections) await nc.close().catch(() => undefined);
    await launcher.kill('SIGTERM');
    await device.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const ready = await launcher.waitFor(/^svc ready: /);
  const httpUrl = /plain HTTP: (http:\/\/\S+?)\)/.exec(ready)?.[1];
  assert.ok(httpUrl, ready);
  const natsLine = await launcher.waitFor(/^svc NATS: /);
  const natsUrl = /^svc NATS: (nats:\/\/\S+)/.exec(natsLine)?.[1];
  const credsFile = /credentials: (\S+?)[;)]/.exec(natsLine)?.[1];
  assert.ok(natsUrl && credsFile, natsLine);
  assert.equal(new URL(natsUrl).hostname, '127.0.0.1');
  assert.ok(credsFile.startsWith(dataDir), `${credsFile} is not under SVC_DATA_DIR`);
  assert.equal(((await stat(credsFile)).mode & 0o777).toString(8), '600');
  const creds = parseEnvFile(await readFile(credsFile, 'utf8'));
  for (const user of ['GATEWAY', 'DISPATCHER', 'ACTOR', 'REAPER', 'EVENTS']) {
    // nats-server reads a value that starts with a digit as a number.
    assert.match(creds[`NATS_${user}_PASSWORD`] ?? '', /^[A-Za-z][A-Za-z0-9]{23,}$/, user);
  }
  assert.ok(!launcher.output.some((l) => l.includes(creds['NATS_GATEWAY_PASSWORD']!)));

  // Loopback only, and nobody without credentials.
  const port = Number(new URL(natsUrl).port);
  assert.match(await refused({ servers: `127.0.0.2:${port}` }), /connection refused|ECONNREFUSED/i);
  assert.match(await refused({ servers: natsUrl }), /Authorization|AUTHORIZATION/i);
  assert.match(
    await refused({ servers: natsUrl, user: 'events', pass: 'pNotThePassword0000000000' }),
    /Authorization|AUTHORIZATION/i,
  );

  // The printed credentials let a user follow job events.
  const events = await connect({
    servers: natsUrl,
    user: 'events',
    pass: creds['NATS_EVENTS_PASSWORD']!,
  });
  connections.push(events);
  const seen: string[] = [];
  const sub = events.subscribe('svc.events.>', {
    callback: (_err, msg) => {
      seen.push(msg.subject);
    },
  });
  await events.flush();
  const auth = { basic: { username: device.username, password: device.password } };
  const a = await http('POST', `${httpUrl}/v2/send-command`, {
    ...auth,
    body: { host: device.host, port: device.port, commands: ['show version'] },
  });
  assert.equal(a.status, 202, a.text);
  const done = await waitForJob(httpUrl, a.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
  const finished = `svc.events.job.${a.json.job_id}.finished`;
  await waitUntil(() => seen.includes(finished), `${finished} among ${seen.join(', ')}`, {
    timeoutMs: 5000,
  });
  sub.unsubscribe();

  // A second start reuses the generated credentials (subscribers keep working).
  await launcher.kill('SIGTERM');
  launcher = ServiceProcess.start('launcher', userEnv(dataDir));
  await launcher.waitFor(/^svc NATS: /);
  assert.deepEqual(parseEnvFile(await readFile(credsFile, 'utf8')), creds);
});

test('when NATS_URL is given, then npm start uses that server as it is and generates no NATS credentials', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-launcher-'));
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  const launcher = ServiceProcess.start('launcher', userEnv(dataDir, { NATS_URL: nats.url }));
  t.after(async () => {
    await launcher.kill('SIGTERM');
    await device.stop();
    await nats.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const ready = await launcher.waitFor(/^svc ready: /);
  const httpUrl = /plain HTTP: (http:\/\/\S+?)\)/.exec(ready)?.[1];
  assert.ok(httpUrl, ready);
  assert.equal(existsSync(join(dataDir, 'nats')), false, 'no local nats-server data');
  assert.ok(!launcher.output.some((l) => /^svc NATS: .*credentials/.test(l)));
  const auth = { basic: { username: device.username, password: device.password } };
  const a = await http('POST', `${httpUrl}/v2/send-command`, {
    ...auth,
    body: { host: device.host, port: device.port, commands: ['show version'] },
  });
  assert.equal(a.status, 202, a.text);
  assert.equal((await waitForJob(httpUrl, a.json.job_id, auth)).json.status, 'finished');
});

/** Whether something accepts TCP connections at `host`:`port`. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect({ host, port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/** Resolves with the exit code once the process ended. */
function exited(p: ServiceProcess): Promise<number | null> {
  if (p.child.exitCode !== null) return Promise.resolve(p.child.exitCode);
  return new Promise((resolve) => p.child.once('exit', (code) => resolve(code)));
}

test('when npm start runs with loopback targets allowed, then it listens on 127.0.0.1 only and refuses a wider bind unless told', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-launcher-'));
  const nats = await NatsServerProcess.start();
  const started: ServiceProcess[] = [];
  t.after(async () => {
    for (const p of started) await p.kill('SIGTERM');
    await nats.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  // By default: HTTPS on 127.0.0.1, not on another loopback address (as it would on 0.0.0.0).
  const local = ServiceProcess.start('launcher', userEnv(dataDir, { NATS_URL: nats.url }));
  started.push(local);
  const ready = await local.waitFor(/^svc ready: /);
  const port = Number(new URL(/^svc ready: (\S+)/.exec(ready)![1]!).port);
  assert.equal(await accepts('127.0.0.1', port), true);
  assert.equal(await accepts('127.0.0.2', port), false);
  await local.kill('SIGTERM');

  // All interfaces while the laptop default allows loopback targets: refused, saying why.
  const wide = ServiceProcess.start(
    'launcher',
    userEnv(dataDir, { NATS_URL: nats.url, SVC_BIND: '0.0.0.0', LOG_LEVEL: 'ERROR' }),
  );
  started.push(wide);
  assert.notEqual(await exited(wide), 0);
  const why = wide.output.join('\n');
  assert.match(why, /SVC_BIND 0\.0\.0\.0/);
  assert.match(why, /loopback/);
  assert.match(why, /SVC_BIND_ALLOW_LOOPBACK_TARGETS/);

  // The explicit setting lets it start.
  const told = ServiceProcess.start(
    'launcher',
    userEnv(dataDir, {
      NATS_URL: nats.url,
      SVC_BIND: '0.0.0.0',
      SVC_BIND_ALLOW_LOOPBACK_TARGETS: 'true',
    }),
  );
  started.push(told);
  const toldReady = await told.waitFor(/^svc ready: /);
  const toldPort = Number(new URL(/^svc ready: (\S+)/.exec(toldReady)![1]!).port);
  assert.equal(await accepts('127.0.0.2', toldPort), true);
});

test('when the project starts a nats-server beside its services, then the server runs goroutines on one thread unless GOMAXPROCS says otherwise', async () => {
  // What the server's Go runtime reports of itself (its monitoring endpoint), not the env given.
  const inherited = process.env['GOMAXPROCS'];
  for (const [env, expected] of [
    [{}, inherited === undefined ? 1 : Number(inherited)],
    [{ GOMAXPROCS: '2' }, 2],
  ] as const) {
    const monitorPort = await freePort();
    const server = await NatsServerProcess.start({
      extraConfig: `http: "127.0.0.1:${monitorPort}"`,
      env,
    });
    try {
      const varz = (await (await fetch(`http://127.0.0.1:${monitorPort}/varz`)).json()) as {
        gomaxprocs: number;
      };
      assert.equal(varz.gomaxprocs, expected, JSON.stringify(env));
    } finally {
      await server.stop();
    }
  }
});
