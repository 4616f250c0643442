import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '@svc/proto';
import { loadMcpAdapterConfig } from '../src/config.js';
import { splitCommands } from '../src/prompts.js';

test("when nothing is set, then the specification defaults apply, and the API address is npm start's gateway", () => {
  const c = loadMcpAdapterConfig({});
  // Not the specification's http://localhost:8080: no svc listener has that address by default.
  assert.equal(c.SVC_MCP_API_URL, 'https://127.0.0.1:8443');
  assert.equal(c.SVC_MCP_CA_FILE, '');
  assert.equal(c.SVC_DATA_DIR, '.svc-data');
  assert.equal(c.SVC_MCP_TIMEOUT, 30);
  assert.equal(c.SVC_MCP_JOB_POLL_INTERVAL, 2);
  assert.equal(c.SVC_MCP_JOB_TIMEOUT, 300);
  assert.equal(c.SVC_MCP_TRANSPORT, 'stdio');
  assert.equal(c.SVC_MCP_HTTP_HOST, '127.0.0.1');
  assert.equal(c.SVC_MCP_INSECURE_TLS, false);
  assert.ok(Object.isFrozen(c));
});

test('when values are set, then they are converted by type', () => {
  const c = loadMcpAdapterConfig({
    SVC_MCP_TRANSPORT: 'http',
    SVC_MCP_HTTP_PORT: '0',
    SVC_MCP_JOB_POLL_INTERVAL: '0.25',
    SVC_MCP_INSECURE_TLS: 'true',
  });
  assert.equal(c.SVC_MCP_TRANSPORT, 'http');
  assert.equal(c.SVC_MCP_HTTP_PORT, 0);
  assert.equal(c.SVC_MCP_JOB_POLL_INTERVAL, 0.25);
  assert.equal(c.SVC_MCP_INSECURE_TLS, true);
});

for (const [name, value] of [
  ['SVC_MCP_TRANSPORT', 'sse'],
  ['SVC_MCP_TIMEOUT', '0'],
  ['SVC_MCP_JOB_TIMEOUT', 'soon'],
  ['SVC_MCP_HTTP_PORT', '70000'],
  ['SVC_MCP_API_URL', 'ftp://svc'],
] as const) {
  test(`when ${name}=${value}, then loading fails naming the variable`, () => {
    assert.throws(
      () => loadMcpAdapterConfig({ [name]: value }),
      (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.startsWith(name)),
    );
  });
}

test('when prompt commands are comma-separated, then they are trimmed and empty items dropped', () => {
  assert.deepEqual(splitCommands(' show version, show ip route ,, '), [
    'show version',
    'show ip route',
  ]);
});
