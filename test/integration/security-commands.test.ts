import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { loadGatewayConfig, startGateway, type RunningGateway } from '@svc/gateway';
import { Sealer } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  silentLogger,
  startInProcessStack,
  testEnv,
  waitForJob,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

/**
 * Command policy: context `ro` runs read-only commands only (COMMAND_POLICY), with an operator
 * pattern added (COMMAND_DENY_PATTERNS); any context can be asked for read-only per request
 * (`X-Svc-Command-Policy: read-only`, what the MCP adapter sends). A refused command is a 422
 * naming it, and nothing is queued.
 */

let nats: NatsServerProcess;
let stack: InProcessStack;
let device: SimulatedDevice;
const ENV = {
  SVC_CONTEXTS: 'default,ro',
  WORKER_CONTEXTS: 'default,ro',
  COMMAND_POLICY: 'ro=read-only',
  COMMAND_DENY_PATTERNS: '^show tech',
  JOB_DEDUP_ENABLED: 'false',
};
/** Gateways started by a test with other settings, on the same NATS (stopped at the end). */
const later: { stop(): Promise<void> }[] = [];

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  stack = await startInProcessStack(nats.url, { env: ENV });
  await waitHealthy(stack.url);
});

after(async () => {
  for (const g of later) await g.stop();
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

const auth = () => ({ basic: { username: device.username, password: device.password } });
const submit = (commands: string[], extra: Record<string, unknown> = {}, headers = {}) =>
  http('POST', `${stack.url}/v2/send-command`, {
    ...auth(),
    headers,
    body: { host: '127.0.0.1', port: device.port, platform: 'cisco_ios', commands, ...extra },
  });

test('when a read-only context is sent a configuration, reload, write, erase, copy or clear command, then it is a 422 naming the command and nothing runs', async () => {
  const before = device.stats.handshakes;
  for (const command of [
    'configure terminal',
    'conf t',
    'reload',
    'write erase',
    'wr',
    'erase startup-config',
    'delete flash:config.text',
    'copy running-config tftp://192.0.2.1/x',
    'format flash:',
    'clear counters',
    'show running-config | redirect flash:x',
    'show tech-support',
  ]) {
    const r = await submit(['show version', command], { context: 'ro' });
    assert.equal(r.status, 422, `${command}: ${r.text}`);
    const issue = r.json.validation_error.json[0];
    assert.deepEqual(issue.loc, ['body', 'commands', 1], command);
    assert.ok(issue.msg.includes(command), issue.msg);
    assert.equal(issue.type, 'command_not_allowed');
  }
  const ok = await submit(['show version', 'show ip interface brief'], { context: 'ro' });
  assert.equal(ok.status, 202, ok.text);
  const done = await waitForJob(stack.url, ok.json.job_id, auth());
  assert.equal(done.json.status, 'finished', done.json.error);
  assert.equal(device.stats.handshakes, before + 1, 'only the allowed job reached the device');
});

test('when a request asks for read-only in a context that allows any command, then the same list holds for it alone', async () => {
  const asked = await submit(['reload'], {}, { 'x-svc-command-policy': 'read-only' });
  assert.equal(asked.status, 422, asked.text);
  const junos = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth(),
    headers: { 'x-svc-command-policy': 'read-only' },
    body: {
      host: '127.0.0.1',
      port: device.port,
      platform: 'juniper_junos',
      commands: ['request system reboot'],
    },
  });
  assert.equal(junos.status, 422, junos.text);
  const bad = await submit(['show version'], {}, { 'x-svc-command-policy': 'anything' });
  assert.equal(bad.status, 422, bad.text);
  // Without the header the default context runs what it is given (the policy is the context's).
  const plain = await submit(['show clock']);
  assert.equal(plain.status, 202, plain.text);
});

/** A second gateway on the same NATS and keys, with other settings (a changed policy). */
async function gatewayWith(env: Record<string, string>): Promise<RunningGateway> {
  const all = testEnv(nats.url, { ...ENV, ...env });
  const nc = await connectNats(nats.url, 'gateway-changed');
  const gateway = await startGateway(loadGatewayConfig(all), {
    nc,
    sealer: Sealer.fromSetting(all['SVC_ENCRYPTION_KEY']!),
    log: silentLogger('gateway-changed'),
  });
  later.push({
    async stop() {
      await gateway.stop();
      await nc.close();
    },
  });
  return gateway;
}

/** The caller's jobs as the gateway lists them. */
async function jobCount(url: string): Promise<number> {
  const list = await http('GET', `${url}/v2/jobs`, auth());
  assert.equal(list.status, 200, list.text);
  return list.json.pagination.total as number;
}

test('when a failed job is replayed after its context became read-only, or with X-Svc-Command-Policy: read-only, then it is a 422 naming the command and nothing is queued', async () => {
  // A job the context allowed when it was submitted, failed (nothing listens at that port).
  const gone = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  await gone.stop();
  const submitted = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth(),
    body: {
      host: '127.0.0.1',
      port: gone.port,
      platform: 'cisco_ios',
      commands: ['show clock', 'reload'],
    },
  });
  assert.equal(submitted.status, 202, submitted.text);
  const failed = await waitForJob(stack.url, submitted.json.job_id, auth());
  assert.equal(failed.json.status, 'failed', failed.text);
  const replay = (url: string, headers: Record<string, string> = {}) =>
    http('POST', `${url}/v2/jobs/${submitted.json.job_id}/replay`, {
      ...auth(),
      headers,
      body: {},
    });
  const refused = (r: { status: number; text: string; json: any }) => {
    assert.equal(r.status, 422, r.text);
    const issue = r.json.validation_error.json[0];
    assert.deepEqual(issue.loc, ['body', 'commands', 1]);
    assert.equal(issue.type, 'command_not_allowed');
    assert.ok(issue.msg.includes('reload'), issue.msg);
  };
  const jobsBefore = await jobCount(stack.url);
  // The request asks for read-only for itself (what the MCP adapter sends), v2 and v1 alike.
  refused(await replay(stack.url, { 'x-svc-command-policy': 'read-only' }));
  refused(
    await http('POST', `${stack.url}/v1/jobs/${submitted.json.job_id}/replay`, {
      ...auth(),
      headers: { 'x-svc-command-policy': 'read-only' },
      body: {},
    }),
  );
  // The context's policy became read-only since (a gateway started with the new setting).
  const changed = await gatewayWith({ COMMAND_POLICY: 'read-only' });
  refused(await replay(changed.httpUrl!));
  assert.equal(await jobCount(stack.url), jobsBefore, 'nothing was queued');
  // Where the policy still allows it, the same replay is queued.
  assert.equal((await replay(stack.url)).status, 202);
});

