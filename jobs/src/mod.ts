export { Jobs } from './jobs.js';
export type { Enqueued, FinishedFields, JobsOptions } from './jobs.js';
export { placementMayStart } from './store.js';
export type { RecordFollower, StoredRecord } from './store.js';
export type { StoredResults } from './results.js';
export { JOB_TRANSITIONS, IllegalTransition, mayMove } from './states.js';
export type { NextOf, FromOf } from './states.js';
