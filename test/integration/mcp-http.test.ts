// The MCP adapter over streamable HTTP: a child process listening on a random loopback port,
// driven by the official SDK client, in front of a real stack and SSH device simulators.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitHealthy,
  type InProcessStack,
  writeTextfsmFixture,
} from '../harness/mod.js';

const ADAPTER_MAIN = fileURLToPath(
  new URL('../../../services/mcp-adapter/dist/src/main.js', import.meta.url),
);
const ADMIN_SECRET = 'mcp-http-admin-secret';
// A template folder of the test's own: the adapter's structured tool needs an index, not the
// community collection (absent from a user's clone).
const TEXTFSM_DIR = writeTextfsmFixture();
const HTTP_TOKEN = 'mcp-http-listener-token';

// Tool outputs are asserted field by field, as the harness does with HTTP bodies.
type Out = Record<string, any>;

interface Adapter {
  url: string;
  child: ChildProcess;
  logs: string[];
}

let nats: NatsServerProcess;
let stack: InProcessStack;
let device: SimulatedDevice;
let stuckDevice: SimulatedDevice;
const keys: Partial<Record<'operator' | 'viewer', string>> = {};
let keysUnavailable: string | null = null;
const adapters: Adapter[] = [];
const clients: Client[] = [];
let operator: Adapter;

before(async () => {
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', hostname: 'MCPH1' });
  stuckDevice = await startDevice({
    platform: 'cisco_ios',
    hostname: 'MCPH2',
    faults: { hang: 'show clock' },
  });
  stack = await startInProcessStack(nats.url, {
    env: { SVC_ADMIN_SECRET: ADMIN_SECRET, SVC_TEXTFSM_DIR: TEXTFSM_DIR },
  });
  await waitHealthy(stack.url);
  for (const role of ['operator', 'viewer'] as const) {
    const a = await http('POST', `${stack.url}/v2/api-keys`, {
      basic: { username: 'admin', password: ADMIN_SECRET },
      body: { role, ttl: 3600 },
    });
    if (a.status !== 201 && a.status !== 200) {
      keysUnavailable = `POST /v2/api-keys answered ${a.status} ${a.text.slice(0, 120)}: API keys are not available`;
      break;
    }
    keys[role] = a.json.token;
  }
  operator = await startAdapter({ SVC_MCP_API_KEY: keys.operator ?? 'not-a-key' });
});

after(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  for (const a of adapters) await stopAdapter(a);
  await stack?.stop();
  await device?.stop();
  await stuckDevice?.stop();
  await nats?.stop();
  rmSync(TEXTFSM_DIR, { recursive: true, force: true });
});

/** Spawns the adapter with the http transport on port 0 and reads its URL from the start line. */
async function startAdapter(env: Record<string, string>): Promise<Adapter> {
  const child = spawn(process.execPath, [ADAPTER_MAIN], {
    env: {
      ...process.env,
      SVC_MCP_TRANSPORT: 'http',
      SVC_MCP_HTTP_HOST: '127.0.0.1',
      SVC_MCP_HTTP_PORT: '0',
      SVC_MCP_API_URL: stack.url,
      SVC_MCP_JOB_POLL_INTERVAL: '0.1',
      SVC_MCP_JOB_TIMEOUT: '30',
      LOG_LEVEL: 'INFO',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const stdout: string[] = [];
  child.stdout.on('data', (d: Buffer) => stdout.push(d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`adapter did not start: ${logs.join('')}`)),
      10_000,
    );
    child.stderr.on('data', (d: Buffer) => {
      logs.push(d.toString());
      const m = /"url":"(http:\/\/[^"]+)"/.exec(logs.join(''));
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`adapter exited ${code}: ${logs.join('')}`));
    });
  });
  assert.equal(stdout.join(''), '', 'nothing but MCP traffic may go to stdout');
  const adapter = { url, child, logs };
  adapters.push(adapter);
  return adapter;
}

