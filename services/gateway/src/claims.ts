import type { KV } from '@nats-io/kv';
import { isWrongRevision } from '@svc/proto';

export type Claim = { claimed: true } | { claimed: false; jobId: string; revision: number };

/**
 * Keys that point at a job id, taken with KV create-if-absent so that of two concurrent
 * requests on any instances exactly one wins (used by idempotency keys and in-flight dedup).
 */
export class KeyClaims {
  constructor(readonly kv: KV) {}

  /** Takes `key` for `jobId`, or reports the job id that holds it. */
  async claim(key: string, jobId: string): Promise<Claim> {
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        await this.kv.create(key, new TextEncoder().encode(jobId));
        return { claimed: true };
      } catch (err) {
        if (!isWrongRevision(err)) throw err;
      }
      const entry = await this.kv.get(key);
      // Deleted between our create and get: try again.
      if (entry?.operation === 'PUT') {
        return {
          claimed: false,
          jobId: new TextDecoder().decode(entry.value),
          revision: entry.revision,
        };
      }
    }
    throw new Error(`claim ${key} kept changing`);
  }

  /** Points a key we hold at another job (a dedup hit under a fresh idempotency key). */
  async repoint(key: string, jobId: string): Promise<void> {
    await this.kv.put(key, new TextEncoder().encode(jobId));
  }

  /** Deletes `key` if it still points at `jobId` (compare-and-delete on its revision). */
  async release(key: string, jobId: string): Promise<void> {
    const entry = await this.kv.get(key);
    if (entry?.operation !== 'PUT' || new TextDecoder().decode(entry.value) !== jobId) return;
    await this.kv.delete(key, { previousSeq: entry.revision }).catch(() => undefined);
  }

  /** Deletes a stale holder seen at `revision`; false when the key changed meanwhile. */
  async dropStale(key: string, revision: number): Promise<boolean> {
    try {
      await this.kv.delete(key, { previousSeq: revision });
      return true;
    } catch (err) {
      if (isWrongRevision(err)) return false;
      throw err;
    }
  }
}
