import { readFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ConfigError, localDataDir, localService } from '@svc/proto';
import { type Logger } from '@svc/telemetry';
import { ApiClient } from './api-client.js';
import type { McpAdapterConfig } from './config.js';
import { isLoopbackBind, startHttpTransport } from './http-transport.js';
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

/**
 * The API client the settings describe; reads the CA file once, failing at start if absent.
 * For a loopback API address (`npm start`'s gateway) it finds what `npm start` keeps in
 * SVC_DATA_DIR, as the `svc` CLI does: the self-signed certificate, trusted beside the system
 * CAs when SVC_MCP_CA_FILE is empty, and the admin secret, with which the key tools manage keys.
 */
export function apiClientFrom(config: Readonly<McpAdapterConfig>): ApiClient {
  const local = localService(config.SVC_MCP_API_URL, localDataDir(config.SVC_DATA_DIR));
  const ca = config.SVC_MCP_CA_FILE ? readFileSync(config.SVC_MCP_CA_FILE) : local?.ca;
  return new ApiClient({
    baseUrl: config.SVC_MCP_API_URL,
    apiKey: config.SVC_MCP_API_KEY,
    ...(local?.adminSecret ? { adminSecret: local.adminSecret } : {}),
    timeoutMs: config.SVC_MCP_TIMEOUT * 1000,
    insecureTls: config.SVC_MCP_INSECURE_TLS,
    ...(ca ? { ca } : {}),
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
  if (!config.SVC_MCP_API_KEY && !api.hasAdminSecret) {
    throw new ConfigError([
      'SVC_MCP_API_KEY: required (an API key of the service); only with a loopback API address and the admin secret `npm start` keeps in SVC_DATA_DIR/admin.env may it be empty (the key tools then work, the others answer 401)',
    ]);
  }
  const newServer = () => createMcpServer(config, { api, log });
  if (config.SVC_MCP_INSECURE_TLS && api.baseUrl.startsWith('https:')) {
    log.warn('SVC_MCP_INSECURE_TLS: the API certificate is not verified');
  }

  if (config.SVC_MCP_TRANSPORT === 'http') {
    // Whoever reaches the listener acts with the adapter's API key.
    if (!config.SVC_MCP_HTTP_AUTH_TOKEN && !isLoopbackBind(config.SVC_MCP_HTTP_HOST)) {
      throw new ConfigError([
        `SVC_MCP_HTTP_HOST ${config.SVC_MCP_HTTP_HOST} is not loopback and SVC_MCP_HTTP_AUTH_TOKEN is empty: anyone who reaches the listener would act with the adapter's API key. Set SVC_MCP_HTTP_AUTH_TOKEN or bind 127.0.0.1.`,
      ]);
    }
    const http = await startHttpTransport({
      host: config.SVC_MCP_HTTP_HOST,
      port: config.SVC_MCP_HTTP_PORT,
      authToken: config.SVC_MCP_HTTP_AUTH_TOKEN,
      allowedHosts: config.SVC_MCP_HTTP_ALLOWED_HOSTS,
      createServer: newServer,
      log,
    });
    log.info({ url: http.url, api: api.baseUrl }, 'mcp http listening');
    return { url: http.url, stop: () => http.stop() };
  }

  const server = newServer();
  const transport = new StdioServerTransport(deps.stdin, deps.stdout);
  await server.connect(transport);
  log.info({ api: api.baseUrl }, 'mcp stdio ready');
  return { url: null, stop: () => server.close() };
}
