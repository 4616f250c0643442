import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { SvcError } from '@svc/proto';
import { createDeviceRunner } from '@svc/device-actor';
import type { DeviceJob } from '@svc/device-actor';
import { jobFor, startDevice, type SimulatedDevice } from '@svc/test/support';

const run = createDeviceRunner({ pool: null, poolExclude: [] });

async function failure(job: DeviceJob): Promise<SvcError> {
  try {
    await run(job);
  } catch (err) {
    assert.ok(err instanceof SvcError, `a SvcError, got ${String(err)}`);
    return err;
  }
  assert.fail('the job should have failed');
}

/**
 * The failure of `bounded`, asserted to end while a control job that differs only by a bound
 * ten times longer is still running: a timeout that came from anything but the job's own
 * setting would end with the control or after it. The control is cancelled afterwards.
 */
async function failsWhileControlRuns(
  bounded: DeviceJob,
  control: Omit<DeviceJob, 'signal'>,
): Promise<SvcError> {
  const stop = new AbortController();
  let controlEnded = false;
  const controlRun = run({ ...control, signal: stop.signal }).then(
    () => (controlEnded = true),
    () => (controlEnded = true),
  );
  try {
    const err = await failure(bounded);
    assert.equal(controlEnded, false, 'the job with the longer bound is still running');
    return err;
  } finally {
    stop.abort(new SvcError('CANCELLED', 'the test is over'));
    await controlRun;
  }
}

async function ios(
  t: { after(fn: () => Promise<void>): void },
  options: Parameters<typeof startDevice>[0] = { platform: 'cisco_ios' },
): Promise<SimulatedDevice> {
  const dev = await startDevice(options);
  t.after(() => dev.stop());
  return dev;
}

test('when the device refuses the connection, then CONNECTION_REFUSED', async (t) => {
  const dev = await ios(t);
  await dev.setFaults({ refuse: true });
  const err = await failure(jobFor(dev, { commands: ['show version'] }));
  assert.equal(err.code, 'CONNECTION_REFUSED');
  await dev.setFaults({});
  const ok = await run(jobFor(dev, { commands: ['show version'] }));
  assert.ok(String(ok.results['show version']).startsWith('Cisco IOS Software'));
});

