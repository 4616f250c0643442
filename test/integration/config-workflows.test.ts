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
  waitUntil,
} from '../harness/mod.js';

/**
 * Configuration workflows end to end (docs/config-workflows.md): a real NATS server, the
 * in-process services, simulated devices over SSH and real HTTP.
 */

let nats: NatsServerProcess;
let stack: InProcessStack;
let ios: SimulatedDevice;
let junos: SimulatedDevice;
let xr: SimulatedDevice;
let eos: SimulatedDevice;
let panos: SimulatedDevice;
let auth: { basic: { username: string; password: string } };
const ADMIN_SECRET = 'config-workflows-admin-secret';
const admin = { basic: { username: 'admin', password: ADMIN_SECRET } };

async function keyOf(role: string, contexts = ['*']): Promise<{ bearer: string }> {
  const made = await http('POST', `${stack.url}/v2/api-keys`, {
    ...admin,
    body: { role, contexts },
  });
  assert.equal(made.status, 201, made.text);
  return { bearer: made.json.token as string };
}

before(async () => {
  nats = await NatsServerProcess.start();
  ios = await startDevice({ platform: 'cisco_ios', hostname: 'R1', enable: 'svc-demo' });
  auth = { basic: { username: ios.username, password: ios.password } };
  junos = await startDevice({ platform: 'juniper_junos', hostname: 'J1' });
  xr = await startDevice({ platform: 'cisco_xr', hostname: 'XR1' });
  eos = await startDevice({ platform: 'arista_eos', hostname: 'E1', enable: 'svc-demo' });
  panos = await startDevice({ platform: 'paloalto_panos', hostname: 'PA1' });
  stack = await startInProcessStack(nats.url, {
    env: { SVC_ADMIN_SECRET: ADMIN_SECRET, SVC_CONTEXTS: 'default,lab' },
  });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await ios?.stop();
  for (const d of [junos, xr, eos, panos]) await d?.stop();
  await nats?.stop();
});

const iosBody = (extra: Record<string, unknown> = {}) => ({
  host: '127.0.0.1',
  port: ios.port,
  platform: 'cisco_ios',
  ...extra,
});

/** Jobs the caller has: a refused submission must not add one. */
async function jobCount(): Promise<number> {
  const list = await http('GET', `${stack.url}/v2/jobs?per_page=1`, auth);
  assert.equal(list.status, 200, list.text);
  return list.json.pagination.total as number;
}

/**
 * Proves nothing of a refused submission reached the device: a valid job sent after it runs,
 * and the device saw only that job's line (the device works one job at a time, in order).
 */
async function onlyThisLineReachesTheDevice(line: string): Promise<void> {
  ios.resetStats();
  const ok = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: iosBody({ commands: [line] }),
  });
  assert.equal(ok.status, 202, ok.text);
  const done = await waitForJob(stack.url, ok.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.equal(ios.stats.configLines, 1, 'only the valid job pushed a line');
}

for (const field of ['dryrun', 'comit', 'save']) {
  test(`when a send-config body has the misspelt field ${field}, then 422 names it and nothing is queued or pushed`, async () => {
    const before = await jobCount();
    const bad = await http('POST', `${stack.url}/v2/send-config`, {
      ...auth,
      body: iosBody({ commands: ['hostname R9'], [field]: true }),
    });
    assert.equal(bad.status, 422, bad.text);
    assert.deepEqual(bad.json.validation_error.json, [
      { loc: ['body', field], msg: 'extra fields not permitted', type: 'extra_forbidden' },
    ]);
    assert.equal(await jobCount(), before, 'no job was created');
    await onlyThisLineReachesTheDevice('hostname R1');
  });
}

test('when a config batch body has a misspelt field, then 422 names it and no batch or job is created', async () => {
  const before = await jobCount();
  const bad = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'config',
      platform: 'cisco_ios',
      commands: ['hostname R9'],
      comit: true,
      devices: [{ host: '127.0.0.1', port: ios.port }],
    },
  });
  assert.equal(bad.status, 422, bad.text);
  assert.deepEqual(bad.json.validation_error.json, [
    { loc: ['body', 'comit'], msg: 'extra fields not permitted', type: 'extra_forbidden' },
  ]);
  assert.equal(await jobCount(), before, 'no job was created');
});

