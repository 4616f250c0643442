// No orphans (issue 24, finding 4): `npm start` stops the nats-server it spawned on every exit
// path, checks its settings before spawning one, and `npm run start:*` pass signals to the
// service. Real processes, real nats-server, real signals.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFleet } from '@svc/test/support';
import { parentDeathSignalWrapper } from '@svc/launcher';
import {
  NatsServerProcess,
  ServiceProcess,
  http,
  testEnv,
  waitForJob,
  waitUntil,
  waitWorkers,
} from '../harness/mod.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

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

/** Pids of the live processes whose command line contains `needle`. */
async function processesWith(needle: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const state = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // A zombie has exited already (its parent has not reaped it yet).
    if (cmdline.includes(needle) && !/^\d+ \(.*\) Z /.test(state)) pids.push(Number(entry));
  }
  return pids;
}

/** Children of a process (by their parent pid in /proc). */
async function childrenOf(pid: number): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[1]) === pid) out.push(Number(entry));
  }
  return out;
}

/** Resolves once the process is gone (signal 0 fails); rejects after a generous deadline. */
async function gone(pid: number): Promise<void> {
  await waitUntil(async () => {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    return /^\d+ \(.*\) Z /.test(stat);
  }, `process ${pid} to end`);
}

async function exited(p: ServiceProcess): Promise<number | null> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return p.child.exitCode;
  return new Promise((resolve) => p.child.once('exit', (code) => resolve(code)));
}

/**
 * `npm start` on a data folder of the test's own; afterwards the launcher and any nats-server
 * of that folder are killed and the folder removed.
 */
