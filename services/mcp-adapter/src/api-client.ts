import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { AdapterError, AdapterErrorCode, codeForStatus } from './errors.js';

export interface ApiClientOptions {
  /** Base address, e.g. `https://svc.example.net:8443` (a path prefix is kept). */
  baseUrl: string;
  /** Bearer token. Never logged. */
  apiKey: string;
  /**
   * The admin secret (Basic `admin:<secret>`) for key management requests, found in the local
   * data dir for a loopback API; the API key is used when absent. Never logged.
   */
  adminSecret?: string;
  /** Per-request timeout, ms. */
  timeoutMs: number;
  /** PEM CA the API certificate must chain to (HTTPS only). */
  ca?: string | Buffer | string[];
  /** Accept any certificate (the service's self-signed one); HTTPS only. */
  insecureTls?: boolean;
  /** Sent as User-Agent so the API's logs show who called. */
  userAgent?: string;
}

export interface ApiRequest {
  /** JSON body. */
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  /** Statuses, beyond 2xx, whose body is returned instead of thrown (e.g. 503 of /healthcheck). */
  accept?: readonly number[];
  signal?: AbortSignal;
  /** More request headers (the command policy asked for). */
  headers?: Record<string, string>;
  /** `admin`: key management, with the admin secret when there is one. */
  auth?: 'admin';
}

export interface ApiResponse {
  status: number;
  /** Parsed JSON body; null when empty (204). */
  body: unknown;
}

/** Largest API answer read, bytes; job results of many commands stay far below. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

/**
 * The REST API as the adapter uses it: Bearer authentication, JSON in and out, a timeout per
 * request, and every non-2xx answer turned into an `AdapterError` carrying the API's message,
 * its `error_code` when the body has one, and an adapter code otherwise.
 */
export class ApiClient {
  private readonly base: URL;

  constructor(private readonly options: ApiClientOptions) {
    // A trailing slash lets `new URL('v2/…', base)` keep a path prefix such as /svc/.
    this.base = new URL(options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
  }

  get baseUrl(): string {
    return this.base.href;
  }

  /** Whether key management requests go with the admin secret. */
  get hasAdminSecret(): boolean {
    return Boolean(this.options.adminSecret);
  }

  async request(method: string, path: string, req: ApiRequest = {}): Promise<ApiResponse> {
    const url = new URL(path.replace(/^\//, ''), this.base);
    for (const [k, v] of Object.entries(req.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization:
        req.auth === 'admin' && this.options.adminSecret
          ? 'Basic ' + Buffer.from(`admin:${this.options.adminSecret}`).toString('base64')
          : `Bearer ${this.options.apiKey}`,
      'user-agent': this.options.userAgent ?? 'svc-mcp',
      ...req.headers,
    };
    if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload));
    // The gateway refuses a write that does not say JSON, even without a body (415).
    if (payload !== undefined || ['POST', 'PUT', 'PATCH'].includes(method)) {
      headers['content-type'] = 'application/json';
    }
    const {
      status,
      headers: resHeaders,
      text,
    } = await this.send(method, url, headers, payload, req.signal);
    const body = parseBody(text, status, method, url.pathname);
    if ((status >= 200 && status < 300) || req.accept?.includes(status)) return { status, body };
    throw apiError(status, body, resHeaders['retry-after']);
  }

  get(path: string, req?: ApiRequest): Promise<ApiResponse> {
    return this.request('GET', path, req);
  }

  post(path: string, body: unknown, req: Omit<ApiRequest, 'body'> = {}): Promise<ApiResponse> {
    return this.request('POST', path, { ...req, body });
  }

  delete(path: string, req?: ApiRequest): Promise<ApiResponse> {
    return this.request('DELETE', path, req);
  }

  private send(
    method: string,
    url: URL,
    headers: Record<string, string>,
    payload: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ status: number; headers: IncomingMessage['headers']; text: string }> {
    const https = url.protocol === 'https:';
    const requester = https ? httpsRequest : httpRequest;
    const tls = https
      ? {
          rejectUnauthorized: !this.options.insecureTls,
          ...(this.options.ca !== undefined ? { ca: this.options.ca } : {}),
        }
      : {};
    const where = `${method} ${url.pathname}`;
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (err: AdapterError | Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(err);
      };
      const req = requester(url, { method, headers, ...tls }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_BODY_BYTES) {
            req.destroy();
            fail(
              AdapterError.of(
                AdapterErrorCode.BAD_RESPONSE,
                `${where}: answer larger than ${MAX_BODY_BYTES} bytes`,
              ),
            );
            return;
          }
          chunks.push(c);
        });
        res.on('error', (err) => fail(unreachable(where, err)));
        res.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          });
        });
      });
      const timer = setTimeout(() => {
        req.destroy();
        fail(
          AdapterError.of(
            AdapterErrorCode.REQUEST_TIMEOUT,
            method === 'POST'
              ? `${where}: no answer within ${this.options.timeoutMs} ms; the request may still have been accepted`
              : `${where}: no answer within ${this.options.timeoutMs} ms`,
          ),
        );
      }, this.options.timeoutMs);
      const onAbort = () => {
        req.destroy();
        // Named like the AbortError of fetch and timers, so callers tell a cancel from a failure.
        const aborted = new Error(`${where}: aborted by the caller`);
        aborted.name = 'AbortError';
        fail(aborted);
      };
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', (err) => fail(unreachable(where, err)));
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }
}

function unreachable(where: string, err: Error): AdapterError {
  const code = (err as NodeJS.ErrnoException).code;
  return AdapterError.of(
    AdapterErrorCode.API_UNREACHABLE,
    `${where}: cannot reach the API (${code ?? err.message})`,
    {},
    { cause: err },
  );
}

function parseBody(text: string, status: number, method: string, path: string): unknown {
  if (text.length === 0) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw AdapterError.of(
      AdapterErrorCode.BAD_RESPONSE,
      `${method} ${path}: HTTP ${status} with a body that is not JSON`,
      { httpStatus: status },
      { cause: err },
    );
  }
}

function apiError(
  status: number,
  body: unknown,
  retryAfter: string | string[] | undefined,
): AdapterError {
  const fields = isRecord(body) ? body : {};
  const apiMessage = typeof fields['message'] === 'string' ? fields['message'] : `HTTP ${status}`;
  const validation = isRecord(fields['validation_error'])
    ? fields['validation_error']['json']
    : undefined;
  const message =
    validation !== undefined ? `${apiMessage}: ${describeIssues(validation)}` : apiMessage;
  const seconds = Number(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
  const details = {
    httpStatus: status,
    ...(Number.isFinite(seconds) && seconds >= 0 ? { retryAfterSeconds: seconds } : {}),
    ...(validation !== undefined ? { validation } : {}),
  };
  // A code from the API (e.g. DEVICE_LOCKED_OUT on a 403) is more precise than the status.
  if (typeof fields['error_code'] === 'string') {
    const retryable =
      typeof fields['error_retryable'] === 'boolean' ? fields['error_retryable'] : null;
    return new AdapterError(fields['error_code'], message, retryable, details);
  }
  return AdapterError.of(codeForStatus(status), message, details);
}

/** `body.port: Input should be a valid integer; …`: short enough for an assistant to act on. */
function describeIssues(issues: unknown): string {
  if (!Array.isArray(issues)) return 'invalid request';
  return issues
    .map((i: unknown) => {
      if (!isRecord(i)) return String(i);
      const loc = Array.isArray(i['loc']) ? i['loc'].join('.') : '';
      return `${loc}: ${typeof i['msg'] === 'string' ? i['msg'] : 'invalid'}`;
    })
    .join('; ');
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