test('when a config batch device entry has a misspelt field, then 422 names it there', async () => {
  const bad = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'config',
      platform: 'cisco_ios',
      commands: ['hostname R9'],
      devices: [{ host: '127.0.0.1', port: ios.port, hots: 'x' }],
    },
  });
  assert.equal(bad.status, 422, bad.text);
  const locs = (bad.json.validation_error.json as { loc: unknown[] }[]).map((i) => i.loc);
  assert.deepEqual(locs, [['body', 'devices', 0, 'hots']]);
});

test('when a read job (send-command, command batch) carries an unknown field, then it is still accepted, as older clients send extra fields', async () => {
  const one = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: iosBody({ commands: ['show version'], legacy_field: 1 }),
  });
  assert.equal(one.status, 202, one.text);
  assert.equal((await waitForJob(stack.url, one.json.job_id, auth)).json.status, 'finished');
  const batch = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'command',
      platform: 'cisco_ios',
      commands: ['show version'],
      legacy_field: 1,
      devices: [{ host: '127.0.0.1', port: ios.port }],
    },
  });
  assert.equal(batch.status, 202, batch.text);
  assert.equal(
    (await waitForJob(stack.url, batch.json.jobs[0].job_id, auth)).json.status,
    'finished',
  );
});

// ---- stored templates (slice 2) ----

const BASELINE = [
  'hostname {{ hostname }}',
  '{% for vlan in vlans %}',
  'vlan {{ vlan.id }}',
  ' name {{ vlan.name | upper }}',
  '{% endfor %}',
  '{% if ntp is defined %}ntp server {{ ntp }}{% endif %}',
].join('\n');

const T = (name: string, query = '') => `${stack.url}/v2/config-templates/${name}${query}`;

test('when an operator stores a template, then it is created (201), replaced (200, version 2), read, listed, rendered and deleted (204)', async () => {
  const created = await http('PUT', T('baseline'), {
    ...auth,
    body: { template: BASELINE, description: 'access baseline' },
  });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.json.name, 'baseline');
  assert.equal(created.json.version, 1);
  assert.ok(!Number.isNaN(Date.parse(created.json.updated_at)));

  const replaced = await http('PUT', T('baseline'), {
    ...auth,
    body: { template: BASELINE, description: 'access baseline v2' },
  });
  assert.equal(replaced.status, 200, replaced.text);
  assert.equal(replaced.json.version, 2);

  const read = await http('GET', T('baseline'), auth);
  assert.equal(read.status, 200, read.text);
  assert.equal(read.json.template, BASELINE);
  assert.equal(read.json.description, 'access baseline v2');
  assert.equal(read.json.version, 2);

  const list = await http('GET', `${stack.url}/v2/config-templates`, auth);
  assert.equal(list.status, 200, list.text);
  const entry = list.json.templates.find((t: { name: string }) => t.name === 'baseline');
  assert.deepEqual(
    { ...entry, updated_at: undefined },
    { name: 'baseline', description: 'access baseline v2', version: 2, updated_at: undefined },
  );

  const rendered = await http('POST', T('baseline', '/render'), {
    ...auth,
    body: {
      vars: {
        hostname: 'SW1',
        vlans: [
          { id: 10, name: 'users' },
          { id: 20, name: 'voice' },
        ],
      },
    },
  });
  assert.equal(rendered.status, 200, rendered.text);
  assert.deepEqual(rendered.json.lines, [
    'hostname SW1',
    'vlan 10',
    ' name USERS',
    'vlan 20',
    ' name VOICE',
  ]);

  // Templates are per context: the same name in "lab" is another template.
  assert.equal((await http('GET', T('baseline', '?context=lab'), auth)).status, 404);

  const deleted = await http('DELETE', T('baseline'), auth);
  assert.equal(deleted.status, 204, deleted.text);
  assert.equal((await http('GET', T('baseline'), auth)).status, 404);
  assert.equal((await http('DELETE', T('baseline'), auth)).status, 404);
});

test('when rendering inline text, then the lines come back; a variable the template uses and vars lacks is a 422 naming it', async () => {
  const ok = await http('POST', `${stack.url}/v2/config-templates/render`, {
    ...auth,
    body: { template: 'interface {{ i }}\n\n shutdown', vars: { i: 'Gi0/1' } },
  });
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(ok.json.lines, ['interface Gi0/1', ' shutdown']);
  const missing = await http('POST', `${stack.url}/v2/config-templates/render`, {
    ...auth,
    body: { template: 'hostname {{ hostname }}', vars: {} },
  });
  assert.equal(missing.status, 422, missing.text);
  assert.deepEqual(missing.json.validation_error.json[0].loc, ['body', 'vars', 'hostname']);
  assert.equal(missing.json.validation_error.json[0].type, 'undefined_variable');
});

