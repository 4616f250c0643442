import { createHmac } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import {
  canonicalIp,
  openWebhookUrl,
  webhookNetworkPolicy,
  type AddressPolicy,
  type DeviceSecrets,
  type JobRecord,
  type Logger,
  type Sealer,
} from '@svc/proto';
import type { DeviceActorConfig } from './config.js';
import { redactSecrets } from './redaction.js';

/** Header carrying `sha256=<hex HMAC-SHA256 of the raw body>` under the job's webhook_secret. */
export const SIGNATURE_HEADER = 'X-Svc-Signature-256';
/** Unix seconds of the delivery, so receivers can refuse stale deliveries. */
export const TIMESTAMP_HEADER = 'X-Svc-Timestamp';

/** The webhook body: never results, never credentials. */
export interface WebhookPayload {
  job_id: string;
  status: string;
  enqueued_at: string;
  completed_at: string | null;
}

export function signWebhook(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

/** What became of one webhook (for tests; the device path never waits for it). */
export type WebhookOutcome = 'none' | 'delivered' | 'refused' | 'failed';

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
 * Completion webhooks: one POST per ended job that asked for one, fire-and-forget with no
 * retries (SPEC). Never awaited by the device path; a failure is logged (target origin and
 * reason only: no secret, no results, no URL path or query, which may carry tokens) and never
 * changes the job. Targets on loopback, link-local or private networks are refused unless
 * WEBHOOK_ALLOW_NETWORKS names them, checked on the address the request connects to.
 */
export function createWebhookNotifier(
  config: DeviceActorConfig,
  log: Logger,
  sealer: Sealer,
): (record: JobRecord, secrets: DeviceSecrets) => Promise<WebhookOutcome> {
  const timeoutMs = config.WEBHOOK_TIMEOUT * 1000;
  const policy = webhookNetworkPolicy(config);
  const lookup = checkedLookup(policy);
  return async (record, secrets) => {
    if (!record.spec.webhook_url) return 'none';
    const jlog = log.child({ job_id: record.job_id });
    let url: URL;
    try {
      url = new URL(openWebhookUrl(sealer, record.spec.webhook_url) ?? '');
    } catch {
      jlog.warn(`${record.job_id} webhook skipped: not a URL`);
      return 'refused';
    }
    const allowed = config.WEBHOOK_ALLOW_HTTP ? ['https:', 'http:'] : ['https:'];
    if (!allowed.includes(url.protocol)) {
      jlog.warn({ scheme: url.protocol }, `${record.job_id} webhook skipped: scheme not allowed`);
      return 'refused';
    }
    const literal = canonicalIp(url.hostname);
    const verdict = literal !== null ? policy.check('', literal, literal) : null;
    if (verdict && !verdict.allowed) {
      jlog.warn(
        { target: url.origin, reason: verdict.reason },
        `${record.job_id} webhook skipped: address not allowed`,
      );
      return 'refused';
    }
    const payload: WebhookPayload = {
      job_id: record.job_id,
      status: record.status,
      enqueued_at: record.enqueued_at,
      completed_at: record.ended_at,
    };
    const body = JSON.stringify(payload);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': 'svc-webhook/1',
      [TIMESTAMP_HEADER]: String(Math.floor(Date.now() / 1000)),
    };
    if (secrets.webhook_secret)
      headers[SIGNATURE_HEADER] = signWebhook(body, secrets.webhook_secret);
    const origin = url.origin;
    const started = performance.now();
    const requester = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<WebhookOutcome>((resolve) => {
      const fail = (reason: string, outcome: WebhookOutcome = 'failed') => {
        jlog.warn(
          { target: origin, reason: redactSecrets(reason, secrets) },
          `${record.job_id} webhook delivery failed`,
        );
        resolve(outcome);
      };
      try {
        const options = { method: 'POST', headers, timeout: timeoutMs, lookup };
        const req = requester(url, options, (res) => {
          res.resume(); // the answer body is not used
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            jlog.debug(
              { target: origin, status, duration_ms: Math.round(performance.now() - started) },
              `${record.job_id} webhook delivered`,
            );
            resolve('delivered');
          } else {
            fail(`HTTP ${status}`);
          }
        });
        req.on('timeout', () =>
          req.destroy(new Error(`timed out after ${config.WEBHOOK_TIMEOUT} s`)),
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
