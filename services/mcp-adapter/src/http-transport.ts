import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '@svc/telemetry';

export interface HttpTransportOptions {
  host: string;
  port: number;
  /** When non-empty, clients must send `Authorization: Bearer <authToken>`. */
  authToken: string;
  /** Host names (besides loopback and the bound address) accepted in Host and Origin. */
  allowedHosts?: readonly string[];
  /** A fresh MCP server per session: sessions share nothing but the API client. */
  createServer: () => McpServer;
  log: Logger;
}

export interface RunningHttpTransport {
  /** `http://host:port/mcp`. */
  readonly url: string;
  stop(): Promise<void>;
}

export const MCP_PATH = '/mcp';
/** Largest JSON-RPC POST body, bytes (the SDK's own default bound). */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/**
 * A session nobody touched for this long is closed: clients that vanish without DELETE must not
 * hold servers forever. Far above SVC_MCP_JOB_TIMEOUT's default, so a waiting tool is never cut.
 */
const SESSION_IDLE_MS = 60 * 60 * 1000;

interface Session {
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  lastSeen: number;
}

/**
 * Streamable HTTP (MCP 2025-03-26 and later) on node:http at `/mcp`, stateful: the initialize
 * POST creates a session (`Mcp-Session-Id`), later POST/GET/DELETE carry it. Whatever the bound
 * address, the listener rejects Host and Origin headers naming anything but loopback, the bound
 * address and the allowed names (DNS rebinding: a web page must not drive the adapter's API key
 * through the user's browser).
 */
export async function startHttpTransport(
  options: HttpTransportOptions,
): Promise<RunningHttpTransport> {
  const { log } = options;
  const sessions = new Map<string, Session>();
  const allowed = allowedNames(options.host, options.allowedHosts ?? []);
  const expectedAuth = options.authToken ? Buffer.from(`Bearer ${options.authToken}`) : null;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== MCP_PATH)
      return sendJson(res, 404, { error: `no route ${url.pathname}; use ${MCP_PATH}` });
    if (!isAllowedRequest(req, allowed)) {
      return sendRpcError(
        res,
        403,
        -32000,
        'forbidden Host or Origin (SVC_MCP_HTTP_ALLOWED_HOSTS)',
      );
    }
    if (expectedAuth && !sameSecret(req.headers.authorization, expectedAuth)) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      return sendRpcError(res, 401, -32001, 'missing or invalid bearer token');
    }
    const sessionId = header(req, 'mcp-session-id');
    let body: unknown;
    if (req.method === 'POST') {
      const parsed = await readJson(req);
      if (!parsed.ok) return sendRpcError(res, parsed.status, -32700, parsed.message);
      body = parsed.value;
    }
    if (sessionId !== undefined) {
      const session = sessions.get(sessionId);
      if (!session) return sendRpcError(res, 404, -32001, 'unknown or expired session');
      session.lastSeen = Date.now();
      return session.transport.handleRequest(req, res, body);
    }
    const initialize = Array.isArray(body)
      ? body.some((m) => isInitializeRequest(m))
      : isInitializeRequest(body);
    if (req.method !== 'POST' || !initialize) {
      return sendRpcError(res, 400, -32000, 'no Mcp-Session-Id: send an initialize request first');
    }
    const server = options.createServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server, lastSeen: Date.now() });
        log.info({ session: id, sessions: sessions.size }, 'mcp session opened');
      },
    });
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id !== undefined && sessions.delete(id)) log.info({ session: id }, 'mcp session closed');
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };

  const http: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log.error({ err }, 'mcp http request failed');
      if (!res.headersSent) sendRpcError(res, 500, -32603, 'internal error');
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const address = http.address() as AddressInfo;
  const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${hostPart}:${address.port}${MCP_PATH}`;

  const sweeper = setInterval(() => {
    const cutoff = Date.now() - SESSION_IDLE_MS;
    for (const [id, session] of sessions) {
      if (session.lastSeen >= cutoff) continue;
      log.info({ session: id }, 'mcp session idle, closing');
      void session.server.close().catch(() => undefined);
    }
  }, 60_000);
  sweeper.unref();

  return {
    url,
    async stop() {
      clearInterval(sweeper);
      for (const { server } of [...sessions.values()]) await server.close().catch(() => undefined);
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function hostnameOf(hostHeader: string): string {
  try {
    return new URL(`http://${hostHeader}`).hostname;
  } catch {
    return '';
  }
}

/** The names Host and Origin may carry: loopback, the bound address (unless a wildcard), more. */
function allowedNames(bind: string, more: readonly string[]): Set<string> {
  const names = new Set(LOOPBACK_NAMES);
  const b = bind.toLowerCase();
  if (b !== '' && b !== '0.0.0.0' && b !== '::') names.add(b.includes(':') ? `[${b}]` : b);
  for (const name of more) if (name.trim() !== '') names.add(name.trim().toLowerCase());
  return names;
}

function isAllowedRequest(req: IncomingMessage, allowed: ReadonlySet<string>): boolean {
  const host = req.headers.host;
  if (host !== undefined && !allowed.has(hostnameOf(host))) return false;
  const origin = header(req, 'origin');
  if (origin === undefined || origin === 'null') return origin === undefined;
  try {
    return allowed.has(new URL(origin).hostname);
  } catch {
    return false;
  }
}

/** Whether the listener's address is loopback (a name spelled otherwise included). */
export function isLoopbackBind(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\./.test(h) || /^::ffff:127\./.test(h);
}

function sameSecret(given: string | undefined, expected: Buffer): boolean {
  const g = Buffer.from(given ?? '');
  return g.length === expected.length && timingSafeEqual(g, expected);
}

async function readJson(
  req: IncomingMessage,
): Promise<{ ok: true; value: unknown } | { ok: false; status: number; message: string }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return { ok: false, status: 413, message: 'request body too large' };
    chunks.push(chunk);
  }
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown };
  } catch {
    return { ok: false, status: 400, message: 'parse error: the body is not JSON' };
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function sendRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id: null });
}