test('when a template is bad, then 422 names the field: syntax error, include, bad or reserved name, unknown context', async () => {
  const syntax = await http('PUT', T('broken'), { ...auth, body: { template: '{% for x in %}' } });
  assert.equal(syntax.status, 422, syntax.text);
  assert.deepEqual(syntax.json.validation_error.json[0].loc, ['body', 'template']);
  assert.equal(syntax.json.validation_error.json[0].type, 'template_syntax');
  const include = await http('PUT', T('inc'), {
    ...auth,
    body: { template: '{% include "/etc/passwd" %}' },
  });
  assert.equal(include.status, 422, include.text);
  assert.match(include.json.validation_error.json[0].msg, /may not include, import or extend/);
  for (const name of ['Bad_Name', 'render', '-x']) {
    const bad = await http('PUT', T(name), { ...auth, body: { template: 'x' } });
    assert.equal(bad.status, 422, `${name}: ${bad.text}`);
    assert.deepEqual(bad.json.validation_error.json[0].loc, ['path', 'name']);
  }
  const ctx = await http('GET', `${stack.url}/v2/config-templates?context=mars`, auth);
  assert.equal(ctx.status, 422, ctx.text);
  assert.deepEqual(ctx.json.validation_error.json[0].loc, ['query', 'context']);
  const extra = await http('PUT', T('x'), { ...auth, body: { template: 'x', descripton: 'y' } });
  assert.equal(extra.status, 422, extra.text);
  assert.deepEqual(extra.json.validation_error.json[0].loc, ['body', 'descripton']);
});

test('when a viewer key reads templates, then it may list, read and render but not write (403); a key of another context gets 403', async () => {
  const put = await http('PUT', T('shared'), { ...auth, body: { template: 'hostname {{ h }}' } });
  assert.equal(put.status, 201, put.text);
  const viewer = await keyOf('viewer');
  assert.equal((await http('GET', T('shared'), viewer)).status, 200);
  assert.equal((await http('GET', `${stack.url}/v2/config-templates`, viewer)).status, 200);
  const r = await http('POST', T('shared', '/render'), { ...viewer, body: { vars: { h: 'A' } } });
  assert.equal(r.status, 200, r.text);
  const w = await http('PUT', T('shared'), { ...viewer, body: { template: 'x' } });
  assert.equal(w.status, 403, w.text);
  assert.equal((await http('DELETE', T('shared'), viewer)).status, 403);
  const operator = await keyOf('operator');
  const ow = await http('PUT', T('shared'), {
    ...operator,
    body: { template: 'hostname {{ h }}!' },
  });
  assert.equal(ow.status, 200, ow.text);
  const labOnly = await keyOf('operator', ['lab']);
  assert.equal((await http('GET', T('shared'), labOnly)).status, 403);
});

// ---- send-config from a template (slice 3) ----

test('when send-config names a stored template with vars, then the rendered lines are pushed and the job carries rendered', async () => {
  const put = await http('PUT', T('vlans'), { ...auth, body: { template: BASELINE } });
  assert.ok(put.status === 201 || put.status === 200, put.text);
  ios.resetStats();
  const sent = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: iosBody({
      template: { name: 'vlans', vars: { hostname: 'R1', vlans: [{ id: 30, name: 'cams' }] } },
    }),
  });
  assert.equal(sent.status, 202, sent.text);
  const done = await waitForJob(stack.url, sent.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.deepEqual(done.json.rendered, ['hostname R1', 'vlan 30', ' name CAMS']);
  assert.deepEqual(Object.keys(done.json.results).slice(0, 3), done.json.rendered);
  assert.equal(ios.stats.configLines, 3);
});

test('when send-config gives inline template text, then it is rendered and pushed', async () => {
  const sent = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: iosBody({ template: { text: 'hostname {{ h }}', vars: { h: 'R1' } } }),
  });
  assert.equal(sent.status, 202, sent.text);
  const done = await waitForJob(stack.url, sent.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.deepEqual(done.json.rendered, ['hostname R1']);
});

