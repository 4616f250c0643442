import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { CliError, ExitCode, exitCodeForStatus } from './exit-codes.js';
import type { ConnectionSettings } from './settings.js';

/** How a request authenticates: as the caller (key or device Basic), or as key administrator. */
export type AuthMode = 'caller' | 'admin';

export interface ApiAnswer {
  status: number;
  // Bodies are the API's JSON; each command reads the fields it prints.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** Per-request timeout, ms: one request, not the wait for a job. */
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * The REST API as the CLI uses it. A non-2xx answer becomes a `CliError` with the exit code of
 * its status and the API's message (or its validation issues, one per line).
 */
export class ApiClient {
  private readonly base: URL;

  constructor(private readonly settings: ConnectionSettings) {
    this.base = new URL(settings.url.endsWith('/') ? settings.url : `${settings.url}/`);
  }

  /** Whether device credentials travel in the body (Bearer key) rather than as Basic. */
  get usesApiKey(): boolean {
    return this.settings.apiKey !== null;
  }

  private authorization(mode: AuthMode): string | null {
    const s = this.settings;
    if (mode === 'admin' && s.adminSecret !== null) {
      return 'Basic ' + Buffer.from(`admin:${s.adminSecret}`).toString('base64');
    }
    if (s.apiKey !== null) return `Bearer ${s.apiKey}`;
    if (s.username !== null && s.password !== null) {
      return 'Basic ' + Buffer.from(`${s.username}:${s.password}`).toString('base64');
    }
    return null;
  }

  async request(
    method: string,
    path: string,
    options: {
      body?: unknown;
      query?: Record<string, string | number | undefined>;
      auth?: AuthMode | 'none';
      /** Non-2xx statuses returned instead of thrown (e.g. 503 of /healthcheck). */
      accept?: number[];
    } = {},
  ): Promise<ApiAnswer> {
    const url = new URL(path.replace(/^\//, ''), this.base);
    for (const [k, v] of Object.entries(options.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': 'svc-cli/1',
    };
    const mode = options.auth ?? 'caller';
    if (mode !== 'none') {
      const auth = this.authorization(mode);
      if (auth === null) {
        throw new CliError(
          ExitCode.usage,
          mode === 'admin'
            ? 'no credentials: set SVC_ADMIN_SECRET (or --admin-secret) or an admin SVC_API_KEY'
            : 'no credentials: set SVC_API_KEY, or SVC_USERNAME and SVC_PASSWORD (see svc --help)',
        );
      }
      headers['authorization'] = auth;
    }
    let payload: string | undefined;
    if (options.body !== undefined) {
      payload = JSON.stringify(options.body);
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    // The gateway refuses a write that does not say JSON, even without a body (415).
    if (payload !== undefined || ['POST', 'PUT', 'PATCH'].includes(method)) {
      headers['content-type'] = 'application/json';
    }
    const https = url.protocol === 'https:';
    const requester = https ? httpsRequest : httpRequest;
    const tls = https
      ? {
          ...(this.settings.ca !== null ? { ca: this.settings.ca } : {}),
          rejectUnauthorized: !this.settings.insecure,
        }
      : {};
    const { status, text } = await new Promise<{ status: number; text: string }>(
      (resolve, reject) => {
        const req = requester(url, { method, headers, ...tls }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        });
        req.setTimeout(REQUEST_TIMEOUT_MS, () =>
          req.destroy(new Error(`no answer in ${REQUEST_TIMEOUT_MS / 1000} s`)),
        );
        req.on('error', (err: NodeJS.ErrnoException) =>
          reject(
            new CliError(
              ExitCode.unreachable,
              `cannot reach ${url.origin}: ${err.code ?? err.message}${tlsHint(err)}`,
              { cause: err },
            ),
          ),
        );
        req.end(payload);
      },
    );
    let body: unknown = null;
    if (text !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    if ((status >= 200 && status < 300) || options.accept?.includes(status))
      return { status, body };
    throw new CliError(
      exitCodeForStatus(status),
      `${method} ${url.pathname}: ${status} ${describe(body)}`,
    );
  }
}

function tlsHint(err: NodeJS.ErrnoException): string {
  const code = err.code ?? '';
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) {
    return ' (give the service CA with --ca-file or SVC_CA_FILE; --insecure skips the check)';
  }
  return '';
}

/** The API's error text: `message`, or the validation issues (SPEC error shapes). */
function describe(body: unknown): string {
  if (typeof body === 'string') return body.slice(0, 500);
  if (typeof body !== 'object' || body === null) return '';
  const b = body as Record<string, unknown>;
  const issues = (b['validation_error'] as { json?: unknown } | undefined)?.json;
  if (Array.isArray(issues)) {
    return issues
      .map(
        (i: { loc?: unknown[]; msg?: string }) => `\n  ${(i.loc ?? []).join('.')}: ${i.msg ?? ''}`,
      )
      .join('');
  }
  if (typeof b['message'] === 'string') return b['message'];
  if (typeof b['detail'] === 'string') return b['detail'];
  return JSON.stringify(body).slice(0, 500);
}
