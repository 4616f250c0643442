export { CircuitBreaker, LockoutLedger, deviceKeyOf } from './device-guards.js';
export { envelopeOfMessage, envelopeSubjectOf } from './job-envelopes.js';
export type { QueuedMessage } from './job-envelopes.js';
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
