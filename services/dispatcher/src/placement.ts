import { createHash } from 'node:crypto';
import type { WorkerHeartbeat } from '@svc/proto';

/**
 * Which actor host runs a device. A device stays on its host while that host is live (so its
 * jobs stay in order and never run on two hosts at once); a new or orphaned device goes to the
 * host with the highest rendezvous score among live hosts serving the context, which spreads
 * devices evenly and moves few of them when hosts come and go.
 */
export class Placement {
  readonly #hosts = new Map<string, WorkerHeartbeat>();
  readonly #assigned = new Map<string, string>();

  constructor(private readonly livenessMs: number) {}

  /** Feeds a heartbeat (or its deletion, as null) from the `svc-workers` watch. */
  update(hostId: string, beat: WorkerHeartbeat | null): void {
    if (beat) this.#hosts.set(hostId, beat);
    else this.#hosts.delete(hostId);
  }

  liveHosts(context: string, now = Date.now()): string[] {
    const out: string[] = [];
    for (const [id, beat] of this.#hosts) {
      if (beat.draining || !beat.contexts.includes(context)) continue;
      if (now - Date.parse(beat.last_beat) <= this.livenessMs) out.push(id);
    }
    return out;
  }

  /** The host for a device, or null when no live host serves the context. */
  place(context: string, deviceKey: string, now = Date.now()): string | null {
    const live = this.liveHosts(context, now);
    if (live.length === 0) return null;
    const current = this.#assigned.get(deviceKey);
    if (current && live.includes(current)) return current;
    let best: string | null = null;
    let bestScore = -1n;
    for (const host of live) {
      const score = rendezvousScore(deviceKey, host);
      if (score > bestScore) {
        best = host;
        bestScore = score;
      }
    }
    if (best) this.#assigned.set(deviceKey, best);
    return best;
  }
}

export function rendezvousScore(deviceKey: string, hostId: string): bigint {
  return createHash('sha256')
    .update(deviceKey)
    .update('\0')
    .update(hostId)
    .digest()
    .readBigUInt64BE(0);
}
