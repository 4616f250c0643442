import { missingCapabilities, type WorkerHeartbeat } from '@svc/proto';

/** What a host's heartbeat says: beating, silent for longer than the liveness, or leaving. */
export type HostState = 'live' | 'suspect' | 'gone';

/**
 * The actor hosts as their heartbeats show them to the leading dispatcher, which assigns each
 * context's shards to the live ones (`planShards`). A host is `live` while its last beat is
 * within the liveness, `suspect` (silent, not yet reaped) past it, and `gone` once it left: its
 * heartbeat deleted (a graceful stop, or the reaper) or marked draining (stopping).
 */
export class HostView {
  readonly #hosts = new Map<string, WorkerHeartbeat>();

  /** @param livenessMs heartbeat age within which a host is live (DISPATCH_HOST_LIVENESS) */
  constructor(private readonly livenessMs: number) {}

  /**
   * When the copy of the heartbeats fed to `update` was last known to hold every beat (its
   * watch's `currentAt`). A host is judged by its beats as of then: while the copy is cut off
   * (its watch waiting for a new consumer after a NATS node died) the hosts go on beating
   * unseen, and judged by the clock every one of them would look silent.
   */
  heartbeatsCurrentAt: () => number = () => Infinity;

  /** Feeds a heartbeat (or its deletion, as null) from the `svc-workers` watch. */
  update(hostId: string, beat: WorkerHeartbeat | null): void {
    if (beat) this.#hosts.set(hostId, beat);
    else this.#hosts.delete(hostId);
  }

  hostState(hostId: string, now = Date.now()): HostState {
    const beat = this.#hosts.get(hostId);
    if (!beat || beat.draining) return 'gone';
    const asOf = Math.min(now, this.heartbeatsCurrentAt());
    return asOf - Date.parse(beat.last_beat) <= this.livenessMs ? 'live' : 'suspect';
  }

  /** The live hosts serving the context whose heartbeats list every capability of `requires`. */
  liveHosts(context: string, now = Date.now(), requires?: readonly string[]): string[] {
    const out: string[] = [];
    for (const [id, beat] of this.#hosts) {
      if (!beat.contexts.includes(context)) continue;
      if (missingCapabilities(requires, beat.capabilities).length > 0) continue;
      if (this.hostState(id, now) === 'live') out.push(id);
    }
    return out;
  }

  /** The hosts serving the context that beat late and are not reaped (`suspect`). */
  silentHosts(context: string, now = Date.now()): string[] {
    return [...this.#hosts]
      .filter(
        ([id, beat]) => beat.contexts.includes(context) && this.hostState(id, now) === 'suspect',
      )
      .map(([id]) => id);
  }
}
