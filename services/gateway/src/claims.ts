import type { KV } from '@nats-io/kv';
import { isWrongRevision } from '@svc/proto';

export type Claim =
  | { claimed: true }
  | {
      claimed: false;
      jobId: string;
      revision: number;
      /** When the holder wrote the key (server time, ms). */
      writtenAt: number;
    };

/** How long a key is given back in the background while the store does not answer. */
const RELEASE_RETRY_MS = 10 * 60_000;

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
          writtenAt: entry.created.getTime(),
        };
      }
    }
    throw new Error(`claim ${key} kept changing`);
  }

  /**
   * Takes over a key whose holder was seen at `revision` (compare-and-set): false when the key
   * changed meanwhile (another request took it over, or its holder moved it).
   */
  async takeOver(key: string, jobId: string, revision: number): Promise<boolean> {
    try {
      await this.kv.update(key, new TextEncoder().encode(jobId), revision);
      return true;
    } catch (err) {
      if (isWrongRevision(err)) return false;
      throw err;
    }
  }

  /** Points a key we hold at another job (a dedup hit under a fresh idempotency key). */
  async repoint(key: string, jobId: string): Promise<void> {
    await this.kv.put(key, new TextEncoder().encode(jobId));
  }

  /** Deletes `key` if it still points at `jobId` (compare-and-delete on its revision). */
  async release(key: string, jobId: string): Promise<void> {
    const entry = await this.kv.get(key);
    if (entry?.operation !== 'PUT' || new TextDecoder().decode(entry.value) !== jobId) return;
    try {
      await this.kv.delete(key, { previousSeq: entry.revision });
    } catch (err) {
      // Changed since the read: someone else holds it now, it is not ours to give back.
      if (!isWrongRevision(err)) throw err;
    }
  }

  /**
   * `release`, retried in the background until the store answers: a request refused because
   * the store is unavailable must not leave its key behind for the key's whole TTL. (A key left
   * anyway, by a gateway that died, is taken over by the next attempt: `JobIntake`.)
   */
  releaseReliably(key: string, jobId: string): void {
    const deadline = Date.now() + RELEASE_RETRY_MS;
    const attempt = (pause: number): void => {
      this.release(key, jobId).catch(() => {
        if (Date.now() > deadline) return;
        setTimeout(() => attempt(Math.min(pause * 2, 5000)), pause).unref();
      });
    };
    attempt(250);
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