for (const [what, extra, loc] of [
  [
    'both commands and template',
    { commands: ['hostname R9'], template: { text: 'hostname R9' } },
    ['body', 'template'],
  ],
  ['neither commands nor template', {}, ['body', 'commands']],
  ['an unknown template', { template: { name: 'nope', vars: {} } }, ['body', 'template', 'name']],
  [
    'an undefined variable',
    { template: { text: 'hostname {{ hostname }}', vars: { hostnme: 'R9' } } },
    ['body', 'template', 'vars', 'hostname'],
  ],
  [
    'a template syntax error',
    { template: { text: 'hostname {{ hostname ' } },
    ['body', 'template', 'text'],
  ],
  ['both name and text', { template: { name: 'vlans', text: 'x' } }, ['body', 'template', 'text']],
  [
    'a misspelt template field',
    { template: { text: 'hostname R9', var: {} } },
    ['body', 'template', 'var'],
  ],
] as const) {
  test(`when send-config has ${what}, then 422 names the field and nothing is queued`, async () => {
    const before = await jobCount();
    const bad = await http('POST', `${stack.url}/v2/send-config`, {
      ...auth,
      body: iosBody(extra),
    });
    assert.equal(bad.status, 422, bad.text);
    assert.deepEqual(bad.json.validation_error.json[0].loc, loc, bad.text);
    assert.equal(await jobCount(), before, 'no job was created');
  });
}

// ---- error_patterns (slice 4) ----

test('when a config line prints a warning the platform accepts, then without error_patterns the job finishes', async () => {
  ios.resetStats();
  const sent = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: iosBody({ commands: ['spanning-tree mode mst', 'hostname R1'] }),
  });
  assert.equal(sent.status, 202, sent.text);
  const done = await waitForJob(stack.url, sent.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.match(done.json.results['spanning-tree mode mst'], /% Warning/);
  assert.equal(ios.stats.configLines, 2);
});

test('when error_patterns match a line of a config line output, then the job fails COMMAND_ERROR there and the rest is not sent', async () => {
  ios.resetStats();
  const sent = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: iosBody({
      commands: ['spanning-tree mode mst', 'hostname R1'],
      error_patterns: ['(?i)^%\\s*warning:'],
    }),
  });
  assert.equal(sent.status, 202, sent.text);
  const done = await waitForJob(stack.url, sent.json.job_id, auth);
  assert.equal(done.json.status, 'failed', done.text);
  assert.equal(done.json.error_code, 'COMMAND_ERROR');
  assert.match(done.json.error, /"spanning-tree mode mst" rejected by the device: % Warning/);
  assert.equal(ios.stats.configLines, 1, 'the line after the failed one was not sent');
  assert.notEqual(ios.lastMode, 'config', 'the driver left configuration mode');
});

test('when an error pattern is not RE2 or not a string list, then 422 names it and nothing is queued', async () => {
  const before = await jobCount();
  for (const [patterns, loc] of [
    [
      ['ok', '(a)\\1'],
      ['body', 'error_patterns', 1],
    ],
    ['^%', ['body', 'error_patterns']],
  ] as const) {
    const bad = await http('POST', `${stack.url}/v2/send-config`, {
      ...auth,
      body: iosBody({ commands: ['hostname R1'], error_patterns: patterns }),
    });
    assert.equal(bad.status, 422, bad.text);
    assert.deepEqual(bad.json.validation_error.json[0].loc, loc);
  }
  assert.equal(await jobCount(), before);
});

// ---- dry runs (slice 5) ----

const DRY_RUNS: [string, () => SimulatedDevice, string[], RegExp][] = [
  [
    'juniper_junos',
    () => junos,
    ['set interfaces ge-0/0/1 description uplink', 'set system ntp server 192.0.2.1'],
    /^\[edit\]\n\+ {2}set interfaces ge-0\/0\/1 description uplink\n\+ {2}set system ntp server 192\.0\.2\.1$/,
  ],
  [
    'cisco_xr',
    () => xr,
    ['interface Gi0/0/0/1', ' description uplink'],
    /IOS XR Configuration[\s\S]*\+ {2}interface Gi0\/0\/0\/1\n\+ {2}description uplink\nend$/,
  ],
  [
    'arista_eos',
    () => eos,
    ['hostname E2', 'vlan 30'],
    /^--- system:\/running-config\n\+\+\+ session:\/svc-\w+-session-config\n\+hostname E2\n\+vlan 30$/,
  ],
];

