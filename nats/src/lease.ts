import type { KV } from '@nats-io/kv';
import { decodeMessage, encodeJson, isWrongRevision, LeaseRecord as LeaseValue } from '@svc/proto';

/**
 * A lease in the `svc-locks` bucket, taken and renewed with compare-and-set: at most one holder
 * at a time, and a holder that dies loses it when it expires. (Per-key TTLs need nats-server
 * 2.11, so expiry is a timestamp in the value.)
 */
export class Lease {
  constructor(
    private readonly kv: KV,
    readonly key: string,
    readonly holder: string,
    private readonly ttlMs: number,
  ) {}

  /**
   * Who held the lease before the last successful `acquire` (this holder itself on a renewal),
   * or null when nobody did (never taken, or released).
   */
  previousHolder: string | null = null;

  /** Takes or renews the lease; false when someone else holds it. */
  async acquire(now = Date.now()): Promise<boolean> {
    const value = encodeJson({
      holder: this.holder,
      expires_at: now + this.ttlMs,
    } satisfies LeaseValue);
    try {
      const entry = await this.kv.get(this.key);
      if (!entry || entry.operation !== 'PUT') {
        await this.kv.create(this.key, value);
        this.previousHolder = null;
        return true;
      }
      const current = decodeMessage(LeaseValue, entry.value);
      if (current.holder !== this.holder && current.expires_at > now) return false;
      await this.kv.update(this.key, value, entry.revision);
      this.previousHolder = current.holder;
      return true;
    } catch (err) {
      if (isWrongRevision(err)) return false;
      throw err;
    }
  }

  /** Gives the lease up if still held, so a standby need not wait for expiry. */
  async release(): Promise<void> {
    const entry = await this.kv.get(this.key);
    if (!entry || entry.operation !== 'PUT') return;
    if (decodeMessage(LeaseValue, entry.value).holder !== this.holder) return;
    await this.kv.delete(this.key, { previousSeq: entry.revision }).catch(() => undefined);
  }
}
