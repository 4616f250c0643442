export {
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  signWebhook,
  webhookSender,
} from './webhook-delivery.js';
export type { WebhookAttempt, WebhookOutcome, WebhookSenderOptions } from './webhook-delivery.js';
