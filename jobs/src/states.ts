import { isTerminal, type JobStatus } from '@svc/proto';

/**
 * The job's state machine: the statuses that may follow each one. A terminal status has none,
 * so nothing moves a job out of `finished`, `failed` or `cancelled`.
 */
export const JOB_TRANSITIONS = {
  queued: ['started', 'cancelled', 'failed'],
  started: ['finished', 'failed', 'cancelled'],
  finished: [],
  failed: [],
  cancelled: [],
} as const satisfies Record<JobStatus, readonly JobStatus[]>;

/** The statuses a job in `S` may move to. */
export type NextOf<S extends JobStatus> = (typeof JOB_TRANSITIONS)[S][number];

/** The statuses from which a job may move to `To`. */
export type FromOf<To extends JobStatus> = {
  [S in JobStatus]: To extends NextOf<S> ? S : never;
}[JobStatus];

/** Whether `from → to` is a move of the table (a status kept as it is is no move). */
export function mayMove(from: JobStatus, to: JobStatus): boolean {
  return (JOB_TRANSITIONS[from] as readonly JobStatus[]).includes(to);
}

/**
 * Whether a job now in `current` has left `status` for good: `current` comes after it in the
 * table (an event of `status` would now come after the events of later states).
 */
export function hasLeft(current: JobStatus, status: JobStatus): boolean {
  return current !== status && !mayMove(current, status) && !isTerminal(status);
}

/** A change of a job's record that would move it against the table: never written. */
export class IllegalTransition extends Error {
  override readonly name = 'IllegalTransition';
  constructor(
    readonly jobId: string,
    readonly from: JobStatus,
    readonly to: JobStatus,
  ) {
    super(`job ${jobId}: ${from} → ${to} is not a transition of the job's state machine`);
  }
}