test('when a v1 send_command asks for read-only, then the same list holds as on v2', async () => {
  const before = device.stats.handshakes;
  for (const route of ['/v1/send_command', '/v1/send_command_structured']) {
    const r = await http('POST', `${stack.url}${route}`, {
      ...auth(),
      headers: { 'x-svc-command-policy': 'read-only' },
      body: {
        host: '127.0.0.1',
        port: device.port,
        platform: 'cisco_ios',
        commands: ['show version', 'reload'],
      },
    });
    assert.equal(r.status, 422, `${route}: ${r.text}`);
    const issue = r.json.validation_error.json[0];
    assert.deepEqual(issue.loc, ['body', 'commands', 1]);
    assert.equal(issue.type, 'command_not_allowed');
    const bad = await http('POST', `${stack.url}${route}`, {
      ...auth(),
      headers: { 'x-svc-command-policy': 'anything' },
      body: {
        host: '127.0.0.1',
        port: device.port,
        platform: 'cisco_ios',
        commands: ['show version'],
      },
    });
    assert.equal(bad.status, 422, `${route}: ${bad.text}`);
  }
  // A read-only context refuses on v1 too.
  const ro = await http('POST', `${stack.url}/v1/send_command`, {
    ...auth(),
    body: {
      host: '127.0.0.1',
      port: device.port,
      platform: 'cisco_ios',
      commands: ['conf t'],
      context: 'ro',
    },
  });
  assert.equal(ro.status, 422, ro.text);
  assert.equal(device.stats.handshakes, before, 'nothing reached the device');
});

test('when X-Svc-Command-Policy is sent, then read-only or any in any case (or empty) is taken, anything else is a 422 at header.X-Svc-Command-Policy, and the OpenAPI names the header on every route that reads it', async () => {
  const asReadOnly = await submit(['reload'], {}, { 'x-svc-command-policy': 'Read-Only' });
  assert.equal(asReadOnly.status, 422, asReadOnly.text);
  assert.equal(asReadOnly.json.validation_error.json[0].type, 'command_not_allowed');
  for (const value of ['ANY', 'read-ONLY', '']) {
    const a = await submit(['show clock'], {}, { 'x-svc-command-policy': value });
    assert.equal(a.status, 202, `${value}: ${a.text}`);
  }

  // A failed job of the caller, to replay.
  const gone = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  await gone.stop();
  const submitted = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth(),
    body: { host: '127.0.0.1', port: gone.port, platform: 'cisco_ios', commands: ['show clock'] },
  });
  assert.equal(submitted.status, 202, submitted.text);
  assert.equal((await waitForJob(stack.url, submitted.json.job_id, auth())).json.status, 'failed');

  const body = {
    host: '127.0.0.1',
    port: device.port,
    platform: 'cisco_ios',
    commands: ['show clock'],
  };
  const routes: [string, unknown][] = [
    ['/v2/send-command', body],
    ['/v2/send-command-structured', body],
    ['/v1/send_command', body],
    [`/v2/jobs/${submitted.json.job_id}/replay`, {}],
    [`/v1/jobs/${submitted.json.job_id}/replay`, {}],
  ];
  const jobsBefore = await jobCount(stack.url);
  for (const [route, sent] of routes) {
    for (const value of ['anything', 'readonly', 'read only', 'none']) {
      const a = await http('POST', `${stack.url}${route}`, {
        ...auth(),
        headers: { 'x-svc-command-policy': value },
        body: sent,
      });
      assert.equal(a.status, 422, `${route} ${value}: ${a.text}`);
      assert.deepEqual(
        a.json,
        {
          message: 'validation failed',
          validation_error: {
            json: [
              {
                loc: ['header', 'X-Svc-Command-Policy'],
                msg: 'value is not read-only or any',
                type: 'enum',
              },
            ],
          },
        },
        `${route} ${value}`,
      );
    }
  }
  assert.equal(await jobCount(stack.url), jobsBefore, 'nothing was queued');

  const doc = (await http('GET', `${stack.url}/v2/openapi.json`)).json;
  for (const [path, method] of [
    ['/v2/send-command', 'post'],
    ['/v2/send-config', 'post'],
    ['/v2/send-command-structured', 'post'],
    ['/v1/send_command', 'post'],
    ['/v1/send_command_structured', 'post'],
    ['/v2/jobs/{job_id}/replay', 'post'],
    ['/v2/jobs/{job_id}/confirm', 'post'],
    ['/v1/jobs/{job_id}/replay', 'post'],
  ] as const) {
    const params = (doc.paths[path][method].parameters ?? []) as { in: string; name: string }[];
    assert.ok(
      params.some((p) => p.in === 'header' && p.name.toLowerCase() === 'x-svc-command-policy'),
      `${method} ${path} documents X-Svc-Command-Policy`,
    );
  }
});