async function launcherForTest(t: TestContext) {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-orphans-'));
  const launcher = ServiceProcess.start('launcher', userEnv(dataDir));
  t.after(async () => {
    await launcher.kill('SIGKILL');
    for (const pid of await processesWith(dataDir)) process.kill(pid, 'SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });
  return { dataDir, launcher };
}

test('when npm start is given a bad setting, then it exits 1 naming it without ever starting a nats-server', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-orphans-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const launcher = ServiceProcess.start('launcher', userEnv(dataDir, { JOB_TIMEOUT: 'soon' }));
  assert.equal(await exited(launcher), 1);
  assert.ok(
    launcher.output.some((l) => l.includes('JOB_TIMEOUT')),
    launcher.output.join('\n'),
  );
  assert.deepEqual(await processesWith(dataDir), [], 'no nats-server left running');
  assert.equal(
    (await readdir(join(dataDir, 'nats')).catch(() => [])).length,
    0,
    'no nats-server was configured',
  );
});

test('when a service of npm start fails to start after nats-server is up, then the launcher stops nats-server and exits 1', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-orphans-'));
  // A taken port: a setting that is valid but fails at listen time.
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  const port = (taken.address() as { port: number }).port;
  t.after(async () => {
    taken.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  const launcher = ServiceProcess.start(
    'launcher',
    userEnv(dataDir, { SVC_PORT: String(port), SVC_BIND: '127.0.0.1' }),
  );
  assert.equal(await exited(launcher), 1);
  assert.ok(launcher.output.some((l) => /EADDRINUSE|failed to start/.test(l)));
  for (const pid of await processesWith(dataDir)) await gone(pid);
  assert.deepEqual(await processesWith(dataDir), [], 'no nats-server left running');
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`when npm start gets ${signal} while it is starting, then its nats-server stops too`, async (t) => {
    const { dataDir, launcher } = await launcherForTest(t);
    // The nats-server is running: from here on the launcher owns a child.
    const nats = await waitUntil(
      async () => {
        const found = await processesWith(join(dataDir, 'nats'));
        return found.length > 0 && found;
      },
      `the launcher's nats-server:\n${launcher.output.join('\n')}`,
    );
    assert.equal(nats.length, 1, launcher.output.join('\n'));
    launcher.child.kill(signal);
    await exited(launcher);
    for (const pid of nats) await gone(pid);
    assert.deepEqual(await processesWith(join(dataDir, 'nats')), []);
  });
}

test('when npm start is stopped with SIGTERM once ready, then it exits 0 and its nats-server is gone', async (t) => {
  const { dataDir, launcher } = await launcherForTest(t);
  await launcher.waitFor(/^svc ready: /);
  const nats = await processesWith(join(dataDir, 'nats'));
  assert.equal(nats.length, 1);
  launcher.child.kill('SIGTERM');
  assert.equal(await exited(launcher), 0);
  for (const pid of nats) await gone(pid);
});

test(
  'when npm start is killed with SIGKILL, then its nats-server stops too',
  {
    skip:
      parentDeathSignalWrapper() === null &&
      'no setpriv with --pdeathsig on this machine: a killed npm start leaves its nats-server',
  },
  async (t) => {
    // Killed without a chance to stop anything (kill -9, the OOM killer, a runtime's stop
    // timeout): a server left running would share SVC_DATA_DIR's store with the next npm start.
    const { dataDir, launcher } = await launcherForTest(t);
    await launcher.waitFor(/^svc ready: /);
    const nats = await processesWith(join(dataDir, 'nats'));
    assert.equal(nats.length, 1);
    launcher.child.kill('SIGKILL');
    await exited(launcher);
    for (const pid of nats) await gone(pid);
  },
);

test('when npm run start:gateway gets SIGTERM, then the gateway process gets it and stops (no node child left serving)', async (t) => {
  const nats = await NatsServerProcess.start();
  const npm = spawn('npm', ['run', '--silent', 'start:gateway'], {
    cwd: ROOT,
    env: { ...process.env, ...testEnv(nats.url, { LOG_LEVEL: 'INFO' }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const keep = (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean));
  npm.stdout.on('data', keep);
  npm.stderr.on('data', keep);
  const npmExit = new Promise<number | null>((r) => npm.once('exit', (code) => r(code)));
  t.after(async () => {
    if (npm.exitCode === null) npm.kill('SIGKILL');
    await nats.stop();
  });
  await waitUntil(() => {
    if (npm.exitCode !== null) throw new Error(output.join('\n'));
    return output.some((l) => l.includes('gateway listening'));
  }, 'the gateway under npm to listen');
  // Every node process under npm (through a shell or not).
  const tree = async (pid: number): Promise<number[]> => {
    const kids = await childrenOf(pid);
    return [...kids, ...(await Promise.all(kids.map(tree))).flat()];
  };
  const below = await tree(npm.pid!);
  assert.ok(below.length > 0);
  npm.kill('SIGTERM');
  assert.equal(await npmExit, 0);
  for (const pid of below) await gone(pid);
  assert.ok(
    output.some((l) => l.includes('"signal":"SIGTERM"')),
    `the gateway saw the signal:\n${output.join('\n')}`,
  );
});

test('when the process that started a service dies without stopping it, then the service exits too', async (t) => {
  const nats = await NatsServerProcess.start();
  t.after(() => nats.stop());
  // A test process of its own that starts a reaper as the tests do, and is then killed before
  // any cleanup of its runs (as the test runner kills a test file at its timeout).
  const harness = new URL('../harness/mod.js', import.meta.url).href;
  const script = [
    `import { ServiceProcess } from ${JSON.stringify(harness)};`,
    `const reaper = ServiceProcess.start('reaper', JSON.parse(process.env.SVC_TEST_SERVICE_ENV));`,
    `await reaper.waitFor(/reaper started/);`,
    `console.log('reaper pid', reaper.child.pid);`,
    `setInterval(() => undefined, 60_000);`,
  ].join('\n');
  const starter = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: {
      ...process.env,
      SVC_TEST_SERVICE_ENV: JSON.stringify(testEnv(nats.url, { LOG_LEVEL: 'INFO' })),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  starter.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const pid = await waitUntil(
    () => Number(/reaper pid (\d+)/.exec(out)?.[1]) || null,
    'the starter to print its reaper pid',
  );
  t.after(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  });
  starter.kill('SIGKILL');
  await gone(pid);
});

test('when a service the harness started runs a worker thread (a structured job parsed), then it keeps running', async (t) => {
  const nats = await NatsServerProcess.start();
  const fleet = await startFleet({ count: 1, platform: 'cisco_ios' });
  // INFO: the gateway's start line gives its URL.
  const env = testEnv(nats.url, { LOG_LEVEL: 'INFO' });
  const procs = [
    ServiceProcess.start('reaper', env),
    ServiceProcess.start('dispatcher', env),
    ServiceProcess.start('device-actor', env),
    ServiceProcess.start('gateway', env),
  ];
  const actor = procs[2]!;
  t.after(async () => {
    for (const p of procs.slice().reverse()) await p.kill('SIGTERM');
    await fleet.stop();
    await nats.stop();
  });
  const url = await procs[3]!.httpUrl();
  await waitWorkers(url, 1);
  const device = fleet.devices[0]!;
  const auth = { basic: { username: device.username, password: device.password } };
  const submit = async (path: string, body: Record<string, unknown>) => {
    const a = await http('POST', `${url}${path}`, {
      ...auth,
      body: { host: device.host, port: device.port, enable: device.enable, ...body },
    });
    assert.equal(a.status, 202, a.text);
    return waitForJob(url, a.json.job_id as string, auth);
  };
  // A structured job's outputs are parsed in a worker thread of the actor host.
  const parsed = await submit('/v2/send-command-structured', {
    commands: ['show ip interface brief'],
    textfsm_template:
      'Value Name (\\S+)\n\nStart\n  ^${Name}\\s+\\d+\\.\\d+\\.\\d+\\.\\d+\\s+YES -> Record\n',
  });
  assert.equal(parsed.json.status, 'finished', parsed.text);
  // The host still takes jobs after the worker ran: the next one finishes.
  const next = await submit('/v2/send-command', { commands: ['show version'] });
  assert.equal(next.json.status, 'finished', next.text);
  assert.equal(actor.child.exitCode, null, 'the actor host is still running');
  assert.equal(actor.child.signalCode, null, 'the actor host is still running');
});
