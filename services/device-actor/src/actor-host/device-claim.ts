import { abortError } from '../device/abort.js';
import type { DeviceHolds } from './cluster-claims.js';

/**
 * The one-session limit per device, whatever address reaches it. A device's mailbox is keyed by
 * its address (stable while its jobs are queued); a device reachable at several addresses is
 * known by its pinned host key, so each job also claims that key on this actor host before its
 * session logs in: before connecting when the address has a pin, else during the handshake,
 * once the key is seen (first contact). Jobs at other addresses of a claimed device wait.
 * Across hosts the same key is claimed in `svc-locks` (`ClusterClaims`): addresses of one device
 * may be on shards of different hosts.
 */

interface Slot {
  used: number;
  waiters: (() => void)[];
}

/** At most `limit` holders per key (DEVICE_MAX_SESSIONS), shared by every actor of a host. */
export class DeviceLocks {
  readonly #slots = new Map<string, Slot>();

  constructor(private readonly limit: number) {}

  /** Takes a place for `key` if one is free now. */
  tryAcquire(key: string): boolean {
    const slot = this.#slots.get(key) ?? { used: 0, waiters: [] };
    if (slot.used >= this.limit) return false;
    slot.used++;
    this.#slots.set(key, slot);
    return true;
  }

  /** Waits for a place for `key`; rejects with the signal's reason when it aborts first. */
  async acquire(key: string, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw abortError(signal);
    if (this.tryAcquire(key)) return;
    const slot = this.#slots.get(key)!;
    await new Promise<void>((resolve, reject) => {
      const granted = (): void => {
        signal.removeEventListener('abort', aborted);
        resolve();
      };
      const aborted = (): void => {
        const at = slot.waiters.indexOf(granted);
        if (at >= 0) slot.waiters.splice(at, 1);
        reject(abortError(signal));
      };
      slot.waiters.push(granted);
      signal.addEventListener('abort', aborted, { once: true });
    });
  }

  release(key: string): void {
    const slot = this.#slots.get(key);
    if (slot === undefined) return;
    // The place goes straight to the next waiter, so `used` stays the same.
    const next = slot.waiters.shift();
    if (next) next();
    else if (--slot.used === 0) this.#slots.delete(key);
  }

  /** Keys with a holder now (tests, metrics). */
  get size(): number {
    return this.#slots.size;
  }
}

/**
 * One job's hold on its device's key: a place among the host's (`DeviceLocks`), then the
 * device's claim across hosts (`DeviceHolds`, absent in unit tests of the host's part).
 */
export class DeviceClaim {
  /** The device key this job holds, once known. */
  held: string | null = null;
  /** A device key that was busy at the handshake: the job waits for it, then connects again. */
  busy: string | null = null;
  /** Counts `release` calls: a take that waited across one keeps nothing. */
  #releases = 0;

  constructor(
    private readonly locks: DeviceLocks,
    private readonly holds: DeviceHolds | null = null,
  ) {}

  async take(key: string, signal: AbortSignal): Promise<void> {
    if (this.held === key) return;
    this.release();
    const gen = this.#releases;
    await this.locks.acquire(key, signal);
    try {
      await this.holds?.hold(key, signal);
    } catch (err) {
      this.locks.release(key);
      throw err;
    }
    this.#keepUnlessReleased(key, gen);
  }

  /** At the handshake: claims `key` now, or notes it busy and says so (false). */
  async tryTake(key: string): Promise<boolean> {
    if (this.held === key) return true;
    this.release();
    const gen = this.#releases;
    if (!this.locks.tryAcquire(key)) {
      this.busy = key;
      return false;
    }
    // A store that does not answer counts as busy: the job waits for the claim (`take`).
    if (this.holds !== null && !(await this.holds.tryHold(key).catch(() => false))) {
      this.locks.release(key);
      this.busy = key;
      return false;
    }
    return this.#keepUnlessReleased(key, gen);
  }

  /**
   * Keeps what a take got, unless the job let go while it waited (its login failed, it ended):
   * a handshake's host-key check can outlive its job, and a claim it took then would never be
   * given back. Then both are given back at once.
   */
  #keepUnlessReleased(key: string, gen: number): boolean {
    if (this.#releases !== gen) {
      this.holds?.release(key);
      this.locks.release(key);
      return false;
    }
    this.held = key;
    return true;
  }

  /** Keeps the device's claim while a session this job opened is open (warm after it too). */
  keepWhileOpen(closed: Promise<void>): void {
    if (this.held !== null) this.holds?.keepWhileOpen(this.held, closed);
  }

  release(): void {
    this.#releases++;
    if (this.held !== null) {
      this.holds?.release(this.held);
      this.locks.release(this.held);
    }
    this.held = null;
  }
}
