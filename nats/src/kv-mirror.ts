import type { KV } from '@nats-io/kv';
import type { Logger } from '@svc/telemetry';
import { watchBucket } from './bucket-watch.js';

export interface MirroredEntry {
  value: Uint8Array;
  revision: number;
}

/**
 * An in-memory copy of a small bucket, kept current by a watch, for values read on every job
 * (breaker states, lockout ledgers): a read is a map lookup instead of a round trip. Writes still
 * go to the bucket by compare-and-set; the copy is only for deciding fast that nothing is
 * wrong. Until the initial values have arrived, `ready` is false and callers read the bucket.
 */
export class KvMirror {
  readonly #entries = new Map<string, MirroredEntry>();
  /** Callers of `caughtUp` per key, each told of every change of its key. */
  readonly #waiters = new Map<string, Set<() => void>>();
  #ready = false;
  #watch: { stop(): void } | null = null;

  private constructor() {}

  /**
   * `key` filters the copy (a subject-like pattern, e.g. `authfail.>`); all keys by default.
   * `log` is told when the watch is opened again (its node lost). `keysOnly`: which keys exist,
   * not their values (every `value` empty), for a reader that needs no more: the values never
   * travel to it.
   */
  static async start(
    kv: KV,
    key = '>',
    log?: Pick<Logger, 'warn'>,
    options: { keysOnly?: boolean } = {},
  ): Promise<KvMirror> {
    const mirror = new KvMirror();
    const watch = await watchBucket(kv, {
      key,
      ...(log ? { log } : {}),
      ...(options.keysOnly ? { keysOnly: true } : {}),
      countPending: true,
    });
    mirror.#watch = watch;
    // Counted on the watch's own filter: a bucket whose keys are all outside it is nothing to wait for.
    if (watch.pendingAtOpen === 0) mirror.#ready = true;
    void (async () => {
      for await (const e of watch) {
        if (e.operation === 'PUT')
          mirror.#entries.set(e.key, { value: e.value, revision: e.revision });
        else mirror.#entries.delete(e.key);
        mirror.#wake(e.key);
        // delta counts the initial values still to come.
        if (e.delta === 0 || e.isUpdate) mirror.#ready = true;
      }
    })();
    return mirror;
  }

  get ready(): boolean {
    return this.#ready;
  }

  get(key: string): MirroredEntry | null {
    return this.#entries.get(key) ?? null;
  }

  values(): IterableIterator<MirroredEntry> {
    return this.#entries.values();
  }

  entries(): IterableIterator<[string, MirroredEntry]> {
    return this.#entries.entries();
  }

  /**
   * Resolves true once the copy holds `key` at `revision` or later (`null`: once it holds no
   * `key`), false after `timeoutMs` (a copy that fell behind or stopped). For a writer that
   * wants its own write in the copy before it reads from there.
   */
  caughtUp(key: string, revision: number | null, timeoutMs: number): Promise<boolean> {
    const holds = () => {
      const entry = this.#entries.get(key);
      return revision === null ? entry === undefined : (entry?.revision ?? 0) >= revision;
    };
    if (holds()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiters = this.#waiters.get(key) ?? new Set<() => void>();
      this.#waiters.set(key, waiters);
      const done = (caught: boolean) => {
        clearTimeout(timer);
        waiters.delete(wake);
        if (waiters.size === 0 && this.#waiters.get(key) === waiters) this.#waiters.delete(key);
        resolve(caught);
      };
      const wake = () => {
        if (holds()) done(true);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      timer.unref();
      waiters.add(wake);
    });
  }

  /** Drops a key from the copy only (entries that expired by the bucket's TTL send no delete). */
  forget(key: string): void {
    this.#entries.delete(key);
    this.#wake(key);
  }

  #wake(key: string): void {
    for (const wake of this.#waiters.get(key) ?? []) wake();
  }

  stop(): void {
    this.#watch?.stop();
  }
}
