import { readFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Logger } from '@svc/proto';
import { ApiClient } from './api-client.js';
import type { McpAdapterConfig } from './config.js';
import { startHttpTransport } from './http-transport.js';
import { ADAPTER_NAME, ADAPTER_VERSION, createMcpServer } from './server.js';

export interface McpAdapterDeps {
  log: Logger;
  /** The stdio transport's streams; the process's own by default. */
  stdin?: Readable;
  stdout?: Writable;
}

export interface RunningMcpAdapter {
  /** The streamable-HTTP endpoint, when that transport runs. */
  readonly url: string | null;
  stop(): Promise<void>;
}

/** The API client the settings describe; reads the CA file once, failing at start if absent. */
export function apiClientFrom(config: Readonly<McpAdapterConfig>): ApiClient {
  return new ApiClient({
    baseUrl: config.SVC_MCP_API_URL,
    apiKey: config.SVC_MCP_API_KEY,
    timeoutMs: config.SVC_MCP_TIMEOUT * 1000,
    insecureTls: config.SVC_MCP_INSECURE_TLS,
    ...(config.SVC_MCP_CA_FILE ? { ca: readFileSync(config.SVC_MCP_CA_FILE) } : {}),
    userAgent: `${ADAPTER_NAME}/${ADAPTER_VERSION}`,
  });
}

/** Starts the adapter on the configured transport. */
export async function startMcpAdapter(
  config: Readonly<McpAdapterConfig>,
  deps: McpAdapterDeps,
): Promise<RunningMcpAdapter> {
  const { log } = deps;
  const api = apiClientFrom(config);
  const newServer = () => createMcpServer(config, { api, log });
  if (config.SVC_MCP_INSECURE_TLS && api.baseUrl.startsWith('https:')) {
    log.warn('SVC_MCP_INSECURE_TLS: the API certificate is not verified');
  }

  if (config.SVC_MCP_TRANSPORT === 'http') {
    const http = await startHttpTransport({
      host: config.SVC_MCP_HTTP_HOST,
      port: config.SVC_MCP_HTTP_PORT,
      authToken: config.SVC_MCP_HTTP_AUTH_TOKEN,
      createServer: newServer,
      log,
    });
    if (
      !config.SVC_MCP_HTTP_AUTH_TOKEN &&
      !['127.0.0.1', 'localhost', '::1'].includes(config.SVC_MCP_HTTP_HOST)
    ) {
      log.warn(
        { host: config.SVC_MCP_HTTP_HOST },
        'mcp http listener is not loopback and has no SVC_MCP_HTTP_AUTH_TOKEN',
      );
    }
    log.info({ url: http.url, api: api.baseUrl }, 'mcp http listening');
    return { url: http.url, stop: () => http.stop() };
  }

  const server = newServer();
  const transport = new StdioServerTransport(deps.stdin, deps.stdout);
  await server.connect(transport);
  log.info({ api: api.baseUrl }, 'mcp stdio ready');
  return { url: null, stop: () => server.close() };
}
