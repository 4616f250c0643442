export {
  exitOnStartFailure,
  readServiceSettings,
  runServiceMain,
  stopOnSignals,
} from './service-main.js';
export type { ProcessHandle, ServiceDeps } from './service-main.js';
