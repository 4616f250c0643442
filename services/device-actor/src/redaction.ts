import type { DeviceSecrets } from '@svc/proto';

/** Removes every secret of a job from a text (device echo, library error messages). */
export function redactSecrets(text: string, secrets: Partial<DeviceSecrets>): string {
  let out = text;
  for (const secret of [secrets.password, secrets.enable, secrets.webhook_secret]) {
    if (secret && secret.length > 0) out = out.split(secret).join('[redacted]');
  }
  return out;
}
