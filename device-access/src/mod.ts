export { CircuitBreaker, LockoutLedger, deviceKeyOf, envelopeSubjectOf } from './device-guards.js';
export {
  HostKeySettings,
  HostKeyStore,
  fingerprintOf,
  hostKeyModes,
  keyTypeOf,
  parseOpenSshPublicKey,
} from './host-keys.js';
export type { HostKeyMode, PinnedHostKey } from './host-keys.js';
export type { BreakerVerdict } from './device-guards.js';
export { resolveHost, RESOLVE_TIMEOUT_MS } from './resolve-host.js';
