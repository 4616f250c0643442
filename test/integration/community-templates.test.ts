// Community templates by command (issue 24, finding 9): on a fresh install a structured job says
// per command that it was not parsed; `svc templates install --from` an archive in the
// upstream layout puts the collections into <SVC_DATA_DIR>/templates, where the actors find them
// with SVC_TEXTFSM_DIR / SVC_TTP_TEMPLATES_DIR unset, and the same job is parsed and names its
// template. Real stack, real SSH simulator, the real `svc` binary; no network beyond loopback.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import AdmZip from 'adm-zip';
import { create as createTar } from 'tar';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

const SVC_BIN = fileURLToPath(new URL('../../../node_modules/.bin/svc', import.meta.url));

const TEXTFSM_TEMPLATE = [
  'Value INTERFACE (\\S+)',
  'Value IP_ADDRESS (\\S+)',
  'Value STATUS (up|down|administratively down)',
  'Value PROTO (up|down)',
  '',
  'Start',
  '  ^${INTERFACE}\\s+${IP_ADDRESS}\\s+\\w+\\s+\\w+\\s+${STATUS}\\s+${PROTO}\\s*$$ -> Record',
  '',
].join('\n');
const TTP_TEMPLATE =
  '<group name="interfaces">\n{{ interface }}  {{ ip | IP }}  YES {{ method }}  {{ status }}  {{ protocol }}\n</group>';

let nats: NatsServerProcess;
let stack: InProcessStack;
let device: SimulatedDevice;
let dataDir: string;
let work: string;
let auth: { basic: { username: string; password: string } };

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  auth = { basic: { username: device.username, password: device.password } };
  dataDir = await mkdtemp(join(tmpdir(), 'svc-community-data-'));
  work = await mkdtemp(join(tmpdir(), 'svc-community-src-'));
  // A fresh install: no template setting, an empty data dir.
  stack = await startInProcessStack(nats.url, {
    env: { SVC_DATA_DIR: dataDir, SVC_TEXTFSM_DIR: '', SVC_TTP_TEMPLATES_DIR: '' },
  });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
  await rm(dataDir, { recursive: true, force: true });
  await rm(work, { recursive: true, force: true });
});

function svc(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [SVC_BIN, ...args], {
    env: { PATH: process.env['PATH'] ?? '', HOME: work, SVC_DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

async function run(body: Record<string, unknown>) {
  const a = await http('POST', `${stack.url}/v2/send-command-structured`, {
    ...auth,
    body: { host: device.host, port: device.port, platform: 'cisco_ios', ...body },
  });
  assert.equal(a.status, 202, a.text);
  return (await waitForJob(stack.url, a.json.job_id, auth)).json;
}

type CommandStatus = { command: string; status: string; parsed?: boolean; template?: unknown };

function statusOf(job: { command_status: CommandStatus[] }, command: string): CommandStatus {
  const found = job.command_status.find((s) => s.command === command);
  assert.ok(found, JSON.stringify(job.command_status));
  return found;
}

/** ntc-templates as GitHub publishes a release: `ntc-templates-<ver>/ntc_templates/templates/`. */
async function ntcArchive(): Promise<string> {
  const root = join(work, 'ntc-src');
  const templates = join(root, 'ntc-templates-9.9.0', 'ntc_templates', 'templates');
  await mkdir(templates, { recursive: true });
  await writeFile(
    join(templates, 'index'),
    'Template, Hostname, Platform, Command\n\n' +
      'cisco_ios_show_ip_interface_brief.textfsm, .*, cisco_ios, sh[[ow]] ip int[[erface]] br[[ief]]\n',
  );
  await writeFile(join(templates, 'cisco_ios_show_ip_interface_brief.textfsm'), TEXTFSM_TEMPLATE);
  await writeFile(join(root, 'ntc-templates-9.9.0', 'README.md'), 'ntc-templates\n');
  const file = join(work, 'ntc-templates-9.9.0.tar.gz');
  await createTar({ gzip: true, file, cwd: root }, ['ntc-templates-9.9.0']);
  return file;
}

/** ttp_templates as GitHub publishes a release (zip): `ttp_templates-<ver>/ttp_templates/`. */
function ttpArchive(): string {
  const zip = new AdmZip();
  zip.addFile('ttp_templates-0.9.0/README.md', Buffer.from('ttp_templates\n'));
  zip.addFile('ttp_templates-0.9.0/ttp_templates/__init__.py', Buffer.from(''));
  zip.addFile(
    'ttp_templates-0.9.0/ttp_templates/platform/cisco_ios_show_ip_interface_brief.txt',
    Buffer.from(TTP_TEMPLATE),
  );
  const file = join(work, 'ttp_templates-0.9.0.zip');
  zip.writeZip(file);
  return file;
}

test('when no community templates are installed, then a structured job says per command parsed:false and template:null; after svc templates install --from an upstream archive, the same job is parsed and names its template', async () => {
  const commands = ['show ip interface brief', 'show running-config'];
  const before = await run({ commands });
  assert.equal(before.status, 'finished', JSON.stringify(before));
  assert.equal(typeof before.results['show ip interface brief'], 'string');
  for (const command of commands) {
    const s = statusOf(before, command);
    assert.equal(s.status, 'ok');
    assert.equal(s.parsed, false);
    assert.equal(s.template, null);
  }

  const installed = await svc(['templates', 'install', '--from', await ntcArchive()]);
  assert.equal(installed.code, 0, installed.stderr);
  assert.match(installed.stdout, /ntc-templates/);

  const afterInstall = await run({ commands });
  assert.equal(afterInstall.status, 'finished', JSON.stringify(afterInstall));
  assert.deepEqual(afterInstall.results['show ip interface brief'][0], {
    interface: 'GigabitEthernet0/0',
    ip_address: '10.0.0.1',
    status: 'up',
    proto: 'up',
  });
  const parsed = statusOf(afterInstall, 'show ip interface brief');
  assert.equal(parsed.parsed, true);
  assert.equal(parsed.template, 'cisco_ios_show_ip_interface_brief.textfsm');
  const unparsed = statusOf(afterInstall, 'show running-config');
  assert.equal(unparsed.parsed, false);
  assert.equal(unparsed.template, null);
});

test('when ttp_templates are installed from a zip archive, then ttp:// references resolve in the data dir and name the template', async () => {
  const ref = 'ttp://platform/cisco_ios_show_ip_interface_brief.txt';
  const missing = await run({ commands: ['show ip interface brief'], ttp_template: ref });
  assert.equal(missing.status, 'failed');
  assert.equal(missing.error_code, 'TEMPLATE_ERROR');

  const installed = await svc(['templates', 'install', '--from', ttpArchive()]);
  assert.equal(installed.code, 0, installed.stderr);
  assert.match(installed.stdout, /ttp_templates/);

  const job = await run({ commands: ['show ip interface brief'], ttp_template: ref });
  assert.equal(job.status, 'finished', JSON.stringify(job));
  assert.match(JSON.stringify(job.results['show ip interface brief']), /10\.0\.1\.1/);
  const s = statusOf(job, 'show ip interface brief');
  assert.equal(s.parsed, true);
  assert.equal(s.template, ref);
});

test('when the job carries its own template text, then command_status names the request field it came in', async () => {
  const job = await run({
    commands: ['show ip interface brief'],
    textfsm_template: TEXTFSM_TEMPLATE,
  });
  assert.equal(job.status, 'finished', JSON.stringify(job));
  const s = statusOf(job, 'show ip interface brief');
  assert.equal(s.parsed, true);
  assert.equal(s.template, 'textfsm_template');
});
