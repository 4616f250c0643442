import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  waitUntil,
  type InProcessStack,
} from '../harness/mod.js';

/**
 * Commit options and confirmed commits end to end (docs/config-workflows.md): a real NATS
 * server, the in-process services, simulated devices over SSH and real HTTP. Devices that must
 * roll back in a test run with a scaled window (`confirmTimeScale`): the service is unchanged.
 */

let nats: NatsServerProcess;
let stack: InProcessStack;
let junos: SimulatedDevice;
let xr: SimulatedDevice;
let eos: SimulatedDevice;
let ios: SimulatedDevice;
/** Devices whose "1 minute" lasts 0.3 s: they roll back on their own in the tests. */
let quick: SimulatedDevice[] = [];
let auth: { basic: { username: string; password: string } };
const ADMIN_SECRET = 'config-confirm-admin-secret';

before(async () => {
  nats = await NatsServerProcess.start();
  junos = await startDevice({ platform: 'juniper_junos', hostname: 'J1' });
  xr = await startDevice({ platform: 'cisco_xr', hostname: 'XR1' });
  eos = await startDevice({ platform: 'arista_eos', hostname: 'E1', enable: 'svc-demo' });
  ios = await startDevice({ platform: 'cisco_ios', hostname: 'R1', enable: 'svc-demo' });
  quick = await Promise.all(
    ['juniper_junos', 'cisco_xr', 'arista_eos'].map((platform) =>
      startDevice({ platform, hostname: 'Q1', enable: 'svc-demo', confirmTimeScale: 0.005 }),
    ),
  );
  auth = { basic: { username: junos.username, password: junos.password } };
  stack = await startInProcessStack(nats.url, { env: { SVC_ADMIN_SECRET: ADMIN_SECRET } });
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  for (const d of [junos, xr, eos, ios, ...quick]) await d?.stop();
  await nats?.stop();
});

const body = (dev: SimulatedDevice, extra: Record<string, unknown>) => ({
  host: '127.0.0.1',
  port: dev.port,
  platform: dev.platform,
  ...extra,
});

async function submit(extra: Record<string, unknown>, dev: SimulatedDevice) {
  return http('POST', `${stack.url}/v2/send-config`, { ...auth, body: body(dev, extra) });
}

async function finished(jobId: string) {
  const done = await waitForJob(stack.url, jobId, auth);
  assert.equal(done.json.status, 'finished', done.text);
  return done.json;
}

async function jobCount(): Promise<number> {
  const list = await http('GET', `${stack.url}/v2/jobs?per_page=1`, auth);
  assert.equal(list.status, 200, list.text);
  return list.json.pagination.total as number;
}

const cases = [
  {
    platform: 'juniper_junos',
    dev: () => junos,
    commit: { comment: 'svc change', confirmed_minutes: 5, check: true },
    sent: ['commit check', 'commit confirmed 5 comment "svc change"'],
    confirm: ['show system commit', 'commit'],
  },
  {
    platform: 'cisco_xr',
    dev: () => xr,
    commit: { comment: 'svc change', confirmed_minutes: 5 },
    sent: ['commit confirmed 300 comment svc change'],
    confirm: ['commit'],
  },
  {
    platform: 'arista_eos',
    dev: () => eos,
    commit: { confirmed_minutes: 5 },
    sent: ['commit timer 00:05:00'],
    confirm: ['show configuration sessions', 'commit'],
  },
];

for (const c of cases) {
  test(`${c.platform}: a confirmed commit has confirm_by; its confirm job finishes and the device keeps the change`, async () => {
    const dev = c.dev();
    const line = `set system location building-${dev.platform}`;
    const before = Date.now();
    const pushed = await submit({ commands: [line], commit: c.commit }, dev);
    assert.equal(pushed.status, 202, pushed.text);
    const job = await finished(pushed.json.job_id);
    const sent = dev.stats.commands.map((r) => r.command);
    for (const cmd of c.sent) assert.ok(sent.includes(cmd), `${cmd} sent: ${sent.join(' | ')}`);
    assert.equal(typeof job.confirm_by, 'string');
    const by = Date.parse(job.confirm_by);
    assert.ok(by >= before + 5 * 60_000 && by <= Date.now() + 5 * 60_000, job.confirm_by);
    assert.ok(dev.confirmPending, 'the device waits for the confirmation');
    assert.ok(dev.running.includes(line));

    dev.resetStats();
    const confirm = await http('POST', `${stack.url}/v2/jobs/${pushed.json.job_id}/confirm`, auth);
    assert.equal(confirm.status, 202, confirm.text);
    const confirmed = await finished(confirm.json.job_id);
    assert.equal(confirmed.confirm_of, pushed.json.job_id);
    const confirmSent = dev.stats.commands.map((r) => r.command);
    for (const cmd of c.confirm) assert.ok(confirmSent.includes(cmd), confirmSent.join(' | '));
    assert.equal(dev.stats.confirms, 1);
    assert.equal(dev.confirmPending, false);
    assert.ok(dev.running.includes(line), 'the device keeps the change');
  });
}