async function stopAdapter(a: Adapter): Promise<void> {
  if (a.child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => a.child.once('exit', () => resolve()));
  a.child.kill('SIGTERM');
  const timer = setTimeout(() => a.child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

async function connect(a: Adapter, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'svc-mcp-http-test', version: '0.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(a.url), { requestInit: { headers } }),
  );
  clients.push(client);
  return client;
}

async function call(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<{ isError: boolean; out: Out }> {
  const r = await client.callTool({ name, arguments: args });
  const out = r.structuredContent as Out;
  assert.ok(out, `${name}: no structured content: ${JSON.stringify(r.content)}`);
  assert.deepEqual(JSON.parse((r.content as { text: string }[])[0]!.text), out);
  return { isError: r.isError === true, out };
}

function deviceArgs(d: SimulatedDevice, commands: string[], extra: Record<string, unknown> = {}) {
  return {
    host: d.host,
    port: d.port,
    platform: 'cisco_ios',
    username: d.username,
    password: d.password,
    enable: d.enable,
    commands,
    ...extra,
  };
}

function needKeys(t: { skip(message: string): void }): boolean {
  if (keysUnavailable === null) return true;
  t.skip(keysUnavailable);
  return false;
}

test('when a client connects over streamable HTTP, then it gets a session and the full catalogue', async () => {
  const client = await connect(operator);
  const { tools } = await client.listTools();
  // The same catalogue as over stdio: job, batch, configuration template and key tools.
  assert.equal(tools.length, 16);
  for (const name of [
    'send_command_structured',
    'run_batch',
    'get_batch',
    'cancel_batch',
    'list_batches',
    'list_config_templates',
    'render_config_template',
    'dry_run_config',
    'confirm_commit',
  ])
    assert.ok(
      tools.some((t) => t.name === name),
      name,
    );
  const { resources } = await client.listResources();
  assert.equal(resources.length, 4);
  const { prompts } = await client.listPrompts();
  assert.deepEqual(prompts.map((p) => p.name).sort(), [
    'config_push',
    'show_commands',
    'troubleshoot_device',
  ]);
  const health = await client.readResource({ uri: 'svc://health' });
  assert.equal(JSON.parse((health.contents[0] as { text: string }).text).status, 'healthy');
});

test('when a request has no session or a foreign Host, then the listener refuses it', async () => {
  const noSession = await http('POST', operator.url, {
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    headers: { accept: 'application/json, text/event-stream' },
  });
  assert.equal(noSession.status, 400);
  const unknown = await http('POST', operator.url, {
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    headers: { accept: 'application/json, text/event-stream', 'mcp-session-id': 'no-such-session' },
  });
  assert.equal(unknown.status, 404);
  // A DNS-rebinding page reaches 127.0.0.1 under its own name.
  const rebound = await http('POST', operator.url, {
    body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} },
    headers: { host: 'evil.example:80', accept: 'application/json, text/event-stream' },
  });
  assert.equal(rebound.status, 403);
  const foreignOrigin = await http('POST', operator.url, {
    body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} },
    headers: { origin: 'https://evil.example', accept: 'application/json, text/event-stream' },
  });
  assert.equal(foreignOrigin.status, 403);
});

test('when the listener binds an address not spelled as a loopback name, then Host and Origin are still checked; allowed names are configurable', async () => {
  const other = await startAdapter({
    SVC_MCP_API_KEY: keys.operator ?? 'not-a-key',
    SVC_MCP_HTTP_HOST: '127.0.0.2',
    SVC_MCP_HTTP_ALLOWED_HOSTS: 'mcp.lab.example',
  });
  const init = (headers: Record<string, string>) =>
    http('POST', other.url, {
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      headers: { accept: 'application/json, text/event-stream', ...headers },
    });
  assert.equal((await init({ host: 'evil.example' })).status, 403);
  assert.equal((await init({ origin: 'https://evil.example' })).status, 403);
  // The bound address and the configured name pass the check (then: no session yet, 400).
  assert.equal((await init({})).status, 400);
  assert.equal((await init({ host: 'mcp.lab.example:3000' })).status, 400);
  assert.equal((await init({ origin: 'https://mcp.lab.example' })).status, 400);
});

test('when the listener binds beyond loopback without SVC_MCP_HTTP_AUTH_TOKEN, then the adapter refuses to start', async () => {
  await assert.rejects(
    startAdapter({ SVC_MCP_API_KEY: keys.operator ?? 'not-a-key', SVC_MCP_HTTP_HOST: '0.0.0.0' }),
    /SVC_MCP_HTTP_AUTH_TOKEN/,
  );
  const tokened = await startAdapter({
    SVC_MCP_API_KEY: keys.operator ?? 'not-a-key',
    SVC_MCP_HTTP_HOST: '0.0.0.0',
    SVC_MCP_HTTP_AUTH_TOKEN: HTTP_TOKEN,
  });
  const port = new URL(tokened.url).port;
  const rebound = await http('POST', `http://127.0.0.1:${port}/mcp`, {
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    headers: {
      host: 'evil.example',
      authorization: `Bearer ${HTTP_TOKEN}`,
      accept: 'application/json, text/event-stream',
    },
  });
  assert.equal(rebound.status, 403);
});

