/** Public surface of @svc/cli (for tests; the CLI itself is `bin/svc.js`). */
export { ExitCode, CliError } from './exit-codes.js';
export {
  loadInventory,
  normalizePlatform,
  parseAnsibleInventory,
  parseAnsibleIniInventory,
  parseCsvInventory,
  parseHostPort,
  parseNornirHosts,
} from './inventory.js';
export type { InventoryDevice } from './inventory.js';
export { defaultConfigPath, readConfigFile, resolveSettings } from './settings.js';
export type { ConnectionFlags, ConnectionSettings } from './settings.js';
export { runCli } from './program.js';
export type { CliEnv } from './program.js';