for (const [n, platform] of ['juniper_junos', 'cisco_xr', 'arista_eos'].entries()) {
  test(`${platform}: a confirmed commit not confirmed is rolled back by the device; a late confirm fails CONFIRM_EXPIRED`, async () => {
    const dev = quick[n]!;
    const line = 'set system location lost-uplink';
    const pushed = await submit({ commands: [line], commit: { confirmed_minutes: 1 } }, dev);
    assert.equal(pushed.status, 202, pushed.text);
    const job = await finished(pushed.json.job_id);
    assert.equal(typeof job.confirm_by, 'string');
    await dev.rolledBack();
    assert.ok(!dev.running.includes(line), 'the device rolled the change back');

    const late = await http('POST', `${stack.url}/v2/jobs/${pushed.json.job_id}/confirm`, auth);
    assert.equal(late.status, 202, late.text);
    const done = await waitForJob(stack.url, late.json.job_id, auth);
    assert.equal(done.json.status, 'failed', done.text);
    assert.equal(done.json.error_code, 'CONFIRM_EXPIRED');
    assert.match(done.json.error, /rolled the change back/);
    assert.equal(dev.stats.confirms, 0);
    assert.ok(!dev.running.includes(line));
  });
}

test('juniper_junos: commit with a comment and no window is a plain commit; confirming it is a 409', async () => {
  const pushed = await submit(
    { commands: ['set system location plain'], commit: { comment: 'plain' } },
    junos,
  );
  assert.equal(pushed.status, 202, pushed.text);
  const job = await finished(pushed.json.job_id);
  assert.equal(job.confirm_by, undefined);
  assert.ok(junos.stats.commands.some((r) => r.command === 'commit comment "plain"'));
  const confirm = await http('POST', `${stack.url}/v2/jobs/${pushed.json.job_id}/confirm`, auth);
  assert.equal(confirm.status, 409, confirm.text);
  assert.match(confirm.json.detail ?? confirm.text, /not a confirmed commit/);
});

test('a confirm by anyone but the submitter is 403 (replay rules), and nothing is confirmed', async () => {
  const pushed = await submit(
    { commands: ['set system location owner'], commit: { confirmed_minutes: 5 } },
    junos,
  );
  assert.equal(pushed.status, 202, pushed.text);
  await finished(pushed.json.job_id);
  const made = await http('POST', `${stack.url}/v2/api-keys`, {
    basic: { username: 'admin', password: ADMIN_SECRET },
    body: { role: 'operator', contexts: ['*'] },
  });
  assert.equal(made.status, 201, made.text);
  const other = await http('POST', `${stack.url}/v2/jobs/${pushed.json.job_id}/confirm`, {
    bearer: made.json.token as string,
    body: { username: junos.username, password: junos.password },
  });
  assert.equal(other.status, 403, other.text);
  assert.ok(junos.confirmPending, 'still waiting for its submitter');
  // The submitter confirms it, so the device is left clean for the other tests.
  const own = await http('POST', `${stack.url}/v2/jobs/${pushed.json.job_id}/confirm`, auth);
  assert.equal(own.status, 202, own.text);
  await finished(own.json.job_id);
  assert.equal(junos.confirmPending, false);
});

test('a confirm of an unknown job is 404', async () => {
  const missing = await http('POST', `${stack.url}/v2/jobs/nope/confirm`, auth);
  assert.equal(missing.status, 404, missing.text);
});

