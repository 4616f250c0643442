// Day one on `npm start` (issue 24, finding 5): an admin secret generated into the data dir,
// printed beside the NATS credentials, and the `svc` CLI finding the certificate and the
// secret there for a loopback URL, with no flag. Real processes, real nats-server, HTTPS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDevice } from '@svc/test/support';
import { ServiceProcess } from '../harness/mod.js';

const SVC_BIN = fileURLToPath(new URL('../../../node_modules/.bin/svc', import.meta.url));

function svc(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [SVC_BIN, ...args], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

test('when npm start runs without an admin secret, then it generates one into SVC_DATA_DIR/admin.env and the svc CLI runs jobs and manages keys over HTTPS with no flag', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-day-one-'));
  const device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  const launcher = ServiceProcess.start('launcher', {
    NATS_URL: '',
    SVC_ENCRYPTION_KEY: '',
    SVC_ADMIN_SECRET: '',
    NATS_USER: '',
    NATS_PASSWORD: '',
    SVC_DATA_DIR: dataDir,
    SVC_PORT: '0',
    SVC_HTTP_PORT: '-1',
    LOG_LEVEL: 'ERROR',
    PATH: `${process.env['PATH'] ?? ''}:/usr/sbin`,
  });
  // One hook, in this order: the data dir is removed only once the running launcher (the
  // first or the second start) and its nats-server have stopped writing into it.
  let running = launcher;
  t.after(async () => {
    await running.kill('SIGTERM');
    await device.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const ready = await launcher.waitFor(/^svc ready: /);
  const httpsUrl = /^svc ready: (https:\/\/\S+)/.exec(ready)?.[1];
  assert.ok(httpsUrl, ready);
  const adminLine = await launcher.waitFor(/admin secret/);
  const adminFile = join(dataDir, 'admin.env');
  assert.ok(adminLine.includes(adminFile), adminLine);
  assert.equal(((await stat(adminFile)).mode & 0o777).toString(8), '600');
  const secret = /^SVC_ADMIN_SECRET=(\S+)$/m.exec(await readFile(adminFile, 'utf8'))?.[1];
  assert.ok(secret && secret.length >= 32);
  assert.ok(!launcher.output.some((l) => l.includes(secret)), 'the secret is not printed');

  // The CLI as a user runs it: the service URL, the data dir, device credentials; no CA, no
  // admin secret, no --insecure.
  const env = {
    HOME: dataDir,
    SVC_URL: httpsUrl,
    SVC_DATA_DIR: dataDir,
    SVC_USERNAME: device.username,
    SVC_PASSWORD: device.password,
    SVC_ENABLE: device.enable,
  };
  const run = await svc(
    [
      'run',
      'show version',
      '--host',
      device.host,
      '--port',
      String(device.port),
      '--platform',
      'cisco_ios',
    ],
    env,
  );
  assert.equal(run.code, 0, run.stderr);
  const created = await svc(['keys', 'create', '--role', 'viewer', '--output', 'json'], env);
  assert.equal(created.code, 0, created.stderr);
  const listed = await svc(['keys', 'list', '--output', 'json'], env);
  assert.equal(listed.code, 0, listed.stderr);

  // A second start keeps the secret.
  await launcher.kill('SIGTERM');
  const again = ServiceProcess.start('launcher', { ...launcherEnv(dataDir) });
  running = again;
  await again.waitFor(/admin secret/);
  assert.equal(/^SVC_ADMIN_SECRET=(\S+)$/m.exec(await readFile(adminFile, 'utf8'))?.[1], secret);
});

function launcherEnv(dataDir: string): Record<string, string> {
  return {
    NATS_URL: '',
    SVC_ENCRYPTION_KEY: '',
    SVC_ADMIN_SECRET: '',
    NATS_USER: '',
    NATS_PASSWORD: '',
    SVC_DATA_DIR: dataDir,
    SVC_PORT: '0',
    SVC_HTTP_PORT: '-1',
    LOG_LEVEL: 'ERROR',
    PATH: `${process.env['PATH'] ?? ''}:/usr/sbin`,
  };
}
