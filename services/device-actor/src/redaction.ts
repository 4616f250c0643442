import type { DeviceSecrets } from '@svc/proto';

/** Replaces each secret in `text` by `***`; empty secrets are ignored. */
export function redactValues(
  text: string,
  secrets: readonly (string | null | undefined)[],
): string {
  let out = text;
  for (const s of secrets) {
    if (s) out = out.split(s).join('***');
  }
  return out;
}

/** Removes every secret of a job from a text (device echo, library error messages). */
export function redactSecrets(text: string, secrets: Partial<DeviceSecrets>): string {
  return redactValues(text, [
    secrets.password,
    secrets.enable,
    secrets.webhook_secret,
    secrets.private_key,
    secrets.passphrase,
    ...(secrets.jump_hosts ?? []).flatMap((j) => [j.password, j.private_key, j.passphrase]),
  ]);
}
