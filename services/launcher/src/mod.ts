export {
  NatsServerProcess,
  NatsCluster,
  findNatsServer,
  ensureNatsServer,
  natsServerVersion,
  parentDeathSignalWrapper,
  freePort,
  readAllFiles,
} from './nats-server-process.js';
export type { NatsServerOptions } from './nats-server-process.js';
export { startAll } from './all-in-one.js';
export type { AllInOne, AllInOneOptions } from './all-in-one.js';
