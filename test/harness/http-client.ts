import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import assert from 'node:assert/strict';
import { waitUntil } from './wait.js';

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  // Test bodies are asserted field by field.
  json: any;
}

export interface HttpOptions {
  headers?: Record<string, string>;
  /** Sent as JSON unless already a string. */
  body?: unknown;
  /** Basic credentials. */
  basic?: { username: string; password: string };
  bearer?: string;
  /** Give up after this many ms (a client's own timeout); 30 s when absent. */
  timeoutMs?: number;
}

/** A real HTTP(S) request; self-signed certificates are accepted (tests only). */
export async function http(
  method: string,
  url: string,
  options: HttpOptions = {},
): Promise<HttpAnswer> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.basic) {
    headers['authorization'] =
      'Basic ' +
      Buffer.from(`${options.basic.username}:${options.basic.password}`).toString('base64');
  }
  if (options.bearer) headers['authorization'] = `Bearer ${options.bearer}`;
  let payload: string | undefined;
  if (options.body !== undefined) {
    payload = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  // As a client of this API: every write says JSON, with or without a body.
  if (['POST', 'PUT', 'PATCH'].includes(method)) headers['content-type'] ??= 'application/json';
  const u = new URL(url);
  const requester = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = requester(u, { method, headers, rejectUnauthorized: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    // A test must fail with a reason, never hang: no request waits longer than 30 s.
    const timeoutMs = options.timeoutMs ?? 30_000;
    req.setTimeout(timeoutMs, () =>
      req.destroy(new Error(`${method} ${url}: no answer in ${timeoutMs} ms`)),
    );
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** Polls a job until it reaches a terminal status or the deadline passes. */
export async function waitForJob(
  baseUrl: string,
  jobId: string,
  auth: HttpOptions,
  timeoutMs = 30_000,
): Promise<HttpAnswer> {
  let status: string | undefined;
  return waitUntil(
    async () => {
      const answer = await http('GET', `${baseUrl}/v2/send-command/${jobId}`, auth);
      status = (answer.json as { status?: string } | undefined)?.status;
      return (status === 'finished' || status === 'failed' || status === 'cancelled') && answer;
    },
    `job ${jobId} to end`,
    { timeoutMs, everyMs: 50 },
  ).catch((err: unknown) => {
    throw new Error(`job ${jobId} still ${String(status)} after ${timeoutMs} ms`, { cause: err });
  });
}

/**
 * Submits one command for a device (`POST /v2/send-command`), asserts the 202 and returns the
 * job id.
 */
export async function submitCommand(
  baseUrl: string,
  auth: HttpOptions,
  device: { host: string; port: number },
  command: string,
  platform = 'cisco_ios',
): Promise<string> {
  const answer = await http('POST', `${baseUrl}/v2/send-command`, {
    ...auth,
    body: { host: device.host, port: device.port, platform, commands: [command] },
  });
  assert.equal(answer.status, 202, answer.text);
  return answer.json.job_id as string;
}
