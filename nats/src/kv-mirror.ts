import type { KV } from '@nats-io/kv';

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
  #ready = false;
  #watch: { stop(): void } | null = null;

  private constructor() {}

  /** `key` filters the copy (a subject-like pattern, e.g. `authfail.>`); all keys by default. */
  static async start(kv: KV, key = '>'): Promise<KvMirror> {
    const mirror = new KvMirror();
    const watch = await kv.watch({ key });
    mirror.#watch = watch;
    if ((await kv.status()).values === 0) mirror.#ready = true;
    void (async () => {
      for await (const e of watch) {
        if (e.operation === 'PUT')
          mirror.#entries.set(e.key, { value: e.value, revision: e.revision });
        else mirror.#entries.delete(e.key);
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

  /** Drops a key from the copy only (entries that expired by the bucket's TTL send no delete). */
  forget(key: string): void {
    this.#entries.delete(key);
  }

  stop(): void {
    this.#watch?.stop();
  }
}