for (const [platform, device, commands, diff] of DRY_RUNS) {
  test(`${platform}: when send-config is a dry run, then the device's own diff comes back, the candidate is discarded and nothing is committed`, async () => {
    const dev = device();
    dev.resetStats();
    const sent = await http('POST', `${stack.url}/v2/send-config`, {
      ...auth,
      body: { host: '127.0.0.1', port: dev.port, platform, commands, dry_run: true },
    });
    assert.equal(sent.status, 202, sent.text);
    const done = await waitForJob(stack.url, sent.json.job_id, auth);
    assert.equal(done.json.status, 'finished', done.text);
    assert.match(done.json.diff, diff);
    assert.deepEqual(done.json.rendered, commands);
    assert.equal(dev.stats.diffs, 1);
    assert.equal(dev.stats.discards, 1, 'the candidate was discarded');
    assert.equal(dev.stats.commits, 0, 'nothing was committed');
    assert.equal(dev.stats.saves, 0);
    assert.equal(dev.uncommitted, false, 'nothing left in a shared candidate');
    assert.notEqual(dev.lastMode, 'config', 'configuration mode was left');
  });
}

test('arista_eos: when a dry run renames the device, then the running name stays (the session is discarded)', async () => {
  const sent = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: {
      host: '127.0.0.1',
      port: eos.port,
      platform: 'arista_eos',
      template: { text: 'hostname {{ name }}', vars: { name: 'E9' } },
      dry_run: true,
    },
  });
  const done = await waitForJob(stack.url, sent.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.match(done.json.diff, /\+hostname E9/);
  const show = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: { host: '127.0.0.1', port: eos.port, platform: 'arista_eos', commands: ['show version'] },
  });
  const after = await waitForJob(stack.url, show.json.job_id, auth);
  assert.equal(after.json.status, 'finished', after.text);
  const sent2 = eos.stats.commands.map((c) => c.command);
  assert.ok(!sent2.includes('commit'), 'no commit was sent');
});

test('cisco_ios: when send-config is a dry run, then nothing enters configuration mode: rendered lines and diff null', async () => {
  ios.resetStats();
  const sent = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: iosBody({ template: { text: 'hostname {{ h }}', vars: { h: 'R7' } }, dry_run: true }),
  });
  assert.equal(sent.status, 202, sent.text);
  const done = await waitForJob(stack.url, sent.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.equal(done.json.diff, null);
  assert.deepEqual(done.json.rendered, ['hostname R7']);
  assert.equal(ios.stats.configLines, 0);
  assert.ok(
    !ios.stats.commands.some((c) => c.command === 'configure terminal'),
    'configuration mode was never entered',
  );
});

test('juniper_junos: a dry run needs no commit: true (a push without it is refused)', async () => {
  const sent = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: {
      host: '127.0.0.1',
      port: junos.port,
      platform: 'juniper_junos',
      commands: ['set system host-name J2'],
      dry_run: true,
    },
  });
  const done = await waitForJob(stack.url, sent.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
});

test('when a dry run names a platform that needs commit and has no candidate support, then 422 at dry_run and nothing is queued', async () => {
  const before = await jobCount();
  const bad = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: {
      host: '127.0.0.1',
      port: panos.port,
      platform: 'paloalto_panos',
      commands: ['set deviceconfig system hostname PA2'],
      dry_run: true,
    },
  });
  assert.equal(bad.status, 422, bad.text);
  assert.deepEqual(bad.json.validation_error.json[0].loc, ['body', 'dry_run']);
  assert.equal(await jobCount(), before);
});

test('when a dry run line is rejected, then the job fails COMMAND_ERROR and the candidate is still discarded', async () => {
  junos.resetStats();
  const sent = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: {
      host: '127.0.0.1',
      port: junos.port,
      platform: 'juniper_junos',
      commands: ['set system ntp server 192.0.2.1', 'bogus line'],
      dry_run: true,
    },
  });
  const done = await waitForJob(stack.url, sent.json.job_id, auth);
  assert.equal(done.json.status, 'failed', done.text);
  assert.equal(done.json.error_code, 'COMMAND_ERROR');
  assert.equal(junos.stats.discards, 1);
  assert.equal(junos.stats.commits, 0);
  assert.equal(junos.uncommitted, false);
});

