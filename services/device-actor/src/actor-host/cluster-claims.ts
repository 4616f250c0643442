import {
  LockKeys,
  deviceClaimOf,
  encodeJson,
  isWrongRevision,
  type DeviceClaimEntry,
} from '@svc/proto';
import { decodedEntries, type BucketWatchEntry } from '@svc/nats';
import type { Logger } from '@svc/telemetry';
import { abortError } from '../device/abort.js';

/**
 * The cluster-wide side of a device's claim (DESIGN invariant 3). A device known by its pinned
 * host key may be reached at several addresses, whose shards other actor hosts may own
 * (docs/shards.md): `DeviceLocks` keeps its sessions in bounds on one host, and this claim in
 * `svc-locks` (`LockKeys.device`) lets one host at a time hold sessions to it. Taken by
 * compare-and-set before a host's first session to the device logs in, kept while the host has
 * any session to it (warm ones too), removed when the last closes: no store write per job on a
 * warm session. A host that finds it held by a live host marks it wanted and waits on the
 * watch; the holder closes its idle sessions to the device and hands the claim over.
 */

/** What a job's `DeviceClaim` asks of the cluster-wide claim. */
export interface DeviceHolds {
  /** Waits until this host holds the device's claim, for one job; rejects with the abort. */
  hold(device: string, signal: AbortSignal): Promise<void>;
  /** One try, without waiting (at the handshake); a claim held elsewhere is marked wanted. */
  tryHold(device: string): Promise<boolean>;
  /** The job's end (its sessions may keep the claim). */
  release(device: string): void;
  /** Keeps the claim while a session to the device is open (warm ones included). */
  keepWhileOpen(device: string, closed: Promise<void>): void;
}

/** The compare-and-set operations of the `svc-locks` bucket the claims use (a `KV`). */
export interface ClaimStore {
  create(key: string, value: Uint8Array): Promise<number>;
  update(key: string, value: Uint8Array, version: number): Promise<number>;
  delete(key: string, opts?: { previousSeq?: number }): Promise<void>;
  get(key: string): Promise<{ value: Uint8Array; revision: number; operation: string } | null>;
}

/** One write of a claim key, as the bucket's watch gives it (what the claims read of one). */
export type ClaimWrite = Pick<BucketWatchEntry, 'key' | 'value' | 'operation' | 'revision'>;

export interface ClusterClaimsDeps {
  store: ClaimStore;
  /** The claim keys' last values, then every write (`LockKeys.deviceAll`); ended by `stop`. */
  watch: AsyncIterable<ClaimWrite> & { stop(): void };
  hostId: string;
  log: Logger;
  /** Whether a host's heartbeat is gone (reaped, or stopped): its claims may be taken over. */
  hostGone: (host: string) => Promise<boolean>;
  /** Closes this host's idle (warm) sessions to the device. */
  closeIdle: (device: string) => Promise<void>;
  /** Longest wait between two looks at a claim held elsewhere (its holder may be reaped), ms. */
  recheckMs: number;
}

interface Held {
  device: string;
  /** `taking`: being written; `giving`: being handed over or removed. */
  state: 'taking' | 'held' | 'giving';
  /** Of this host's last write or the last write seen: what the next compare-and-set expects. */
  revision: number;
  /** Jobs holding it (between their claim and their end). */
  jobs: number;
  /** Sessions to the device open on this host, warm ones included. */
  sessions: number;
  wantedBy: string | null;
  /** Taken over by another host (this one taken for gone): never written again. */
  lost: boolean;
}

/** Per claim key: bumped on each write seen and each change here, and who waits for one. */
interface Changes {
  gen: number;
  wake: Set<() => void>;
  /** `hold`/`tryHold` calls under way: a claim handed to this host is then not removed. */
  waiting: number;
}

export class ClusterClaims implements DeviceHolds {
  /** By claim key (`LockKeys.device`). */
  readonly #held = new Map<string, Held>();
  readonly #changes = new Map<string, Changes>();
  readonly #giving = new Set<Promise<void>>();
  #stopping = false;

  constructor(private readonly deps: ClusterClaimsDeps) {
    void this.#follow();
  }

  async hold(device: string, signal: AbortSignal): Promise<void> {
    const key = LockKeys.device(device);
    const ch = this.#changesOf(key);
    ch.waiting++;
    let told = false;
    try {
      for (;;) {
        if (signal.aborted) throw abortError(signal);
        // Read before the try: a write seen during it is not waited for again.
        const gen = ch.gen;
        const outcome = await this.#tryOnce(key, device);
        if (outcome === 'held') return;
        if (outcome === 'asked' && !told) {
          this.deps.log.info({ device }, 'device claimed by another actor host; waits');
          told = true;
        }
        await this.#wait(ch, gen, signal);
      }
    } finally {
      this.#leave(key, ch);
    }
  }

