export {
  startDevice,
  DEFAULT_USERNAME,
  DEFAULT_PASSWORD,
  DEFAULT_ENABLE,
  LEGACY_ONLY_ALGORITHMS,
  bulkText,
} from './device-sim.js';
export type {
  Faults,
  CommandRecord,
  DeviceStats,
  StartDeviceOptions,
  SessionCounter,
  SimulatedDevice,
} from './device-sim.js';
export { startFleet } from './fleet.js';
export type { StartFleetOptions, Fleet } from './fleet.js';
export { loadPlatform, repeatedOutput, textOf, PLATFORMS_DIR } from './platform-data.js';
export type { PlatformData, CatalogEntry, Text } from './platform-data.js';
export { generateHostKey, generateRsaHostKey, publicKeyOf } from './host-key.js';
export { startJumpHost } from './jump-host.js';
export type { StartJumpHostOptions, JumpHost, JumpHostStats } from './jump-host.js';
export { PLATFORM_CASES, expectedOutput } from './platform-cases.js';
export { jobFor } from './device-jobs.js';
