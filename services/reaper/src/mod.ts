export { startReaper } from './reaper.js';
export type { ReaperDeps, RunningReaper } from './reaper.js';
export { ReaperConfig, loadReaperConfig } from './config.js';