test('when SVC_MCP_HTTP_AUTH_TOKEN is set, then only clients sending it get in', async () => {
  const guarded = await startAdapter({
    SVC_MCP_API_KEY: keys.operator ?? 'not-a-key',
    SVC_MCP_HTTP_AUTH_TOKEN: HTTP_TOKEN,
  });
  await assert.rejects(connect(guarded), /401|Unauthorized|bearer/i);
  await assert.rejects(
    connect(guarded, { authorization: 'Bearer wrong' }),
    /401|Unauthorized|bearer/i,
  );
  const client = await connect(guarded, { authorization: `Bearer ${HTTP_TOKEN}` });
  assert.equal((await client.listTools()).tools.length, 16);
});

test('when send_command runs over HTTP, then the tool waits for the job and returns its results', async (t) => {
  if (!needKeys(t)) return;
  const client = await connect(operator);
  const { isError, out } = await call(client, 'send_command', deviceArgs(device, ['show version']));
  assert.equal(isError, false, JSON.stringify(out));
  assert.equal(out.status, 'finished');
  assert.match(out.results['show version'], /Cisco IOS/);
  assert.equal(out.error_code, null);
});

test('when send_config and send_command_structured run over HTTP, then both end finished', async (t) => {
  if (!needKeys(t)) return;
  const client = await connect(operator);
  const saves = device.stats.saves;
  const config = await call(
    client,
    'send_config',
    deviceArgs(device, ['interface Loopback20', 'description over-http'], { save_config: true }),
  );
  assert.equal(config.isError, false, JSON.stringify(config.out));
  assert.equal(config.out.status, 'finished');
  assert.equal(device.stats.saves, saves + 1);
  const parsed = await call(
    client,
    'send_command_structured',
    deviceArgs(device, ['show ip interface brief']),
  );
  assert.equal(parsed.isError, false, JSON.stringify(parsed.out));
  const rows = parsed.out.results['show ip interface brief'];
  assert.ok(Array.isArray(rows) && rows.length > 0, JSON.stringify(rows));
});

test('when a viewer key calls send_command over HTTP, then it is a FORBIDDEN tool error', async (t) => {
  if (!needKeys(t)) return;
  const viewer = await connect(await startAdapter({ SVC_MCP_API_KEY: keys.viewer! }));
  const { isError, out } = await call(viewer, 'send_command', deviceArgs(device, ['show version']));
  assert.equal(isError, true);
  assert.equal(out.error_code, 'FORBIDDEN');
  assert.equal(out.error_retryable, false);
});

test('when a job is cancelled and listed over HTTP, then cancel_job and list_jobs report it', async (t) => {
  if (!needKeys(t)) return;
  const impatient = await connect(
    await startAdapter({ SVC_MCP_API_KEY: keys.operator!, SVC_MCP_JOB_TIMEOUT: '1.5' }),
  );
  const waited = await call(impatient, 'send_command', deviceArgs(stuckDevice, ['show clock']));
  assert.equal(waited.out.error_code, 'JOB_WAIT_TIMEOUT');
  const jobId = waited.out.job_id as string;

  const client = await connect(operator);
  const cancelled = await call(client, 'cancel_job', { job_id: jobId });
  assert.equal(cancelled.isError, false, JSON.stringify(cancelled.out));
  assert.equal(cancelled.out.status, 'cancelled');

  const listed = await call(client, 'list_jobs', { per_page: 100 });
  assert.equal(listed.isError, false, JSON.stringify(listed.out));
  assert.ok(listed.out.jobs.some((j: Out) => j.job_id === jobId));
});

test('when a client ends its session, then the adapter forgets it', async () => {
  const client = new Client({ name: 'svc-mcp-http-test', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(operator.url));
  await client.connect(transport);
  const sessionId = transport.sessionId;
  assert.ok(sessionId);
  await transport.terminateSession();
  await client.close();
  const after = await http('POST', operator.url, {
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    headers: { accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId },
  });
  assert.equal(after.status, 404);
});

test('when the adapters have run, then their logs never held a device password or an API key', () => {
  const logs = adapters.flatMap((a) => a.logs).join('');
  for (const secret of [device.password, HTTP_TOKEN, ...Object.values(keys)]) {
    assert.ok(!logs.includes(secret), 'a secret reached the adapter log');
  }
});
