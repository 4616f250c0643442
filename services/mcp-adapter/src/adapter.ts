import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ConfigError, type Logger } from '@svc/proto';
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

/** The API client the settings describe; reads the CA file once, failing at start if absent. */
export function apiClientFrom(config: Readonly<McpAdapterConfig>): ApiClient {
  const ca = trustedCa(config);
  return new ApiClient({
    baseUrl: config.SVC_MCP_API_URL,
    apiKey: config.SVC_MCP_API_KEY,
    timeoutMs: config.SVC_MCP_TIMEOUT * 1000,
    insecureTls: config.SVC_MCP_INSECURE_TLS,
    ...(ca === undefined ? {} : { ca }),
    userAgent: `${ADAPTER_NAME}/${ADAPTER_VERSION}`,
  });
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * SVC_MCP_CA_FILE when set. Otherwise, for an HTTPS API on loopback (`npm start`'s gateway),
 * the system CAs plus the self-signed certificate the gateway keeps in SVC_DATA_DIR, when it is
 * there: it names only localhost and the loopback addresses, so it vouches for nothing else.
 */
function trustedCa(config: Readonly<McpAdapterConfig>): Buffer | string[] | undefined {
  if (config.SVC_MCP_CA_FILE) return readFileSync(config.SVC_MCP_CA_FILE);
  const url = new URL(config.SVC_MCP_API_URL);
  if (url.protocol !== 'https:' || !LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  try {
    const local = readFileSync(join(config.SVC_DATA_DIR, 'tls', 'cert.pem'), 'utf8');
    return [...rootCertificates, local];
  } catch {
    return undefined; // no local gateway certificate: the system CAs alone
  }
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
