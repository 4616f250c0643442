import { placementMayStart } from '@svc/jobs';
import { isTerminal, type JobEnvelope, type JobRecord } from '@svc/proto';

/** What a host does with a copy whose start (`queued → started`) was refused. */
export type RefusedStart =
  /** No record any more, or ended: nothing to do. */
  | { kind: 'ended' }
  /** Started here and not running: its outcome never reached the store. */
  | { kind: 'outcome-lost' }
  /** Started by another host, or by this one and still running: not this copy's. */
  | { kind: 'started' }
  /** Taken over since by a later owner of its shard: the record names its epoch. */
  | { kind: 'fenced'; later: number }
  /**
   * Queued, and this copy may start it: the refusal came from a read that did not see the
   * record (a server behind its leader). Started again, never dropped (the job's only copy).
   */
  | { kind: 'retry' };

/**
 * Why a start was refused, from the record read after it (`current`, null when none). The
 * copy is settled (acknowledged) in every case but `retry`.
 */
export function refusedStart(
  current: JobRecord | null,
  envelope: JobEnvelope,
  hostId: string,
  runningHere: boolean,
): RefusedStart {
  if (current === null || isTerminal(current.status)) return { kind: 'ended' };
  if (current.status === 'started') {
    return current.actor_host === hostId && !runningHere
      ? { kind: 'outcome-lost' }
      : { kind: 'started' };
  }
  if (placementMayStart(current, envelope)) return { kind: 'retry' };
  return { kind: 'fenced', later: current.placement ?? 0 };
}
