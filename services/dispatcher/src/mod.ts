export { startDispatcher } from './dispatcher.js';
export type { DispatcherDeps, RunningDispatcher } from './dispatcher.js';
export { DispatcherConfig, loadDispatcherConfig } from './config.js';
export { Placement, rendezvousScore } from './placement.js';
