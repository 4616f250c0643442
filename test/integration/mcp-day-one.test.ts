// svc-mcp on day one (issue 24, finding 5): for a loopback API address it finds the admin
// secret `npm start` keeps in <SVC_DATA_DIR>/admin.env, as the `svc` CLI does, so its key tools
// work with no admin key. A real stack; the adapter is a child process spoken to over stdio.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

const ADAPTER_MAIN = fileURLToPath(
  new URL('../../../services/mcp-adapter/dist/src/main.js', import.meta.url),
);
const ADMIN_SECRET = 'mcp-day-one-admin-secret';

let nats: NatsServerProcess;
let stack: InProcessStack;
let dataDir: string;
const clients: Client[] = [];

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url, { env: { SVC_ADMIN_SECRET: ADMIN_SECRET } });
  await waitHealthy(stack.url);
  dataDir = await mkdtemp(join(tmpdir(), 'svc-mcp-day-one-'));
  // What `npm start` writes when no admin secret is set.
  await writeFile(join(dataDir, 'admin.env'), `SVC_ADMIN_SECRET=${ADMIN_SECRET}\n`, {
    mode: 0o600,
  });
});

after(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await stack?.stop();
  await nats?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

async function connectAdapter(env: Record<string, string>): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [ADAPTER_MAIN],
    env: { SVC_MCP_API_URL: stack.url, LOG_LEVEL: 'ERROR', ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'svc-mcp-day-one', version: '0.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<any> {
  const answer = await client.callTool({ name, arguments: args });
  const text = (answer.content as { type: string; text: string }[])[0]?.text ?? '';
  return { isError: answer.isError === true, out: JSON.parse(text) as Record<string, unknown> };
}

test('when svc-mcp runs against a loopback API with no API key and admin.env in SVC_DATA_DIR, then its key tools create and revoke keys with that secret', async () => {
  const adapter = await connectAdapter({ SVC_DATA_DIR: dataDir });
  const created = await call(adapter, 'create_api_key', { role: 'viewer', ttl: 600 });
  assert.equal(created.isError, false, JSON.stringify(created.out));
  assert.equal(created.out.role, 'viewer');
  const token = created.out.token as string;
  const health = await http('GET', `${stack.url}/v2/contexts`, { bearer: token });
  assert.equal(health.status, 200);

  const revoked = await call(adapter, 'revoke_api_key', { key_id: created.out.key_id });
  assert.equal(revoked.isError, false, JSON.stringify(revoked.out));
  const after = await http('GET', `${stack.url}/v2/contexts`, { bearer: token });
  assert.equal(after.status, 401);
});

test('when the API key is not an admin key, then the local admin secret still manages keys', async () => {
  const viewer = await http('POST', `${stack.url}/v2/api-keys`, {
    basic: { username: 'admin', password: ADMIN_SECRET },
    body: { role: 'viewer', ttl: 600 },
  });
  assert.equal(viewer.status, 201, viewer.text);
  const adapter = await connectAdapter({
    SVC_MCP_API_KEY: viewer.json.token as string,
    SVC_DATA_DIR: dataDir,
  });
  const created = await call(adapter, 'create_api_key', { role: 'operator', ttl: 600 });
  assert.equal(created.isError, false, JSON.stringify(created.out));
  // Every other tool acts as the API key (a viewer may list jobs).
  const jobs = await call(adapter, 'list_jobs', {});
  assert.equal(jobs.isError, false, JSON.stringify(jobs.out));
});

test('when the data dir has no admin.env, then the key tools act with the API key alone', async () => {
  const empty = await mkdtemp(join(tmpdir(), 'svc-mcp-empty-'));
  try {
    const adapter = await connectAdapter({ SVC_MCP_API_KEY: 'not-a-key', SVC_DATA_DIR: empty });
    const created = await call(adapter, 'create_api_key', { role: 'viewer', ttl: 600 });
    assert.equal(created.isError, true);
    assert.equal(created.out.http_status, 401, JSON.stringify(created.out));
  } finally {
    await rm(empty, { recursive: true, force: true });
  }
});