  async tryHold(device: string): Promise<boolean> {
    const key = LockKeys.device(device);
    const ch = this.#changesOf(key);
    ch.waiting++;
    try {
      return (await this.#tryOnce(key, device)) === 'held';
    } finally {
      this.#leave(key, ch);
    }
  }

  release(device: string): void {
    const key = LockKeys.device(device);
    const held = this.#held.get(key);
    if (held === undefined || held.jobs === 0) return;
    held.jobs--;
    this.#yieldIfWanted(held);
    this.#maybeGive(key, held);
  }

  keepWhileOpen(device: string, closed: Promise<void>): void {
    const key = LockKeys.device(device);
    const held = this.#held.get(key);
    // Opened by a job that holds it, so held; anything else is not this claim's session.
    if (held === undefined || held.state !== 'held') return;
    held.sessions++;
    void closed.then(() => {
      held.sessions--;
      this.#maybeGive(key, held);
    });
  }

  /** Devices claimed by this host now (tests, metrics). */
  get size(): number {
    return this.#held.size;
  }

  /**
   * The host stopping (its jobs ended): closes its idle sessions of every claimed device and
   * waits (up to `deadlineMs`) until the claims are handed over or removed.
   */
  async stop(deadlineMs = 5000): Promise<void> {
    this.#stopping = true;
    for (const held of this.#held.values()) this.#yieldIfWanted(held);
    const deadline = Date.now() + deadlineMs;
    while ((this.#held.size > 0 || this.#giving.size > 0) && Date.now() < deadline) {
      await Promise.race([
        Promise.all(this.#giving),
        new Promise((resolve) => setTimeout(resolve, 20)),
      ]);
    }
    this.deps.watch.stop();
  }

  async #follow(): Promise<void> {
    const { log } = this.deps;
    try {
      const drop = { consumer: 'actor_claims', log };
      for await (const e of decodedEntries(this.deps.watch, deviceClaimOf, drop)) {
        this.#onWrite(e.key, e.decoded, e.revision, e.operation !== 'PUT');
      }
    } catch (err) {
      log.warn({ err }, 'device claims watch ended');
    }
  }

  #onWrite(key: string, claim: DeviceClaimEntry | null, revision: number, removed: boolean): void {
    const { hostId } = this.deps;
    const held = this.#held.get(key);
    this.#changed(key);
    // A write this host made or saw already (the watch trails the replies).
    if (held !== undefined && revision <= held.revision) return;
    if (claim?.host === hostId) {
      if (held === undefined) {
        // Names this host, which holds no session to the device and waits for none: a removal
        // that failed, a hand-over it no longer waits for, or an earlier run under this host id.
        if ((this.#changes.get(key)?.waiting ?? 0) === 0) {
          void this.deps.store.delete(key, { previousSeq: revision }).catch(() => undefined);
        }
        return;
      }
      held.revision = revision;
      held.wantedBy = askerOtherThan(hostId, claim);
      this.#yieldIfWanted(held);
      return;
    }
    if (held?.state === 'held' && (removed || claim !== null)) {
      // Taken over: the other host took this one for gone (a freeze past the reaper's threshold).
      held.lost = true;
      this.deps.log.warn({ device: held.device, holder: claim?.host }, 'device claim lost');
      this.#yieldIfWanted(held);
      this.#maybeGive(key, held);
    }
  }

  /** `held`: this host holds it for one more job; `busy`: being taken, given or wanted here. */
  async #tryOnce(key: string, device: string): Promise<'held' | 'busy' | 'asked'> {
    const current = this.#held.get(key);
    if (current !== undefined) {
      // Wanted by another host: this host's next jobs wait their turn behind it.
      if (current.state !== 'held' || current.wantedBy !== null || current.lost) return 'busy';
      current.jobs++;
      return 'held';
    }
    const held: Held = {
      device,
      state: 'taking',
      revision: 0,
      jobs: 0,
      sessions: 0,
      wantedBy: null,
      lost: false,
    };
    this.#held.set(key, held);
    let taken = false;
    try {
      taken = await this.#take(key, held);
    } catch (err) {
      // The store did not answer: the waiter tries again (its recheck).
      this.deps.log.warn({ err, device }, 'device claim not read or written');
    }
    if (!taken) {
      this.#held.delete(key);
      return 'asked';
    }
    held.state = 'held';
    held.jobs++;
    this.#changed(key);
    return 'held';
  }

  /** Creates the claim, or takes it when it names this host or a gone one; else asks for it. */
  async #take(key: string, held: Held): Promise<boolean> {
    const { store, hostId, log } = this.deps;
    const mine = (wantedBy: string | null) =>
      encodeJson({
        device: held.device,
        host: hostId,
        ...(wantedBy !== null ? { wanted_by: wantedBy } : {}),
      } satisfies DeviceClaimEntry);
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        held.revision = Math.max(held.revision, await store.create(key, mine(null)));
        return true;
      } catch (err) {
        if (!isWrongRevision(err)) throw err;
      }
      const entry = await store.get(key);
      if (entry === null || entry.operation !== 'PUT') continue; // removed meanwhile
      const claim = deviceClaimOf(key, entry.value, {
        consumer: 'actor_claims',
        log,
        where: { key },
      });
      // Handed over to this host (or left by an earlier run under its id), or its holder gone:
      // written again by compare-and-set, since a replica's answer may be an older entry.
      if (claim === null || claim.host === hostId || (await this.deps.hostGone(claim.host))) {
        const wantedBy = askerOtherThan(hostId, claim);
        try {
          held.revision = await store.update(key, mine(wantedBy), entry.revision);
        } catch (err) {
          if (!isWrongRevision(err)) throw err;
          continue;
        }
        held.wantedBy = wantedBy;
        if (claim?.host !== hostId) {
          log.info({ device: held.device, holder: claim?.host }, 'device claim taken over');
        }
        return true;
      }
      // Held by a live host: asked for (the first host to ask is given it next).
      const asker = claim.wanted_by;
      if (asker === undefined || (asker !== hostId && (await this.deps.hostGone(asker)))) {
        await store
          .update(key, encodeJson({ ...claim, wanted_by: hostId }), entry.revision)
          .catch((err: unknown) => {
            if (!isWrongRevision(err)) throw err;
          });
      }
      return false;
    }
    return false;
  }

  /** Wanted elsewhere (or the host stopping) and no job of it here: its idle sessions close. */
  #yieldIfWanted(held: Held): void {
    if (held.state !== 'held' || held.jobs > 0) return;
    if (held.wantedBy === null && !held.lost && !this.#stopping) return;
    if (held.sessions === 0) return;
    this.deps
      .closeIdle(held.device)
      .catch((err: unknown) =>
        this.deps.log.warn({ err, device: held.device }, 'idle sessions not closed'),
      );
  }

  /** No job and no session of the device left here: the claim goes to its asker, or away. */
  #maybeGive(key: string, held: Held): void {
    if (held.state !== 'held' || held.jobs > 0 || held.sessions > 0) return;
    held.state = 'giving';
    const giving = this.#give(key, held).finally(() => {
      if (this.#held.get(key) === held) this.#held.delete(key);
      this.#giving.delete(giving);
      this.#changed(key);
    });
    this.#giving.add(giving);
  }

  async #give(key: string, held: Held): Promise<void> {
    const { store, hostId, log } = this.deps;
    if (held.lost) return; // another host's now
    for (let attempt = 1; ; attempt++) {
      try {
        const to = held.wantedBy;
        if (to !== null && to !== hostId) {
          const handed: DeviceClaimEntry = { device: held.device, host: to };
          await store.update(key, encodeJson(handed), held.revision);
        } else {
          await store.delete(key, { previousSeq: held.revision });
        }
        return;
      } catch (err) {
        if (!isWrongRevision(err) || attempt >= 5) {
          // Left naming this host: removed when a host asks for it (`#onWrite`).
          log.warn({ err, device: held.device }, 'device claim not given back');
          return;
        }
      }
      // Written meanwhile (a host asking for it): read again.
      const entry = await store.get(key).catch(() => undefined);
      if (entry === undefined) continue;
      if (entry === null || entry.operation !== 'PUT') return;
      const claim = deviceClaimOf(key, entry.value, {
        consumer: 'actor_claims',
        log,
        where: { key },
      });
      if (claim?.host !== hostId) return;
      held.revision = entry.revision;
      held.wantedBy = askerOtherThan(hostId, claim);
    }
  }

  #changesOf(key: string): Changes {
    let ch = this.#changes.get(key);
    if (ch === undefined) {
      ch = { gen: 0, wake: new Set(), waiting: 0 };
      this.#changes.set(key, ch);
    }
    return ch;
  }

  #leave(key: string, ch: Changes): void {
    ch.waiting--;
    if (ch.waiting === 0 && ch.wake.size === 0 && this.#changes.get(key) === ch) {
      this.#changes.delete(key);
    }
  }

  #changed(key: string): void {
    const ch = this.#changes.get(key);
    if (ch === undefined) return;
    ch.gen++;
    for (const wake of [...ch.wake]) wake();
  }

  /** Until the next change of the key after `gen`, at most `recheckMs`; rejects on abort. */
  async #wait(ch: Changes, gen: number, signal: AbortSignal): Promise<void> {
    // An abort that came during the try before is not an event any more: seen here, not after
    // a whole recheck.
    if (signal.aborted) throw abortError(signal);
    if (ch.gen !== gen) return;
    await new Promise<void>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        ch.wake.delete(done);
        signal.removeEventListener('abort', aborted);
        resolve();
      };
      const aborted = (): void => {
        clearTimeout(timer);
        ch.wake.delete(done);
        reject(abortError(signal));
      };
      const timer = setTimeout(done, this.deps.recheckMs);
      ch.wake.add(done);
      signal.addEventListener('abort', aborted, { once: true });
    });
  }
}

/** The host waiting for a claim, unless it is this one (it asked while another held it). */
function askerOtherThan(hostId: string, claim: DeviceClaimEntry | null): string | null {
  const asker = claim?.wanted_by;
  return asker !== undefined && asker !== hostId ? asker : null;
}
