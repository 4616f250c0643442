import { ErrorCode, SvcError } from '@svc/proto';
import { fingerprintOf, type HostKeyMode, type HostKeyStore } from '@svc/device-access';
import { type Logger } from '@svc/telemetry';

/** Checks the host key a device presents; null accepts it, a SvcError refuses the connection. */
export type VerifyHostKey = (key: Buffer) => Promise<SvcError | null>;

/**
 * The host-key check of one job's connection, by its context's mode: `tofu` pins the first key
 * seen (cluster-wide, first writer wins) and refuses any other; `strict` accepts only a key an
 * admin loaded; `off` accepts anything (logged). Runs inside the SSH handshake, so a refused key
 * means no credential was sent.
 */
export function hostKeyVerifier(
  store: HostKeyStore,
  mode: HostKeyMode,
  device: { context: string; host: string; address: string; port: number },
  log: Logger,
): VerifyHostKey {
  const { context, address, port } = device;
  const where = `${device.host}:${port}`;
  return async (key) => {
    const offered = fingerprintOf(key);
    if (mode === 'off') {
      log.info({ host: where, fingerprint: offered }, 'host key not checked (HOST_KEY_POLICY off)');
      return null;
    }
    // The bucket, or when it does not answer the pin this host last saw (a store outage must
    // not fail the jobs of devices pinned before).
    let pinned = await store.pinnedForCheck(context, address, port, (err) =>
      log.warn(
        { err, host: where },
        'host key checked against the last pin seen: the store did not answer',
      ),
    );
    if (pinned === null) {
      if (mode === 'strict') {
        return new SvcError(
          ErrorCode.HOST_KEY_UNKNOWN,
          `no host key is loaded for ${where} in context ${context} (HOST_KEY_POLICY strict); the device offered ${offered}`,
        );
      }
      pinned = await store.pinFirst(context, address, port, key);
      if (pinned.fingerprint === offered) {
        log.info({ host: where, fingerprint: offered }, 'host key pinned on first use');
      }
    }
    if (pinned.public_key === key.toString('base64')) return null;
    return new SvcError(
      ErrorCode.HOST_KEY_MISMATCH,
      `host key of ${where} changed: pinned ${pinned.fingerprint}, offered ${offered}; no credentials were sent`,
    );
  };
}
