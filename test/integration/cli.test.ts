// The `svc` command line driven as a user drives it: the npm-linked bin spawned as a process,
// against a real stack (nats-server, gateway over HTTP, SSH device simulators). Exit codes,
// JSON output and inventories in CSV, Ansible YAML and Nornir YAML.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDevice, startFleet, type Fleet, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitHealthy,
  type InProcessStack,
  waitUntil,
} from '../harness/mod.js';

/** The bin npm links for the workspace (what `npx svc` runs). */
const SVC_BIN = fileURLToPath(new URL('../../../node_modules/.bin/svc', import.meta.url));
const ADMIN_SECRET = 'cli-admin-secret-0123456789abcdef';

let nats: NatsServerProcess;
let fleet: Fleet;
let broken: SimulatedDevice;
let stack: InProcessStack;
let dir: string;
/** An operator API key: with it the device credentials come from the inventory. */
let operatorKey: string;

before(async () => {
  nats = await NatsServerProcess.start();
  fleet = await startFleet({ count: 8 });
  broken = await startDevice({
    platform: 'cisco_ios',
    hostname: 'BROKEN',
    faults: { wrongPassword: true },
  });
  stack = await startInProcessStack(nats.url, { env: { SVC_ADMIN_SECRET: ADMIN_SECRET } });
  await waitHealthy(stack.url);
  dir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
  const key = await http('POST', `${stack.url}/v2/api-keys`, {
    basic: { username: 'admin', password: ADMIN_SECRET },
    body: { role: 'operator', ttl: 3600 },
  });
  assert.equal(key.status, 201, key.text);
  operatorKey = key.json.token;
});

