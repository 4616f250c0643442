import {
  openWebhookUrl,
  webhookNetworkPolicy,
  type DeviceSecrets,
  type JobRecord,
  type Sealer,
} from '@svc/proto';
import { webhookSender, type WebhookOutcome } from '@svc/webhooks';
import { type Logger } from '@svc/telemetry';
import type { DeviceActorConfig } from '../config.js';
import { redactSecrets } from '../device/redaction.js';

/** The webhook body: never results, never credentials. */
export interface WebhookPayload {
  job_id: string;
  status: string;
  enqueued_at: string;
  completed_at: string | null;
}

/**
 * Completion webhooks: one POST per ended job that asked for one, fire-and-forget with no
 * retries (SPEC). Never awaited by the device path; a failure is logged (target origin and
 * reason only: no secret, no results, no URL path or query, which may carry tokens) and never
 * changes the job. Targets on loopback, link-local or private networks are refused unless
 * WEBHOOK_ALLOW_NETWORKS names them, checked on the address the request connects to. Signing
 * and sending are proto's (`webhookSender`), shared with the gateway's batch webhooks.
 */
export function createWebhookNotifier(
  config: DeviceActorConfig,
  log: Logger,
  sealer: Sealer,
): (record: JobRecord, secrets: DeviceSecrets) => Promise<WebhookOutcome> {
  const send = webhookSender({
    allowHttp: config.WEBHOOK_ALLOW_HTTP,
    policy: webhookNetworkPolicy(config),
    timeoutMs: config.WEBHOOK_TIMEOUT * 1000,
  });
  return async (record, secrets) => {
    if (!record.spec.webhook_url) return 'none';
    const jlog = log.child({ job_id: record.job_id });
    let target: string;
    try {
      target = openWebhookUrl(sealer, record.spec.webhook_url) ?? '';
    } catch {
      target = '';
    }
    const payload: WebhookPayload = {
      job_id: record.job_id,
      status: record.status,
      enqueued_at: record.enqueued_at,
      completed_at: record.ended_at,
    };
    const sent = await send(target, JSON.stringify(payload), secrets.webhook_secret);
    const id = record.job_id;
    if (sent.stage === 'url') jlog.warn(`${id} webhook skipped: not a URL`);
    else if (sent.stage === 'scheme')
      jlog.warn({ scheme: sent.scheme }, `${id} webhook skipped: scheme not allowed`);
    else if (sent.stage === 'address')
      jlog.warn(
        { target: sent.target, reason: sent.reason },
        `${id} webhook skipped: address not allowed`,
      );
    else if (sent.outcome === 'delivered')
      jlog.debug(
        { target: sent.target, status: sent.status, duration_ms: sent.durationMs },
        `${id} webhook delivered`,
      );
    else
      jlog.warn(
        { target: sent.target, reason: redactSecrets(sent.reason ?? '', secrets) },
        `${id} webhook delivery failed`,
      );
    return sent.outcome;
  };
}
