export { startActorHost } from './actor-host.js';
export type { ActorHostDeps, RunningActorHost, ParseOutputs } from './actor-host.js';
export { startDeviceActorService } from './service.js';
export type { DeviceActorServiceDeps, RunningDeviceActorService } from './service.js';
export { DeviceActorConfig, loadDeviceActorConfig } from './config.js';
export type { DeviceJob, DeviceOutcome, RunDeviceJob } from './device-job.js';
export { CommandsRejected } from './device-job.js';
export { createDeviceRunner } from './device-runner.js';
export { SessionPool } from './session-pool.js';