const bad: [string, SimulatedDevice | (() => SimulatedDevice), unknown, (string | number)[]][] = [
  [
    'confirmed_minutes 0',
    () => junos,
    { confirmed_minutes: 0 },
    ['body', 'commit', 'confirmed_minutes'],
  ],
  [
    'confirmed_minutes 61',
    () => junos,
    { confirmed_minutes: 61 },
    ['body', 'commit', 'confirmed_minutes'],
  ],
  ['a commit object on cisco_ios', () => ios, { comment: 'x' }, ['body', 'commit']],
  ['a comment on arista_eos', () => eos, { comment: 'x' }, ['body', 'commit', 'comment']],
  ['check on cisco_xr', () => xr, { check: true }, ['body', 'commit', 'check']],
  [
    'an unknown commit option',
    () => junos,
    { confirm_minutes: 5 },
    ['body', 'commit', 'confirm_minutes'],
  ],
];
test('arista_eos: save_config with a commit object is a 422 at save_config (a rollback would not undo the saved startup configuration)', async () => {
  const count = await jobCount();
  const refused = await submit(
    { commands: ['hostname E9'], commit: { confirmed_minutes: 5 }, save_config: true },
    eos,
  );
  assert.equal(refused.status, 422, refused.text);
  const locs = (refused.json.validation_error.json as { loc: string[] }[]).map((i) =>
    i.loc.join('.'),
  );
  assert.deepEqual(locs, ['body.save_config']);
  assert.equal(await jobCount(), count, 'nothing queued');
});

for (const [what, dev, commit, loc] of bad) {
  test(`when send-config has ${what}, then 422 names the field and nothing is queued`, async () => {
    const d = typeof dev === 'function' ? dev() : dev;
    const count = await jobCount();
    const refused = await submit({ commands: ['set system location x'], commit }, d);
    assert.equal(refused.status, 422, refused.text);
    const locs = (refused.json.validation_error.json as { loc: (string | number)[] }[]).map((i) =>
      i.loc.join('.'),
    );
    assert.ok(locs.includes(loc.join('.')), `${loc.join('.')} in ${locs.join(', ')}`);
    assert.equal(await jobCount(), count, 'nothing queued');
  });
}

async function waitForBatch(batchId: string): Promise<Record<string, unknown>> {
  return waitUntil(async () => {
    const b = await http('GET', `${stack.url}/v2/batches/${batchId}`, auth);
    return b.json.status !== 'running' && (b.json as Record<string, unknown>);
  }, `batch ${batchId} to end`);
}

test('when a config batch gives a commit object, then every device job commits with it (confirm_by each) and each confirm job confirms its own', async () => {
  junos.resetStats();
  xr.resetStats();
  const line = 'set system location batch-rollout';
  const made = await http('POST', `${stack.url}/v2/batches`, {
    ...auth,
    body: {
      kind: 'config',
      platform: 'juniper_junos',
      commands: [line],
      commit: { comment: 'fleet', confirmed_minutes: 5 },
      canary: 1,
      devices: [
        { host: '127.0.0.1', port: junos.port },
        { host: '127.0.0.1', port: xr.port, platform: 'cisco_xr' },
      ],
    },
  });
  assert.equal(made.status, 202, made.text);
  const summary = await waitForBatch(made.json.batch_id);
  assert.equal(summary['status'], 'finished', JSON.stringify(summary));
  const sentJ = junos.stats.commands.map((r) => r.command);
  const sentX = xr.stats.commands.map((r) => r.command);
  assert.ok(sentJ.includes('commit confirmed 5 comment "fleet"'), sentJ.join(' | '));
  assert.ok(sentX.includes('commit confirmed 300 comment fleet'), sentX.join(' | '));
  for (const [ref, dev] of [
    [made.json.jobs[0], junos],
    [made.json.jobs[1], xr],
  ] as [{ job_id: string }, SimulatedDevice][]) {
    const job = await finished(ref.job_id);
    assert.equal(typeof job.confirm_by, 'string', JSON.stringify(job));
    assert.ok(dev.confirmPending, `${dev.platform} waits for the confirmation`);
    const confirm = await http('POST', `${stack.url}/v2/jobs/${ref.job_id}/confirm`, auth);
    assert.equal(confirm.status, 202, confirm.text);
    await finished(confirm.json.job_id);
    assert.equal(dev.confirmPending, false);
    assert.ok(dev.running.includes(line));
  }
});

