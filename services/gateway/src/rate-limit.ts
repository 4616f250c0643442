import { createHash } from 'node:crypto';
import type { KV } from '@nats-io/kv';
import { isWrongRevision } from '@svc/proto';
import { HttpError } from './http-errors.js';

/** Fixed window length of both limits, ms (the settings are "per minute"). */
const WINDOW_MS = 60_000;
/** CAS attempts per counter before the store counts as failing (answered 503). */
const MAX_ATTEMPTS = 200;
/** Counters given back at once (a refused batch gives back one per device). */
const GIVE_BACK_CHUNK = 64;

/** One counter to take units from: `scope` names it, `limit` caps it (0 = unlimited). */
export interface RateCounter {
  scope: string;
  limit: number;
  /** Units to take (default 1): a batch takes all its jobs' units at once. */
  units?: number;
}

/** A 429 from one counter, with the units it still had (a batch names the entry it refuses). */
export class RateLimited extends HttpError {
  constructor(
    readonly left: number,
    limit: number,
    resetSeconds: number,
  ) {
    super(429, `rate limit of ${limit} per minute reached; retry later`, {
      'Retry-After': String(resetSeconds),
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(resetSeconds),
    });
  }
}

/** Units raised on one counter (`key`: its hashed name and window). */
export interface Taken {
  scope: string;
  key: string;
  units: number;
}

/**
 * What one `take` raised, in the window it raised it, so that a request refused later (a batch
 * refused at admission, a batch entry that turned out a duplicate) can give it back.
 */
export class RateGrant {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly taken: Taken[],
  ) {}

  /** Gives back `units` of the counter `scope` (every unit taken when absent). */
  async giveBack(parts?: readonly { scope: string; units: number }[]): Promise<void> {
    const back: Taken[] = [];
    if (!parts) back.push(...this.taken.splice(0));
    for (const p of parts ?? []) {
      const t = this.taken.find((x) => x.scope === p.scope && x.units > 0);
      if (!t) continue;
      const units = Math.min(p.units, t.units);
      t.units -= units;
      back.push({ ...t, units });
    }
    await this.limiter.giveBack(back);
  }
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

  /**
   * Takes its units from every counter, one after the other, or none and throws `RateLimited`
   * from the counter that refused: a narrower counter given first refuses before a wider one
   * is raised.
   */
  async take(counters: readonly RateCounter[]): Promise<RateGrant> {
    const window = Math.floor(this.now() / WINDOW_MS);
    const taken: Taken[] = [];
    for (const c of counters) {
      const units = c.units ?? 1;
      if (c.limit <= 0 || units <= 0) continue;
      const key = `${hashScope(c.scope)}.${window}`;
      const left = await this.increment(key, c.limit, units).catch(async (err: unknown) => {
        await this.giveBack(taken);
        throw err;
      });
      if (left !== null) {
        await this.giveBack(taken);
        const resetSeconds = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - this.now()) / 1000));
        throw new RateLimited(left, c.limit, resetSeconds);
      }
      taken.push({ scope: c.scope, key, units });
    }
    return new RateGrant(this, taken);
  }

  /** Raises the counter by `units`; null when it did, else the units it had left. */
  private async increment(key: string, limit: number, units: number): Promise<number | null> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const entry = await this.kv.get(key);
      const live = entry?.operation === 'PUT';
      const count = live ? Number(new TextDecoder().decode(entry.value)) : 0;
      if (count + units > limit) return Math.max(0, limit - count);
      try {
        if (live) await this.kv.update(key, encode(count + units), entry.revision);
        else await this.kv.create(key, encode(count + units));
        return null;
      } catch (err) {
        if (!isWrongRevision(err)) throw err;
        await jitter(attempt);
      }
    }
    throw new Error(`rate-limit counter ${key} kept changing`);
  }

  /** Undoes increments of a request that ends up refused. Best effort, CAS as well. */
  async giveBack(taken: readonly Taken[]): Promise<void> {
    for (let i = 0; i < taken.length; i += GIVE_BACK_CHUNK) {
      await Promise.all(taken.slice(i, i + GIVE_BACK_CHUNK).map((t) => this.decrement(t)));
    }
  }

  private async decrement({ key, units }: Taken): Promise<void> {
    if (units <= 0) return;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const entry = await this.kv.get(key).catch(() => null);
      if (entry?.operation !== 'PUT') return;
      const count = Number(new TextDecoder().decode(entry.value));
      try {
        await this.kv.update(key, encode(Math.max(0, count - units)), entry.revision);
        return;
      } catch (err) {
        if (!isWrongRevision(err)) return;
        await jitter(attempt);
      }
    }
  }
}

/** The counter of a caller's submissions. */
export const callerScope = (callerId: string): string => `caller\0${callerId}`;

/** The counter of a caller's jobs at one device (`device`: its key, host and port). */
export const deviceScope = (callerId: string, device: string): string =>
  `device\0${callerId}\0${device}`;

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
