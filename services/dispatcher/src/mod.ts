export { startDispatcher } from './dispatcher.js';
export type { DispatcherDeps, RunningDispatcher } from './dispatcher.js';
export { DispatcherConfig, loadDispatcherConfig } from './config.js';
export { HostView } from './host-view.js';
export { planShards, rendezvousScore } from './shard-assignment.js';
