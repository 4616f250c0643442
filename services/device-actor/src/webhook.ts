import type { DeviceSecrets, JobRecord, Logger } from '@svc/proto';
import type { DeviceActorConfig } from './config.js';

/** Completion webhooks (issue 6 fills this in). Never awaited by the device path. */
export function createWebhookNotifier(
  _config: DeviceActorConfig,
  _log: Logger,
): (record: JobRecord, secrets: DeviceSecrets) => void {
  return () => undefined;
}
