import { createHmac } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { canonicalIp } from '@svc/proto';
import type { AddressPolicy } from '@svc/proto';

/** Header carrying `sha256=<hex HMAC-SHA256 of the raw body>` under the webhook secret. */
export const SIGNATURE_HEADER = 'X-Svc-Signature-256';
/** Unix seconds of the delivery, so receivers can refuse stale deliveries. */
export const TIMESTAMP_HEADER = 'X-Svc-Timestamp';

export function signWebhook(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

/** What became of one webhook (for tests; no sender waits for it on a job's path). */
export type WebhookOutcome = 'none' | 'delivered' | 'refused' | 'failed';

/**
 * One attempt, for the caller's log line. `stage` says where it stopped; `target` is the origin
 * only (a URL's path, query and user info may carry tokens); `reason` may echo what the target
 * answered, with the URL's user info, query and the signing secret already removed.
 */
export interface WebhookAttempt {
  outcome: Exclude<WebhookOutcome, 'none'>;
  stage: 'url' | 'scheme' | 'address' | 'delivery';
  target?: string;
  scheme?: string;
  reason?: string;
  status?: number;
  durationMs?: number;
}

export interface WebhookSenderOptions {
  /** WEBHOOK_ALLOW_HTTP */
  allowHttp: boolean;
  /** From WEBHOOK_ALLOW_NETWORKS (`webhookNetworkPolicy`). */
  policy: AddressPolicy;
  /** WEBHOOK_TIMEOUT, milliseconds. */
  timeoutMs: number;
}

/**
 * A resolver for the webhook request that checks the address it hands to the socket: the
 * connection goes to exactly the address that was checked (no second resolution).
 */
function checkedLookup(policy: AddressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true }, (err, found: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const first = found.find((a) => a.family === 4) ?? found[0];
      const address = first ? canonicalIp(first.address) : null;
      if (!first || address === null) {
        return callback(Object.assign(new Error('no address'), { code: 'ENOTFOUND' }), '', 0);
      }
      const verdict = policy.check('', hostname, address);
      if (!verdict.allowed) {
        return callback(
          Object.assign(new Error(verdict.reason), { code: 'ADDRESS_NOT_ALLOWED' }),
          '',
          0,
        );
      }
      const family = address.includes(':') ? 6 : 4;
      if (options.all === true) callback(null, [{ address, family }]);
      else callback(null, address, family);
    });
  };
}

/**
 * The one webhook sender of job (device actor) and batch (gateway) webhooks: one signed POST,
 * no retries (SPEC: fire-and-forget). Scheme and address policy are checked again here, on the
 * address the request connects to, whatever was checked at submission.
 */
export function webhookSender(
  options: WebhookSenderOptions,
): (target: string, body: string, secret: string | null) => Promise<WebhookAttempt> {
  const lookup = checkedLookup(options.policy);
  const allowed = options.allowHttp ? ['https:', 'http:'] : ['https:'];
  return async (target, body, secret) => {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return { outcome: 'refused', stage: 'url' };
    }
    if (!allowed.includes(url.protocol)) {
      return { outcome: 'refused', stage: 'scheme', scheme: url.protocol };
    }
    const origin = url.origin;
    const literal = canonicalIp(url.hostname);
    const verdict = literal !== null ? options.policy.check('', literal, literal) : null;
    if (verdict && !verdict.allowed) {
      return { outcome: 'refused', stage: 'address', target: origin, reason: verdict.reason };
    }
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': 'svc-webhook/1',
      [TIMESTAMP_HEADER]: String(Math.floor(Date.now() / 1000)),
    };
    if (secret) headers[SIGNATURE_HEADER] = signWebhook(body, secret);
    const started = performance.now();
    const requester = url.protocol === 'https:' ? httpsRequest : httpRequest;
    // What the URL and the secret hold never reaches a reason (an error text may echo them).
    const hidden = [secret, url.password, url.username, url.search.slice(1)].filter(
      (v): v is string => typeof v === 'string' && v.length > 0,
    );
    return new Promise<WebhookAttempt>((resolve) => {
      const fail = (reason: string, outcome: 'failed' | 'refused' = 'failed') =>
        resolve({
          outcome,
          stage: 'delivery',
          target: origin,
          reason: hidden.reduce((r, v) => r.split(v).join('[redacted]'), reason),
        });
      try {
        const req = requester(
          url,
          { method: 'POST', headers, timeout: options.timeoutMs, lookup },
          (res) => {
            res.resume(); // the answer body is not used
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              resolve({
                outcome: 'delivered',
                stage: 'delivery',
                target: origin,
                status,
                durationMs: Math.round(performance.now() - started),
              });
            } else {
              fail(`HTTP ${status}`);
            }
          },
        );
        req.on('timeout', () =>
          req.destroy(new Error(`timed out after ${options.timeoutMs / 1000} s`)),
        );
        req.on('error', (err: NodeJS.ErrnoException) =>
          err.code === 'ADDRESS_NOT_ALLOWED'
            ? fail(err.message, 'refused')
            : fail(err.code ?? err.message),
        );
        req.end(body);
      } catch (err) {
        fail(err instanceof Error ? err.message : 'request failed');
      }
    });
  };
}