test('when a push arrives while an identical dry run is in flight, then it is its own job (a dry run never stands for a push)', async () => {
  const dev = junos;
  dev.setFaults({ hang: '^show \\| compare$' });
  try {
    const body = {
      host: '127.0.0.1',
      port: dev.port,
      platform: 'juniper_junos',
      commands: ['set system ntp server 192.0.2.9'],
      commit: true,
      read_timeout: 1,
    };
    const dry = await http('POST', `${stack.url}/v2/send-config`, {
      ...auth,
      body: { ...body, dry_run: true },
    });
    assert.equal(dry.status, 202, dry.text);
    // The dry run is in flight: the device holds it at its diff.
    await waitUntil(
      () => dev.stats.commands.some((c) => c.command === 'show | compare'),
      'the dry run at its diff',
    );
    const push = await http('POST', `${stack.url}/v2/send-config`, { ...auth, body });
    assert.equal(push.status, 202, push.text);
    assert.equal(push.json.deduplicated, false, push.text);
    assert.notEqual(push.json.job_id, dry.json.job_id);
    dev.setFaults({});
    const pushed = await waitForJob(stack.url, push.json.job_id, auth);
    assert.equal(pushed.json.status, 'finished', pushed.text);
    assert.equal(pushed.json.diff, undefined, 'a push has no diff');
  } finally {
    dev.setFaults({});
  }
});

// ---- pre/post checks (slice 6) ----

test('when send-config has checks, then each runs before and after the change and the result has pre, post and a unified diff', async () => {
  const dev = await startDevice({ platform: 'cisco_ios', hostname: 'C1', enable: 'svc-demo' });
  try {
    const sent = await http('POST', `${stack.url}/v2/send-config`, {
      ...auth,
      body: {
        host: '127.0.0.1',
        port: dev.port,
        platform: 'cisco_ios',
        template: { text: 'hostname {{ h }}', vars: { h: 'C2' } },
        checks: ['show running-config', 'show ip interface brief'],
      },
    });
    assert.equal(sent.status, 202, sent.text);
    const done = await waitForJob(stack.url, sent.json.job_id, auth);
    assert.equal(done.json.status, 'finished', done.text);
    const run = done.json.checks['show running-config'];
    assert.match(run.pre, /^hostname C1$/m);
    assert.match(run.post, /^hostname C2$/m);
    assert.match(run.diff, /^--- show running-config \(pre\)/m);
    assert.match(run.diff, /^\+\+\+ show running-config \(post\)/m);
    assert.match(run.diff, /^-hostname C1$/m);
    assert.match(run.diff, /^\+hostname C2$/m);
    assert.match(run.diff, /^@@ /m);
    const clock = done.json.checks['show ip interface brief'];
    assert.equal(typeof clock.pre, 'string');
    // The order on the device: checks, the change, checks again.
    const lines = dev.stats.commands.map((c) => c.command);
    const at = (cmd: string, from = 0) => lines.indexOf(cmd, from);
    const firstCheck = at('show running-config');
    const change = at('hostname C2');
    assert.ok(firstCheck >= 0 && change > firstCheck, lines.join(' | '));
    assert.ok(at('show running-config', change) > change, 'post check after the change');
  } finally {
    await dev.stop();
  }
});

test('when the checks print the same before and after, then diff is empty', async () => {
  const sent = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: iosBody({ commands: ['ntp server 192.0.2.1'], checks: ['show version'] }),
  });
  const done = await waitForJob(stack.url, sent.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
  const v = done.json.checks['show version'];
  assert.equal(v.diff, '');
  assert.equal(v.pre, v.post);
});

test('when a dry run has checks, then only pre is run and returned', async () => {
  junos.resetStats();
  const sent = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: {
      host: '127.0.0.1',
      port: junos.port,
      platform: 'juniper_junos',
      commands: ['set system ntp server 192.0.2.1'],
      checks: ['show version'],
      dry_run: true,
    },
  });
  const done = await waitForJob(stack.url, sent.json.job_id, auth);
  assert.equal(done.json.status, 'finished', done.text);
  assert.deepEqual(Object.keys(done.json.checks['show version']), ['pre']);
  assert.equal(junos.stats.commands.filter((c) => c.command === 'show version').length, 1);
});

