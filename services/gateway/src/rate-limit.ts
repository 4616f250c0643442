import { createHash } from 'node:crypto';
import type { KV } from '@nats-io/kv';
import { isWrongRevision } from '@svc/proto';
import { HttpError } from './http-errors.js';

/** Fixed window length of both limits, ms (the settings are "per minute"). */
const WINDOW_MS = 60_000;
/** CAS attempts per counter before the store counts as failing (answered 503). */
const MAX_ATTEMPTS = 200;

/** One counter to take a unit from: `scope` names it, `limit` caps it (0 = unlimited). */
export interface RateCounter {
  scope: string;
  limit: number;
}

interface Taken {
  key: string;
}

/**
 * Fixed one-minute windows in `svc-ratelimit`, shared by every gateway instance. A counter is
 * increased only by compare-and-set after checking it is below its limit, so concurrent requests
 * on any number of instances never exceed it, and a request answered 429 never increases
 * anything (counters already taken for the same request are given back).
 */
export class RateLimiter {
  constructor(
    private readonly kv: KV,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one unit from every counter, or none and throws 429. */
  async take(counters: readonly RateCounter[]): Promise<void> {
    const window = Math.floor(this.now() / WINDOW_MS);
    const taken: Taken[] = [];
    for (const c of counters) {
      if (c.limit <= 0) continue;
      const key = `${hashScope(c.scope)}.${window}`;
      const ok = await this.increment(key, c.limit).catch(async (err: unknown) => {
        await this.giveBack(taken);
        throw err;
      });
      if (!ok) {
        await this.giveBack(taken);
        const resetSeconds = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - this.now()) / 1000));
        throw new HttpError(429, `rate limit of ${c.limit} per minute reached; retry later`, {
          'Retry-After': String(resetSeconds),
          'X-RateLimit-Limit': String(c.limit),
          'X-RateLimit-Remaining': '0',
          'X-RateLimit-Reset': String(resetSeconds),
        });
      }
      taken.push({ key });
    }
  }

  private async increment(key: string, limit: number): Promise<boolean> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const entry = await this.kv.get(key);
      const live = entry?.operation === 'PUT';
      const count = live ? Number(new TextDecoder().decode(entry.value)) : 0;
      if (count >= limit) return false;
      try {
        if (live) await this.kv.update(key, encode(count + 1), entry.revision);
        else await this.kv.create(key, encode(count + 1));
        return true;
      } catch (err) {
        if (!isWrongRevision(err)) throw err;
        await jitter(attempt);
      }
    }
    throw new Error(`rate-limit counter ${key} kept changing`);
  }

  /** Undoes increments of a request that ends up refused. Best effort, CAS as well. */
  private async giveBack(taken: readonly Taken[]): Promise<void> {
    for (const { key } of taken) {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const entry = await this.kv.get(key).catch(() => null);
        if (entry?.operation !== 'PUT') break;
        const count = Number(new TextDecoder().decode(entry.value));
        try {
          await this.kv.update(key, encode(Math.max(0, count - 1)), entry.revision);
          break;
        } catch (err) {
          if (!isWrongRevision(err)) break;
          await jitter(attempt);
        }
      }
    }
  }
}

/** Counter names never hold a caller id or a host in clear (and stay valid KV keys). */
function hashScope(scope: string): string {
  return createHash('sha256').update(scope, 'utf8').digest('hex').slice(0, 40);
}

function encode(n: number): Uint8Array {
  return new TextEncoder().encode(String(n));
}

function jitter(attempt: number): Promise<void> {
  const ms = Math.min(20, 1 + attempt) * Math.random();
  return new Promise((r) => setTimeout(r, ms));
}