after(async () => {
  await stack?.stop();
  await fleet?.stop();
  await broken?.stop();
  await nats?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `svc ARGS` with only the given environment (no inherited SVC_* settings). */
function svc(args: string[], env: Record<string, string> = {}, stdin?: string): Promise<Run> {
  const d = fleet.devices[0]!;
  const child = spawn(process.execPath, [SVC_BIN, ...args], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: dir,
      SVC_URL: stack.url,
      SVC_USERNAME: d.username,
      SVC_PASSWORD: d.password,
      SVC_ENABLE: d.enable,
      ...env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdin.end(stdin ?? '');
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

test('when svc run names one device, then it prints the output and exits 0; -o json parses to the job', async () => {
  const d = fleet.devices[0]!;
  const plain = await svc([
    'run',
    'show',
    'version',
    '--host',
    `${d.host}:${d.port}`,
    '--platform',
    'cisco_ios',
  ]);
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(plain.stdout, /Cisco IOS Software/);
  assert.match(plain.stdout, /R1 uptime/);
  // Not a terminal: no progress line, no control characters.
  assert.equal(plain.stderr, '');

  const json = await svc([
    '-o',
    'json',
    'run',
    '-c',
    'show version',
    '-c',
    'show ip interface brief',
    '--host',
    d.host,
    '--port',
    String(d.port),
  ]);
  assert.equal(json.code, 0, json.stderr);
  const job = JSON.parse(json.stdout);
  assert.equal(job.status, 'finished');
  assert.deepEqual(Object.keys(job.results), ['show version', 'show ip interface brief']);

  const yaml = await svc([
    'run',
    'show version',
    '--host',
    `${d.host}:${d.port}`,
    '--output',
    'yaml',
  ]);
  assert.equal(yaml.code, 0, yaml.stderr);
  assert.match(yaml.stdout, /^status: finished$/m);
});

test('when the job fails, the caller is wrong, the id is unknown, the flags are bad or the service is down, then each has its exit code', async () => {
  // Job failed (the device refuses the login): 1, with the error on stderr.
  const failed = await svc(['run', 'show version', '--host', `${broken.host}:${broken.port}`]);
  assert.equal(failed.code, 1, failed.stderr);
  assert.match(failed.stderr, /failed: AUTH_FAILED/);
  const failedJson = await svc([
    '-o',
    'json',
    'run',
    'show version',
    '--host',
    `${broken.host}:${broken.port}`,
    '--no-wait',
  ]);
  assert.equal(failedJson.code, 0, failedJson.stderr);
  const jobId = JSON.parse(failedJson.stdout).job_id as string;
  const waited = await svc(['-o', 'json', 'jobs', 'get', jobId, '--wait']);
  assert.equal(waited.code, 1);
  assert.equal(JSON.parse(waited.stdout).status, 'failed');

  // Another caller (other Basic credentials): 3.
  const other = await svc(['jobs', 'get', jobId], { SVC_PASSWORD: 'someone-else' });
  assert.equal(other.code, 3, other.stderr);
  assert.match(other.stderr, /403/);
  // Unknown job: 4.
  const unknown = await svc(['jobs', 'get', '00000000-0000-4000-8000-000000000000']);
  assert.equal(unknown.code, 4, unknown.stderr);
  // Usage: 2, nothing sent.
  const usage = await svc(['config', '--host', 'r1']);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /no configuration/);
  const badFlag = await svc(['run', 'show version', '--host', 'r1', '--output', 'xml']);
  assert.equal(badFlag.code, 2);
  // Refused by the service (validation): 6, the location on stderr.
  const refused = await svc(['run', 'show version', '--host', 'not a host!']);
  assert.equal(refused.code, 6, refused.stderr);
  assert.match(refused.stderr, /422\s+body\.host/);
  // Service unreachable: 5.
  const down = await svc(['health'], { SVC_URL: 'http://127.0.0.1:1' });
  assert.equal(down.code, 5);
  assert.match(down.stderr, /cannot reach/);
  // No credentials: 2.
  const none = await svc(['jobs', 'list'], { SVC_USERNAME: '', SVC_PASSWORD: '' });
  assert.equal(none.code, 2);
});

test('when svc jobs list finds no jobs, then it says so (not "page 1/0")', async () => {
  // Basic credentials nobody submitted with: a caller with no jobs.
  const empty = await svc(['jobs', 'list'], {
    SVC_USERNAME: 'nobody-yet',
    SVC_PASSWORD: 'Pw-never-used-0451',
  });
  assert.equal(empty.code, 0, empty.stderr);
  assert.match(empty.stdout, /^no jobs$/m);
  assert.doesNotMatch(empty.stdout, /page 1\/0/);
});

test('when svc config reads a file and a CSV inventory with a canary, then every device is configured and the JSON summary counts them', async () => {
  const devices = fleet.devices.slice(0, 4);
  const changes = file('changes.txt', 'interface Gi0/1\n description by svc\n\n');
  const csv = file(
    'inventory.csv',
    '# name,host,port,platform,site\n' +
      'name,host,port,platform,site\n' +
      devices.map((d) => `${d.hostname},${d.host},${d.port},cisco_ios,ams`).join('\n') +
      '\n',
  );
  const before = devices.map((d) => d.stats.configLines);
  const run = await svc([
    '-o',
    'json',
    'config',
    '-f',
    changes,
    '--hosts',
    `@${csv}`,
    '--canary',
    '1',
  ]);
  assert.equal(run.code, 0, run.stderr);
  const out = JSON.parse(run.stdout);
  assert.equal(out.kind, 'config');
  assert.equal(out.status, 'finished');
  assert.deepEqual(out.counts, { queued: 0, started: 0, finished: 4, failed: 0, cancelled: 0 });
  assert.deepEqual(
    out.jobs.map((j: { port: number }) => j.port),
    devices.map((d) => d.port),
  );
  assert.deepEqual(out.jobs[0].tags, { site: 'ams' });
  devices.forEach((d, i) => assert.ok(d.stats.configLines > before[i]!, d.hostname));
});

test('when svc config reads an Ansible YAML inventory and its canary fails, then the rest never start and svc exits 8', async () => {
  const [first, second, third] = fleet.devices.slice(4, 7);
  // Group vars give the platform and the credentials; the canary host's password is wrong.
  const inventory = file(
    'hosts.yml',
    `all:
  vars:
    ansible_network_os: cisco.ios.ios
    ansible_user: ${first!.username}
    ansible_password: ${first!.password}
    ansible_become_password: ${first!.enable}
  children:
    core:
      hosts:
        ${first!.hostname}:
          ansible_host: ${first!.host}
          ansible_port: ${first!.port}
          ansible_password: not-the-password
    access:
      hosts:
        ${second!.hostname}:
          ansible_host: ${second!.host}
          ansible_port: ${second!.port}
        ${third!.hostname}:
          ansible_host: ${third!.host}
          ansible_port: ${third!.port}
`,
  );
  const handshakes = [second!, third!].map((d) => d.stats.handshakes);
  // With an API key the inventory's credentials are the device credentials.
  const byKey = { SVC_API_KEY: operatorKey, SVC_USERNAME: '', SVC_PASSWORD: '', SVC_ENABLE: '' };
  const run = await svc(
    [
      '-o',
      'json',
      'config',
      '-c',
      'ntp server 192.0.2.1',
      '--hosts',
      `@${inventory}`,
      '--canary',
      '1',
    ],
    byKey,
  );
  assert.equal(run.code, 8, run.stderr);
  const out = JSON.parse(run.stdout);
  assert.equal(out.status, 'cancelled');
  assert.deepEqual(out.counts, { queued: 0, started: 0, finished: 0, failed: 1, cancelled: 2 });
  assert.equal(out.jobs[0].error_code, 'AUTH_FAILED');
  assert.deepEqual(
    [second!, third!].map((d) => d.stats.handshakes),
    handshakes,
  );

  // The same inventory, one group: both hosts configured.
  const group = await svc(
    [
      '-o',
      'json',
      'config',
      '-c',
      'ntp server 192.0.2.1',
      '--hosts',
      `@${inventory}`,
      '--group',
      'access',
    ],
    byKey,
  );
  assert.equal(group.code, 0, group.stderr);
  assert.equal(JSON.parse(group.stdout).counts.finished, 2);
});

test('when a show batch from a Nornir hosts.yaml is submitted with --no-wait, then svc batch watch follows it to the end', async () => {
  const devices = fleet.devices.slice(0, 3);
  const hosts = file(
    'nornir-hosts.yaml',
    devices
      .map(
        (d) => `${d.hostname}:
  hostname: ${d.host}
  port: ${d.port}
  platform: ios
  groups: [lab]
  data:
    tags: {role: edge}
`,
      )
      .join(''),
  );
  const submitted = await svc([
    '-o',
    'json',
    'run',
    'show version',
    '--hosts',
    `@${hosts}`,
    '--no-wait',
  ]);
  assert.equal(submitted.code, 0, submitted.stderr);
  const { batch_id: batchId, total } = JSON.parse(submitted.stdout);
  assert.equal(total, 3);

  const watched = await svc(['-o', 'json', 'batch', 'watch', batchId]);
  assert.equal(watched.code, 0, watched.stderr);
  const summary = JSON.parse(watched.stdout);
  assert.equal(summary.status, 'finished');
  assert.equal(summary.counts.finished, 3);

  const status = await svc(['batch', 'status', batchId]);
  assert.equal(status.code, 0);
  assert.match(status.stdout, /^status:\s+finished$/m);
  const jobs = await svc(['-o', 'json', 'batch', 'jobs', batchId]);
  const list = JSON.parse(jobs.stdout);
  assert.equal(list.length, 3);
  assert.match(list[2].results['show version'], new RegExp(devices[2]!.hostname));
  const listed = await svc(['-o', 'json', 'batch', 'list']);
  assert.ok(
    JSON.parse(listed.stdout).batches.some((b: { batch_id: string }) => b.batch_id === batchId),
  );
  // A finished batch cannot be cancelled: 6 (409).
  const cancel = await svc(['batch', 'cancel', batchId]);
  assert.equal(cancel.code, 6, cancel.stderr);

  // Another caller: 3.
  const other = await svc(['batch', 'status', batchId], { SVC_PASSWORD: 'someone-else' });
  assert.equal(other.code, 3);
});

test('when svc keys manages API keys, then a created key runs jobs and a revoked one is refused with exit 3', async () => {
  const admin = { SVC_ADMIN_SECRET: ADMIN_SECRET };
  const created = await svc(
    ['-o', 'json', 'keys', 'create', '--role', 'operator', '--ttl', '600'],
    admin,
  );
  assert.equal(created.code, 0, created.stderr);
  const key = JSON.parse(created.stdout);
  assert.equal(key.role, 'operator');
  const listed = await svc(['-o', 'json', 'keys', 'list'], admin);
  assert.ok(
    JSON.parse(listed.stdout).keys.some((k: { key_id: string }) => k.key_id === key.key_id),
  );
  assert.doesNotMatch(listed.stdout, new RegExp(key.token));

  const rotated = await svc(['-o', 'json', 'keys', 'rotate', key.key_id], admin);
  assert.equal(rotated.code, 0, rotated.stderr);
  const token = JSON.parse(rotated.stdout).token as string;
  assert.notEqual(token, key.token);

  // With a key, the device credentials travel in the body.
  const d = fleet.devices[7]!;
  const byKey = await svc(['-o', 'json', 'jobs', 'list'], { SVC_API_KEY: token });
  assert.equal(byKey.code, 0, byKey.stderr);
  const run = await svc(['run', 'show ip interface brief', '--host', `${d.host}:${d.port}`], {
    SVC_API_KEY: token,
  });
  assert.equal(run.code, 0, run.stderr);

  const revoked = await svc(['keys', 'revoke', key.key_id], admin);
  assert.equal(revoked.code, 0, revoked.stderr);
  const refused = await svc(['jobs', 'list'], { SVC_API_KEY: token });
  assert.equal(refused.code, 3);
  // Key administration without admin credentials is refused too.
  const notAdmin = await svc(['keys', 'list'], { SVC_ADMIN_SECRET: 'wrong-secret-0123456789' });
  assert.equal(notAdmin.code, 3);
});

test('when the config file is readable by others, then svc refuses it (exit 2); at 0600 its settings are used', async () => {
  const home = mkdtempSync(join(tmpdir(), 'svc-home-'));
  try {
    const cfgDir = join(home, '.config', 'svc');
    const path = join(cfgDir, 'config.json');
    await import('node:fs').then((fs) => fs.mkdirSync(cfgDir, { recursive: true }));
    const d = fleet.devices[0]!;
    writeFileSync(
      path,
      JSON.stringify({ url: stack.url, username: d.username, password: d.password }),
    );
    chmodSync(path, 0o644);
    const env = { HOME: home, SVC_URL: '', SVC_USERNAME: '', SVC_PASSWORD: '' };
    const wide = await svc(['jobs', 'list'], env);
    assert.equal(wide.code, 2);
    assert.match(wide.stderr, /readable by others.*chmod 600/);
    chmodSync(path, 0o600);
    const ok = await svc(['-o', 'json', 'jobs', 'list'], env);
    assert.equal(ok.code, 0, ok.stderr);
    assert.ok(Array.isArray(JSON.parse(ok.stdout).jobs));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('when svc health, parse and completion run, then they answer without device access', async () => {
  const health = await svc(['-o', 'json', 'health']);
  assert.equal(health.code, 0, health.stderr);
  assert.equal(JSON.parse(health.stdout).status, 'healthy');

  const template = file(
    'clock.textfsm',
    'Value TIME (\\S+)\nValue ZONE (\\S+)\n\nStart\n  ^\\*?${TIME}\\s+${ZONE} -> Record\n',
  );
  const parsed = await svc(
    ['-o', 'json', 'parse', 'textfsm', template, '-'],
    {},
    '*10:00:01.123 UTC Mon Nov 23 2026\n',
  );
  assert.equal(parsed.code, 0, parsed.stderr);
  assert.deepEqual(JSON.parse(parsed.stdout), [{ time: '10:00:01.123', zone: 'UTC' }]);
  const ttp = file('ver.ttp', 'Cisco IOS Software, {{ family }} Software\n');
  const ttpOut = await svc(
    ['-o', 'json', 'parse', 'ttp', ttp, '-'],
    {},
    'Cisco IOS Software, C2960 Software\n',
  );
  assert.equal(ttpOut.code, 0, ttpOut.stderr);
  assert.match(ttpOut.stdout, /"family": "C2960"/);

  const bash = await svc(['completion', 'bash']);
  assert.equal(bash.code, 0);
  assert.match(bash.stdout, /complete -F _svc_complete svc/);
  const zsh = await svc(['completion', 'zsh']);
  assert.match(zsh.stdout, /^#compdef svc/);
});

test('when svc jobs cancel names a running job, then it exits 0 and the job reads cancelled (exit 8 on get --wait); a second cancel is refused with exit 6', async (t) => {
  // Slow enough that the job is still running when the cancel comes.
  const slow = await startDevice({
    platform: 'cisco_ios',
    hostname: 'SLOW',
    commandLatencyMs: 4000,
  });
  t.after(() => slow.stop());
  const submitted = await svc([
    '-o',
    'json',
    'run',
    'show version',
    '--host',
    `${slow.host}:${slow.port}`,
    '--no-wait',
  ]);
  assert.equal(submitted.code, 0, submitted.stderr);
  const jobId = JSON.parse(submitted.stdout).job_id as string;
  await waitUntil(
    async () => {
      const got = await svc(['-o', 'json', 'jobs', 'get', jobId]);
      assert.equal(got.code, 0, got.stderr);
      const status = JSON.parse(got.stdout).status;
      if (status === 'started') return true;
      assert.equal(status, 'queued', 'the cancel must come while the job runs');
      return false;
    },
    'the job to start',
    { everyMs: 50 },
  );
  const cancel = await svc(['-o', 'json', 'jobs', 'cancel', jobId]);
  assert.equal(cancel.code, 0, cancel.stderr);
  assert.deepEqual(JSON.parse(cancel.stdout), { job_id: jobId, cancelled: true });
  const after = await svc(['-o', 'json', 'jobs', 'get', jobId, '--wait']);
  assert.equal(after.code, 8, after.stderr);
  const job = JSON.parse(after.stdout);
  assert.equal(job.status, 'cancelled');
  assert.equal(job.error_code, 'CANCELLED');
  const again = await svc(['jobs', 'cancel', jobId]);
  assert.equal(again.code, 6, again.stderr);
  assert.match(again.stderr, /409/);
});

test('when svc jobs replay names a failed job, then a new job runs the same commands with the current credentials', async (t) => {
  const locked = await startDevice({
    platform: 'cisco_ios',
    hostname: 'REPLAYED',
    faults: { wrongPassword: true },
  });
  t.after(() => locked.stop());
  const first = await svc([
    '-o',
    'json',
    'run',
    'show version',
    '--host',
    `${locked.host}:${locked.port}`,
  ]);
  assert.equal(first.code, 1, first.stderr);
  const failed = JSON.parse(first.stdout);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.error_code, 'AUTH_FAILED');
  // The device takes the password again: the replay succeeds.
  await locked.setFaults({});
  const replay = await svc(['-o', 'json', 'jobs', 'replay', failed.job_id, '--wait']);
  assert.equal(replay.code, 0, replay.stderr + replay.stdout);
  const job = JSON.parse(replay.stdout);
  assert.notEqual(job.job_id, failed.job_id);
  assert.equal(job.status, 'finished');
  assert.match(job.results['show version'], /REPLAYED uptime/);
  // Without --wait it prints the new job's id; an unknown job is exit 4.
  const ids = await svc(['jobs', 'replay', failed.job_id]);
  assert.equal(ids.code, 0, ids.stderr);
  assert.match(ids.stdout.trim(), /^[0-9a-f-]{36}$/);
  assert.notEqual(ids.stdout.trim(), failed.job_id);
  const unknown = await svc(['jobs', 'replay', '00000000-0000-4000-8000-000000000000']);
  assert.equal(unknown.code, 4, unknown.stderr);
});