test('when the listener accepts TCP but never speaks SSH, then CONNECTION_TIMEOUT within conn_timeout', async (t) => {
  const sockets = new Set<Socket>();
  const server = createServer((s) => sockets.add(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  const silent = jobFor({
    host: '127.0.0.1',
    port: address.port,
    platform: 'cisco_ios',
    username: 'u',
    password: 'p',
    enable: 'e',
  } as SimulatedDevice);
  const err = await failsWhileControlRuns(
    { ...silent, connTimeoutMs: 1000, commands: ['show version'] },
    { ...silent, connTimeoutMs: 10_000, commands: ['show version'] },
  );
  assert.equal(err.code, 'CONNECTION_TIMEOUT');
});

test('when the host name does not resolve, then HOST_UNREACHABLE', async () => {
  const err = await failure({
    ...jobFor({
      host: 'nonexistent.invalid',
      port: 22,
      platform: 'cisco_ios',
      username: 'u',
      password: 'p',
      enable: 'e',
    } as SimulatedDevice),
    commands: ['show version'],
  });
  assert.equal(err.code, 'HOST_UNREACHABLE');
});

test('when the password is wrong, then AUTH_FAILED and the text has no password', async (t) => {
  const dev = await ios(t);
  const err = await failure(
    jobFor(dev, { password: 'not-the-password-123', commands: ['show version'] }),
  );
  assert.equal(err.code, 'AUTH_FAILED');
  assert.ok(!err.message.includes('not-the-password-123'));
  assert.ok(dev.stats.authFailures >= 1);
  assert.equal(dev.stats.handshakes, 0);
});

test('when the device rejects every login (fault), then AUTH_FAILED', async (t) => {
  const dev = await ios(t, { platform: 'cisco_ios', faults: { wrongPassword: true } });
  assert.equal((await failure(jobFor(dev, { commands: ['show version'] }))).code, 'AUTH_FAILED');
});

test('when the enable password is wrong, then AUTH_FAILED', async (t) => {
  const dev = await ios(t);
  const err = await failure(
    jobFor(dev, { enable: 'wrong-enable-secret', commands: ['show version'] }),
  );
  assert.equal(err.code, 'AUTH_FAILED');
  assert.ok(!err.message.includes('wrong-enable-secret'));
});

test('when the device hangs on a command, then READ_TIMEOUT after read_timeout', async (t) => {
  const dev = await ios(t, { platform: 'cisco_ios', faults: { hang: '^show version$' } });
  const err = await failsWhileControlRuns(
    jobFor(dev, { readTimeoutMs: 500, commands: ['show version'] }),
    jobFor(dev, { readTimeoutMs: 5000, commands: ['show version'] }),
  );
  assert.equal(err.code, 'READ_TIMEOUT');
});

test('when expect_string never matches, then READ_TIMEOUT; when it matches, the output ends there', async (t) => {
  const dev = await ios(t);
  const err = await failure(
    jobFor(dev, { readTimeoutMs: 500, expectString: 'NEVER-SEEN', commands: ['show version'] }),
  );
  assert.equal(err.code, 'READ_TIMEOUT');
  const ok = await run(
    jobFor(dev, { expectString: 'Technical Support', commands: ['show version'] }),
  );
  assert.equal(
    ok.results['show version'],
    'Cisco IOS Software, IOSv Software (VIOS-ADVENTERPRISEK9-M), Version 15.9(3)M4, RELEASE SOFTWARE (fc3)\nTechnical Support',
  );
});

test('when the device drops the session mid-command, then SESSION_DROPPED', async (t) => {
  const dev = await ios(t, { platform: 'cisco_ios', faults: { drop: '^show version$' } });
  assert.equal(
    (await failure(jobFor(dev, { commands: ['show version'] }))).code,
    'SESSION_DROPPED',
  );
});

test('when a show command is unknown, then COMMAND_ERROR with the device message, secrets redacted', async (t) => {
  const dev = await ios(t);
  const err = await failure(jobFor(dev, { commands: [`show secret ${dev.password}`] }));
  assert.equal(err.code, 'COMMAND_ERROR');
  assert.match(err.message, /% Invalid input detected at '\^' marker\./);
  assert.ok(!err.message.includes(dev.password), 'password redacted');
});

for (const platform of ['cisco_ios', 'juniper_junos', 'huawei', 'fortinet', 'cisco_xr'] as const) {
  test(`${platform}: when a config line is rejected, then COMMAND_ERROR and the device is back at exec`, async (t) => {
    const dev = await ios(t, { platform });
    const lines =
      platform === 'fortinet'
        ? ['config system interface', 'edit port1', 'bogus line']
        : platform === 'juniper_junos'
          ? ['set system host-name X', 'bogus line']
          : ['hostname X', 'bogus line', 'never sent'];
    const err = await failure(
      jobFor(dev, {
        kind: 'config',
        commands: lines,
        commit: platform === 'cisco_xr' || platform === 'juniper_junos',
      }),
    );
    assert.equal(err.code, 'COMMAND_ERROR');
    assert.match(err.message, /bogus line/);
    assert.notEqual(dev.lastMode, 'config', 'left configuration mode');
    assert.ok(!dev.stats.commands.some((c) => c.command === 'never sent'));
    assert.equal(dev.stats.commits, 0, 'nothing committed');
    const next = await run(
      jobFor(dev, {
        commands: [
          platform === 'huawei'
            ? 'display version'
            : platform === 'fortinet'
              ? 'get system status'
              : 'show version',
        ],
      }),
    );
    assert.equal(Object.keys(next.results).length, 1, 'the next session works');
  });
}

test('when commit is asked on a platform without commit, then COMMAND_ERROR before touching the device', async (t) => {
  const dev = await ios(t);
  const err = await failure(
    jobFor(dev, { kind: 'config', commands: ['hostname X'], commit: true }),
  );
  assert.equal(err.code, 'COMMAND_ERROR');
  assert.match(err.message, /commit is not supported on platform cisco_ios/);
  assert.equal(dev.stats.handshakes, 0);
});

test('when the device echoes slowly, character by character, then the output is still exact', async (t) => {
  const dev = await ios(t, { platform: 'cisco_ios', faults: { slowEchoMs: 3 } });
  const out = await run(jobFor(dev, { commands: ['show interface Gi0/7'] }));
  assert.equal(
    out.results['show interface Gi0/7'],
    'Gi0/7 is up, line protocol is up\n  Hardware is iGbE, address is 5254.0012.3456\n  MTU 1500 bytes, BW 1000000 Kbit/sec',
  );
});

test('when output is slow and paging could not be disabled, then pages are joined without artefacts', async (t) => {
  const fast = await ios(t);
  const reference = (await run(jobFor(fast, { commands: ['show running-config'] }))).results[
    'show running-config'
  ];
  const dev = await ios(t, {
    platform: 'cisco_ios',
    faults: { ignorePagingOff: true, slowOutput: { chunkSize: 97, delayMs: 1 } },
  });
  const out = await run(jobFor(dev, { commands: ['show running-config'] }));
  assert.equal(out.results['show running-config'], reference);
  assert.ok(!String(reference).includes('More'));
});

test('when the job is aborted with a JOB_TIMEOUT reason, then that code, at once', async (t) => {
  const dev = await ios(t, { platform: 'cisco_ios', faults: { hang: '^show version$' } });
  const ac = new AbortController();
  setTimeout(() => ac.abort(new SvcError('JOB_TIMEOUT', 'job ran longer than JOB_TIMEOUT')), 300);
  const err = await failsWhileControlRuns(
    jobFor(dev, { signal: ac.signal, readTimeoutMs: 10_000, commands: ['show version'] }),
    jobFor(dev, { readTimeoutMs: 3000, commands: ['show version'] }),
  );
  assert.equal(err.code, 'JOB_TIMEOUT');
});

test('when autodetect gets no usable answer, then PLATFORM_AUTODETECT_FAILED', async (t) => {
  const dev = await ios(t, { platform: 'linux', faults: { hang: '^uname' } });
  const err = await failure(
    jobFor(dev, { platform: 'autodetect', readTimeoutMs: 500, commands: ['uname -a'] }),
  );
  assert.equal(err.code, 'PLATFORM_AUTODETECT_FAILED');
  assert.match(err.message, /platform autodetect failed/);
});
