import { deviceKeyOf } from '@svc/proto';
import { HttpError } from './http-errors.js';
import {
  RateLimited,
  callerScope,
  deviceScope,
  type RateGrant,
  type RateLimiter,
} from './rate-limit.js';

/** Device counters raised at once when a batch takes its budget (each is a distinct key). */
const TAKE_CONCURRENCY = 32;

/** A batch refused at one of its entries: the answer names it (`devices[<index>]: …`). */
export class RefusedAt extends Error {
  override readonly name = 'RefusedAt';
  constructor(
    readonly index: number,
    readonly refusal: HttpError,
  ) {
    super(refusal.message, { cause: refusal });
  }

  /** The HTTP answer: the refusal's status and headers, its message prefixed by the entry. */
  toHttp(): HttpError {
    return new HttpError(
      this.refusal.status,
      `devices[${this.index}]: ${this.refusal.message}`,
      this.refusal.headers,
    );
  }
}

/** What a batch entry needs to name its counters. */
export interface BudgetEntry {
  spec: { host: string; port: number };
  address: string | null;
  caller: { id: string };
}

/**
 * The rate budgets of a whole batch, taken before any job is admitted, all or nothing. Taking
 * them job by job under parallel admission would have every admission compare-and-set the one
 * caller counter (retries on retries); here the caller counter is raised once by the batch's
 * size and each device counter once by its entries. A refusal names the entry where the budget
 * runs out, the one that admission in device order would have been refused at.
 */
export class BatchBudget {
  private constructor(
    private readonly scopes: readonly (string | null)[],
    private readonly callerScope: string,
    private readonly grants: readonly RateGrant[],
  ) {}

  /**
   * `counted[i]` false: entry i needs no budget (it repeats an earlier entry, so it will be a
   * dedup hit on that entry's job). Throws `RefusedAt` (429) having taken nothing.
   */
  static async take(
    limiter: RateLimiter,
    entries: readonly BudgetEntry[],
    counted: readonly boolean[],
    limits: { caller: number; device: number },
  ): Promise<BatchBudget> {
    const callerId = entries[0]?.caller.id ?? '';
    const scopes = entries.map((e, i) =>
      counted[i]
        ? deviceScope(callerId, deviceKeyOf('', e.address ?? e.spec.host, e.spec.port))
        : null,
    );
    const byDevice = new Map<string, number[]>();
    scopes.forEach((scope, i) => {
      if (scope !== null) byDevice.set(scope, [...(byDevice.get(scope) ?? []), i]);
    });
    const devices = [...byDevice];
    const scope = callerScope(callerId);
    // Counted entries in device order: the caller's budget runs out at `counted[left]`.
    const countedAt = scopes.flatMap((s, i) => (s !== null ? [i] : []));
    const takeCaller = (units: number) =>
      limiter.take([{ scope, limit: limits.caller, units }]).catch((err: unknown) => {
        if (!(err instanceof RateLimited)) throw err;
        throw new RefusedAt(countedAt[err.left] ?? countedAt.at(-1) ?? 0, err);
      });
    // The narrower counters first, as for one job: a device that refuses never holds units of
    // the caller's budget. A device runs out at its entry `at[left]`; of several, the first.
    let deviceGrant: RateGrant;
    try {
      deviceGrant = await limiter.take(
        devices.map(([s, at]) => ({ scope: s, limit: limits.device, units: at.length })),
        TAKE_CONCURRENCY,
        (counter, left) => devices[counter]![1][left]!,
      );
    } catch (err) {
      if (!(err instanceof RateLimited)) throw err;
      const at = devices[err.counter]![1][err.left]!;
      // Unless the caller's budget runs out at an earlier entry: that refusal comes first.
      const before = countedAt.filter((i) => i < at).length;
      if (before > 0) await (await takeCaller(before)).giveBack();
      throw new RefusedAt(at, err);
    }
    let callerGrant: RateGrant;
    try {
      callerGrant = await takeCaller(countedAt.length);
    } catch (err) {
      await deviceGrant.giveBack();
      throw err;
    }
    return new BatchBudget(scopes, scope, [deviceGrant, callerGrant]);
  }

  /** Gives back what the entries at `indices` took (dedup hits on jobs outside the batch). */
  async giveBackFor(indices: readonly number[]): Promise<void> {
    const units = new Map<string, number>();
    for (const i of indices) {
      const scope = this.scopes[i];
      if (scope === undefined || scope === null) continue;
      units.set(scope, (units.get(scope) ?? 0) + 1);
      units.set(this.callerScope, (units.get(this.callerScope) ?? 0) + 1);
    }
    const parts = [...units].map(([scope, n]) => ({ scope, units: n }));
    if (parts.length === 0) return;
    await Promise.all(this.grants.map((g) => g.giveBack(parts)));
  }

  /** Gives back everything (the batch was refused after all). */
  async giveBack(): Promise<void> {
    await Promise.all(this.grants.map((g) => g.giveBack()));
  }
}

/**
 * Runs `fn` over 0..count-1, at most `width` at once, starting them in index order; stops
 * starting new ones once `stop()` says so. Resolves when every started one has settled.
 */
export async function forEachBounded(
  count: number,
  width: number,
  fn: (index: number) => Promise<void>,
  stop: () => boolean = () => false,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count && !stop()) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(width, count) }, worker));
}
