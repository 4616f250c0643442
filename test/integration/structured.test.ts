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
  ntcSkip,
  ntcTemplatesDir,
} from '../harness/mod.js';

const templates = ntcTemplatesDir;
const haveTemplates = ntcSkip === false;

let nats: NatsServerProcess;
let stack: InProcessStack;
let device: SimulatedDevice;
let auth: { basic: { username: string; password: string } };

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  auth = { basic: { username: device.username, password: device.password } };
  stack = await startInProcessStack(nats.url, {
    env: haveTemplates ? { SVC_TEXTFSM_DIR: templates } : {},
  });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

async function run(body: Record<string, unknown>) {
  const a = await http('POST', `${stack.url}/v2/send-command-structured`, {
    ...auth,
    body: { host: device.host, port: device.port, platform: 'cisco_ios', ...body },
  });
  assert.equal(a.status, 202, a.text);
  const done = await waitForJob(stack.url, a.json.job_id, auth);
  const viaStructured = await http(
    'GET',
    `${stack.url}/v2/send-command-structured/${a.json.job_id}`,
    auth,
  );
  assert.equal(viaStructured.status, 200);
  assert.deepEqual(viaStructured.json, done.json);
  return done.json;
}

test(
  'when no template is given, then the community index picks one per command and unmatched commands stay text',
  { skip: ntcSkip },
  async () => {
    const r = await run({ commands: ['show ip interface brief', 'show running-config'] });
    assert.equal(r.status, 'finished', JSON.stringify(r));
    assert.deepEqual(r.results['show ip interface brief'][0], {
      interface: 'GigabitEthernet0/0',
      ip_address: '10.0.0.1',
      status: 'up',
      proto: 'up',
    });
    assert.equal(r.results['show ip interface brief'].length, 3);
    assert.equal(typeof r.results['show running-config'], 'string');
  },
);

test('when a TextFSM template is given, then every command is parsed with it', async () => {
  const template =
    'Value Name (\\S+)\nValue Address (\\d+\\.\\d+\\.\\d+\\.\\d+)\n\nStart\n  ^${Name}\\s+${Address}\\s+YES -> Record\n';
  const r = await run({ commands: ['show ip interface brief'], textfsm_template: template });
  assert.equal(r.status, 'finished', JSON.stringify(r));
  assert.deepEqual(
    r.results['show ip interface brief'].map((x: { name: string }) => x.name),
    ['GigabitEthernet0/0', 'GigabitEthernet0/1', 'Loopback0'],
  );
});

test('when a TTP template is given, then the command is parsed with it', async () => {
  const template =
    '<group name="interfaces">\n{{ interface }}  {{ ip | IP }}  YES {{ method }}  {{ status }}  {{ protocol }}\n</group>';
  const r = await run({ commands: ['show ip interface brief'], ttp_template: template });
  assert.equal(r.status, 'finished', JSON.stringify(r));
  const parsed = JSON.stringify(r.results['show ip interface brief']);
  assert.match(parsed, /GigabitEthernet0\/1/);
  assert.match(parsed, /10\.0\.1\.1/);
});

test('when a template is broken, then the job fails with TEMPLATE_ERROR', async () => {
  const r = await run({ commands: ['show version'], textfsm_template: 'Value X (\nStart\n' });
  assert.equal(r.status, 'failed');
  assert.equal(r.error_code, 'TEMPLATE_ERROR');
});

test("when a template fails on the device's output, then the job fails with TEMPLATE_ERROR and keeps each output as the device gave it", async () => {
  const commands = ['show version', 'show ip interface brief'];
  const r = await run({ commands, textfsm_template: 'Value X (\nStart\n' });
  assert.equal(r.status, 'failed', JSON.stringify(r));
  assert.equal(r.error_code, 'TEMPLATE_ERROR');
  // What the device says to the same commands, asked plainly.
  const plain = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: { host: device.host, port: device.port, platform: 'cisco_ios', commands },
  });
  assert.equal(plain.status, 202, plain.text);
  const said = await waitForJob(stack.url, plain.json.job_id, auth);
  assert.equal(said.json.status, 'finished', said.text);
  assert.deepEqual(r.results, said.json.results);
  assert.deepEqual(
    r.command_status.map((s: Record<string, unknown>) => [s.command, s.status, s.parsed]),
    commands.map((c) => [c, 'ok', false]),
  );
});

test('when a ttp:// template is given and no collection directory is configured, then TEMPLATE_ERROR names the setting', async () => {
  const r = await run({ commands: ['show version'], ttp_template: 'ttp://platform/x.txt' });
  assert.equal(r.status, 'failed');
  assert.equal(r.error_code, 'TEMPLATE_ERROR');
  assert.match(r.error, /no templates directory is configured \(set SVC_TTP_TEMPLATES_DIR\)/);
});

test('when both templates are given, then 422 and nothing is queued', async () => {
  const a = await http('POST', `${stack.url}/v2/send-command-structured`, {
    ...auth,
    body: {
      host: device.host,
      commands: ['show version'],
      textfsm_template: 'x',
      ttp_template: 'y',
    },
  });
  assert.equal(a.status, 422);
  assert.deepEqual(a.json.validation_error.json[0].loc, ['body', 'ttp_template']);
});

test('when structured jobs run, then they never use a warm session', async () => {
  device.resetStats();
  await run({ commands: ['show version'] });
  await run({ commands: ['show version'] });
  assert.equal(device.stats.handshakes, 2);
});