for (const [what, commit, devices, loc] of [
  ['confirmed_minutes 61', { confirmed_minutes: 61 }, [], 'body.commit.confirmed_minutes'],
  ['an unknown commit option', { confirm_minutes: 5 }, [], 'body.commit.confirm_minutes'],
  [
    'check with a cisco_xr device',
    { check: true },
    [{ platform: 'cisco_xr' }],
    'body.commit.check',
  ],
] as [string, unknown, Record<string, unknown>[], string][]) {
  test(`when a config batch has a commit object with ${what}, then 422 names the field and nothing is queued`, async () => {
    const count = await jobCount();
    const refused = await http('POST', `${stack.url}/v2/batches`, {
      ...auth,
      body: {
        kind: 'config',
        platform: 'juniper_junos',
        commands: ['set system location x'],
        commit,
        devices: [
          { host: '127.0.0.1', port: junos.port },
          ...devices.map((d) => ({ host: '127.0.0.1', port: xr.port, ...d })),
        ],
      },
    });
    assert.equal(refused.status, 422, refused.text);
    const locs = (refused.json.validation_error.json as { loc: (string | number)[] }[]).map((i) =>
      i.loc.join('.'),
    );
    assert.ok(locs.includes(loc), `${loc} in ${locs.join(', ')}`);
    assert.equal(await jobCount(), count, 'nothing queued');
  });
}

/** The diff a dry run of `line` shows on `dev`: the candidate holds nothing else. */
async function dryRunDiff(dev: SimulatedDevice, line: string): Promise<string> {
  const dry = await submit({ commands: [line], dry_run: true }, dev);
  assert.equal(dry.status, 202, dry.text);
  return (await finished(dry.json.job_id)).diff as string;
}

for (const c of [
  {
    what: 'the commit',
    platform: 'juniper_junos',
    dev: () => junos,
    commit: { comment: 'guarded' },
    step: 'commit comment "guarded"',
    said: 'error: configuration check-out failed',
    discard: 'rollback 0',
  },
  {
    what: 'commit check',
    platform: 'juniper_junos',
    dev: () => junos,
    commit: { check: true, confirmed_minutes: 5 },
    step: 'commit check',
    said: 'error: configuration check-out failed',
    discard: 'rollback 0',
  },
  {
    what: 'the commit',
    platform: 'cisco_xr',
    dev: () => xr,
    commit: { comment: 'guarded' },
    step: 'commit comment guarded',
    said: '% Failed to commit one or more configuration items',
    discard: 'abort',
  },
]) {
  test(`${c.platform}: when the device refuses ${c.what}, then the job fails COMMAND_ERROR with the device's words and the candidate is discarded`, async () => {
    const dev = c.dev();
    dev.resetStats();
    const line = 'set system location refuse-commit';
    const pushed = await submit({ commands: [line], commit: c.commit }, dev);
    assert.equal(pushed.status, 202, pushed.text);
    const done = await waitForJob(stack.url, pushed.json.job_id, auth);
    assert.equal(done.json.status, 'failed', done.text);
    assert.equal(done.json.error_code, 'COMMAND_ERROR');
    assert.ok(done.json.error.includes(c.step), done.json.error);
    assert.ok(done.json.error.includes(c.said), done.json.error);
    assert.ok(String(done.json.results?.[c.step]).includes(c.said), done.text);
    const status = done.json.command_status as { command: string; status: string }[];
    assert.deepEqual(
      status.map((s) => [s.command, s.status]),
      [
        [line, 'ok'],
        ...(c.step === 'commit check'
          ? [
              ['commit check', 'error'],
              ['commit confirmed 5', 'not_run'],
            ]
          : [[c.step, 'error']]),
      ],
    );
    const sent = dev.stats.commands.map((r) => r.command);
    assert.ok(sent.includes(c.discard), `${c.discard} sent: ${sent.join(' | ')}`);
    assert.equal(dev.stats.commits, 0);
    assert.equal(dev.confirmPending, false);
    assert.ok(!dev.running.includes(line));
    assert.deepEqual(dev.candidate, [], 'nothing left in a shared candidate');
    const diff = await dryRunDiff(dev, 'set system location after-refusal');
    assert.ok(!diff.includes('refuse-commit'), diff);
    assert.ok(diff.includes('after-refusal'), diff);
  });
}
