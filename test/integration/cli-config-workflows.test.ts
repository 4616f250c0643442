// `svc templates` and the configuration workflow flags of `svc config`, driven as a user drives
// them: the npm-linked bin spawned as a process against a real stack (nats-server, gateway over
// HTTP, SSH device simulators).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  startInProcessStack,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

const SVC_BIN = fileURLToPath(new URL('../../../node_modules/.bin/svc', import.meta.url));

let nats: NatsServerProcess;
let stack: InProcessStack;
let ios: SimulatedDevice;
let junos: SimulatedDevice;
let dir: string;

before(async () => {
  nats = await NatsServerProcess.start();
  ios = await startDevice({ platform: 'cisco_ios', hostname: 'R1', enable: 'svc-demo' });
  junos = await startDevice({ platform: 'juniper_junos', hostname: 'J1' });
  stack = await startInProcessStack(nats.url);
  await waitHealthy(stack.url);
  dir = mkdtempSync(join(tmpdir(), 'svc-cli-config-'));
});

after(async () => {
  await stack?.stop();
  await ios?.stop();
  await junos?.stop();
  await nats?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function svc(args: string[], stdin?: string): Promise<Run> {
  const child = spawn(process.execPath, [SVC_BIN, ...args], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: dir,
      SVC_URL: stack.url,
      SVC_USERNAME: ios.username,
      SVC_PASSWORD: ios.password,
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

test('when svc templates puts, lists, gets, renders and deletes a template, then each answers as stored', async () => {
  const put = await svc([
    'templates',
    'put',
    'ntp',
    file('ntp.j2', '{% for s in servers %}ntp server {{ s }}\n{% endfor %}'),
    '--description',
    'ntp servers',
  ]);
  assert.equal(put.code, 0, put.stderr);
  assert.equal(put.stdout, 'ntp version 1\n');
  const list = await svc(['templates', 'list', '-o', 'json']);
  assert.equal(list.code, 0, list.stderr);
  assert.deepEqual(
    (JSON.parse(list.stdout) as { templates: { name: string }[] }).templates.map((t) => t.name),
    ['ntp'],
  );
  const got = await svc(['templates', 'get', 'ntp']);
  assert.equal(got.stdout, '{% for s in servers %}ntp server {{ s }}\n{% endfor %}\n');
  const rendered = await svc([
    'templates',
    'render',
    'ntp',
    '--var',
    'servers=["192.0.2.1","192.0.2.2"]',
  ]);
  assert.equal(rendered.code, 0, rendered.stderr);
  assert.equal(rendered.stdout, 'ntp server 192.0.2.1\nntp server 192.0.2.2\n');
  const inline = await svc([
    'templates',
    'render',
    '--file',
    file('h.j2', 'hostname {{ h }}'),
    '--vars-file',
    file('vars.yaml', 'h: R7\n'),
  ]);
  assert.equal(inline.stdout, 'hostname R7\n');
  const missing = await svc(['templates', 'render', 'ntp']);
  assert.notEqual(missing.code, 0);
  assert.match(missing.stderr, /servers/);
  const del = await svc(['templates', 'delete', 'ntp']);
  assert.equal(del.code, 0, del.stderr);
  assert.notEqual((await svc(['templates', 'get', 'ntp'])).code, 0);
});

test('when svc config dry-runs a template with a check on Junos, then it prints the device diff and the pre check, and nothing is committed', async () => {
  const put = await svc([
    'templates',
    'put',
    'junos-ntp',
    file('jn.j2', 'set system ntp server {{ ntp }}'),
  ]);
  assert.equal(put.code, 0, put.stderr);
  const run = await svc([
    'config',
    '--host',
    `127.0.0.1:${junos.port}`,
    '--platform',
    'juniper_junos',
    '--template',
    'junos-ntp',
    '--var',
    'ntp=192.0.2.9',
    '--dry-run',
    '--check',
    'show version',
  ]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /=== rendered ===\nset system ntp server 192\.0\.2\.9\n/);
  assert.match(run.stdout, /=== diff ===\n\[edit\]\n\+ {2}set system ntp server 192\.0\.2\.9\n/);
  assert.match(run.stdout, /=== check \(pre\): show version ===/);
  assert.equal(junos.stats.commits, 0);
});

test('when svc config pushes a template with a check, then it prints the check diff; lines and a template together are a usage error', async () => {
  const run = await svc([
    'config',
    '--host',
    `127.0.0.1:${ios.port}`,
    '--platform',
    'cisco_ios',
    '--template-file',
    file('host.j2', 'hostname {{ h }}'),
    '--var',
    'h=R2',
    '--check',
    'show running-config',
  ]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(
    run.stdout,
    /=== check: show running-config ===\n[\s\S]*^-hostname R1$\n^\+hostname R2$/m,
  );
  const both = await svc([
    'config',
    '--host',
    `127.0.0.1:${ios.port}`,
    '-c',
    'hostname R3',
    '--template',
    'x',
  ]);
  assert.equal(both.code, 2, both.stderr);
  assert.match(both.stderr, /not both/);
});

test('when svc config makes a confirmed commit with a comment, then it prints confirm_by and svc jobs confirm confirms it on the device', async () => {
  const run = await svc([
    'config',
    '--host',
    `127.0.0.1:${junos.port}`,
    '--platform',
    'juniper_junos',
    '-c',
    'set system location cli',
    '--commit-comment',
    'cli change',
    '--confirm-minutes',
    '5',
  ]);
  assert.equal(run.code, 0, run.stderr);
  const id = /confirm by \S+: svc jobs confirm (\S+) /.exec(run.stdout)?.[1];
  assert.ok(id !== undefined, run.stdout);
  assert.ok(
    junos.stats.commands.some((c) => c.command === 'commit confirmed 5 comment "cli change"'),
  );
  assert.ok(junos.confirmPending);
  const confirm = await svc(['jobs', 'confirm', id, '--wait']);
  assert.equal(confirm.code, 0, confirm.stderr + confirm.stdout);
  assert.equal(junos.confirmPending, false);
  assert.ok(junos.running.includes('set system location cli'));

  const bad = await svc([
    'config',
    '--host',
    `127.0.0.1:${junos.port}`,
    '--platform',
    'juniper_junos',
    '-c',
    'set system location cli',
    '--confirm-minutes',
    '61',
  ]);
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /--confirm-minutes: a whole number from 1 to 60/);
});

test('when svc config rolls a template out to an inventory, then each device renders with its own host vars (group vars under them) over --var', async () => {
  const a = await startDevice({ platform: 'cisco_ios', hostname: 'A1', enable: 'svc-demo' });
  const b = await startDevice({ platform: 'cisco_ios', hostname: 'B1', enable: 'svc-demo' });
  try {
    const inventory = file(
      'hosts.yml',
      [
        'all:',
        '  vars:',
        '    ansible_network_os: cisco.ios.ios',
        '    ansible_password: not-a-template-var',
        '    vlan: 30',
        '  hosts:',
        '    a1:',
        '      ansible_host: 127.0.0.1',
        `      ansible_port: ${a.port}`,
        '      h: A2',
        '    b1:',
        '      ansible_host: 127.0.0.1',
        `      ansible_port: ${b.port}`,
        '      h: B2',
        '      vlan: 40',
        '',
      ].join('\n'),
    );
    const run = await svc([
      'config',
      '--hosts',
      `@${inventory}`,
      '--template-file',
      file(
        'hv.j2',
        'hostname {{ h }}\nvlan {{ vlan }}\n{% if ansible_password is defined %}bad{% endif %}',
      ),
      '--var',
      'vlan=10',
      '--var',
      'h=unused',
      '-o',
      'json',
    ]);
    assert.equal(run.code, 0, run.stderr + run.stdout);
    const jobs = (JSON.parse(run.stdout) as { jobs: { rendered?: string[]; port: number }[] }).jobs;
    const byPort = new Map(jobs.map((j) => [j.port, j.rendered]));
    assert.deepEqual(byPort.get(a.port), ['hostname A2', 'vlan 30']);
    assert.deepEqual(byPort.get(b.port), ['hostname B2', 'vlan 40']);
    assert.equal(a.hostname, 'A2');
    assert.equal(b.hostname, 'B2');
  } finally {
    await a.stop();
    await b.stop();
  }
});