test('when a pre check is rejected by the device, then the job fails COMMAND_ERROR before any change', async () => {
  ios.resetStats();
  const sent = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: iosBody({ commands: ['hostname R1'], checks: ['show bogus'] }),
  });
  const done = await waitForJob(stack.url, sent.json.job_id, auth);
  assert.equal(done.json.status, 'failed', done.text);
  assert.equal(done.json.error_code, 'COMMAND_ERROR');
  assert.match(done.json.error, /check "show bogus" rejected by the device before the change/);
  assert.equal(ios.stats.configLines, 0);
});

test('when checks repeat a command or are not a list of strings, then 422 names the field', async () => {
  for (const checks of [['show version', 'show version'], 'show version', []]) {
    const bad = await http('POST', `${stack.url}/v2/send-config`, {
      ...auth,
      body: iosBody({ commands: ['hostname R1'], checks }),
    });
    assert.equal(bad.status, 422, bad.text);
    assert.deepEqual(bad.json.validation_error.json[0].loc, ['body', 'checks']);
  }
});

// ---- config batches (slice 8) ----

async function waitForBatch(batchId: string): Promise<Record<string, unknown>> {
  return waitUntil(async () => {
    const b = await http('GET', `${stack.url}/v2/batches/${batchId}`, auth);
    return b.json.status !== 'running' && (b.json as Record<string, unknown>);
  }, `batch ${batchId} to end`);
}

test('when a config batch rolls a stored template out in waves, then each device gets the batch vars merged with its own, with rendered lines and checks in its job', async () => {
  const a = await startDevice({ platform: 'cisco_ios', hostname: 'A1', enable: 'svc-demo' });
  const b = await startDevice({ platform: 'cisco_ios', hostname: 'A1', enable: 'svc-demo' });
  try {
    const put = await http('PUT', T('rollout'), {
      ...auth,
      body: { template: 'hostname {{ h }}\nvlan {{ vlan }}' },
    });
    assert.ok(put.status === 201 || put.status === 200, put.text);
    const made = await http('POST', `${stack.url}/v2/batches`, {
      ...auth,
      body: {
        kind: 'config',
        platform: 'cisco_ios',
        template: { name: 'rollout', vars: { vlan: 10, h: 'unused' } },
        checks: ['show running-config'],
        canary: 1,
        devices: [
          { host: '127.0.0.1', port: a.port, vars: { h: 'A1' } },
          { host: '127.0.0.1', port: b.port, vars: { h: 'B2', vlan: 20 } },
        ],
      },
    });
    assert.equal(made.status, 202, made.text);
    const summary = await waitForBatch(made.json.batch_id);
    assert.equal(summary['status'], 'finished', JSON.stringify(summary));
    const [ja, jb] = made.json.jobs as { job_id: string }[];
    const ra = (await http('GET', `${stack.url}/v2/jobs/${ja!.job_id}`, auth)).json;
    const rb = (await http('GET', `${stack.url}/v2/jobs/${jb!.job_id}`, auth)).json;
    assert.deepEqual(ra.rendered, ['hostname A1', 'vlan 10']);
    assert.deepEqual(rb.rendered, ['hostname B2', 'vlan 20']);
    assert.equal(ra.checks['show running-config'].diff, '', 'A1 kept its name');
    assert.match(rb.checks['show running-config'].diff, /^\+hostname B2$/m);
    assert.equal(b.hostname, 'B2');
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('when a config batch device lacks a variable the template uses, then 422 names it at that device and nothing is queued', async () => {
  const before = await jobCount();
  const bad = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'config',
      platform: 'cisco_ios',
      template: { text: 'hostname {{ h }}', vars: {} },
      devices: [
        { host: '127.0.0.1', port: ios.port, vars: { h: 'R1' } },
        { host: '127.0.0.2', port: ios.port },
      ],
    },
  });
  assert.equal(bad.status, 422, bad.text);
  assert.deepEqual(bad.json.validation_error.json, [
    {
      loc: ['body', 'devices', 1, 'vars', 'h'],
      msg: 'undefined variable "h": the template uses it and vars does not give it',
      type: 'undefined_variable',
    },
  ]);
  assert.equal(await jobCount(), before);
});

test('when a batch misuses the configuration fields, then 422 names each: template on a command batch, device vars without a template', async () => {
  const cmd = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'command',
      platform: 'cisco_ios',
      commands: ['show version'],
      dry_run: true,
      devices: [{ host: '127.0.0.1', port: ios.port }],
    },
  });
  assert.equal(cmd.status, 422, cmd.text);
  assert.deepEqual(cmd.json.validation_error.json[0].loc, ['body', 'dry_run']);
  const vars = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'config',
      platform: 'cisco_ios',
      commands: ['hostname R1'],
      devices: [{ host: '127.0.0.1', port: ios.port, vars: { h: 'x' } }],
    },
  });
  assert.equal(vars.status, 422, vars.text);
  assert.deepEqual(vars.json.validation_error.json[0].loc, ['body', 'devices', 0, 'vars']);
});

test('when a config batch is a dry run with error patterns, then every job is a dry run', async () => {
  junos.resetStats();
  const made = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'config',
      platform: 'juniper_junos',
      commands: ['set system ntp server 192.0.2.5'],
      dry_run: true,
      error_patterns: ['^warning:'],
      devices: [{ host: '127.0.0.1', port: junos.port }],
    },
  });
  assert.equal(made.status, 202, made.text);
  await waitForBatch(made.json.batch_id);
  const job = (await http('GET', `${stack.url}/v2/jobs/${made.json.jobs[0].job_id}`, auth)).json;
  assert.equal(job.status, 'finished', JSON.stringify(job));
  assert.match(job.diff, /\+ {2}set system ntp server 192\.0\.2\.5/);
  assert.equal(junos.stats.commits, 0);
});

// ---- variables never add configuration lines (issue 27) ----

test('when a template variable holds a line break or another control character, then 422 names the variable and nothing is rendered, queued or pushed; line breaks the template makes itself stay', async () => {
  for (const [vars, loc] of [
    [{ h: 'R1\nusername evil privilege 15 secret x' }, ['body', 'vars', 'h']],
    [{ h: 'R1\r' }, ['body', 'vars', 'h']],
    [{ h: 'R1', vlans: [{ id: 10, name: 'users\u0085x' }] }, ['body', 'vars', 'vlans', 0, 'name']],
  ] as [Record<string, unknown>, (string | number)[]][]) {
    const r = await http('POST', `${stack.url}/v2/config-templates/render`, {
      ...auth,
      body: {
        template:
          'hostname {{ h }}{% for v in vlans %}\nvlan {{ v.id }}\n name {{ v.name }}{% endfor %}',
        vars: { vlans: [], ...vars },
      },
    });
    assert.equal(r.status, 422, r.text);
    assert.deepEqual(r.json.validation_error.json[0].loc, loc, r.text);
    assert.match(r.json.validation_error.json[0].msg, /U\+00(0A|0D|85)/);
    assert.ok(!r.text.includes('evil'), 'the value is not echoed');
  }
  // A variable the template does not read may hold anything (an inventory's notes).
  const unused = await http('POST', `${stack.url}/v2/config-templates/render`, {
    ...auth,
    body: { template: 'hostname {{ h }}', vars: { h: 'R1', notes: 'a\nb' } },
  });
  assert.equal(unused.status, 200, unused.text);
  assert.deepEqual(unused.json.lines, ['hostname R1']);

  const before = await jobCount();
  const pushed = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth,
    body: iosBody({
      template: { text: 'hostname {{ h }}', vars: { h: 'R1\nusername evil privilege 15' } },
    }),
  });
  assert.equal(pushed.status, 422, pushed.text);
  assert.deepEqual(pushed.json.validation_error.json[0].loc, ['body', 'template', 'vars', 'h']);
  assert.equal(await jobCount(), before, 'nothing queued');
  await onlyThisLineReachesTheDevice('hostname R1');

  const beforeBatch = await jobCount();
  const batch = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'config',
      platform: 'cisco_ios',
      template: { text: 'hostname {{ h }}\nvlan {{ vlan }}', vars: { vlan: '10\nvlan 99' } },
      devices: [
        { host: '127.0.0.1', port: ios.port, vars: { h: 'R1' } },
        { host: '127.0.0.2', port: ios.port, vars: { h: 'R2\nusername evil' } },
      ],
    },
  });
  assert.equal(batch.status, 422, batch.text);
  const locs = (batch.json.validation_error.json as { loc: (string | number)[] }[]).map((i) =>
    i.loc.join('.'),
  );
  assert.ok(locs.includes('body.template.vars.vlan'), locs.join(', '));
  assert.ok(locs.includes('body.devices.1.vars.h'), locs.join(', '));
  assert.equal(await jobCount(), beforeBatch, 'nothing queued');
});
