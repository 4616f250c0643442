import { KeyedWindow } from '@svc/proto';
import { deviceKeyOf } from '@svc/device-access';
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
  /** The device key of its pinned host key (one device whatever address), when it has one. */
  device?: string | null;
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
        ? deviceScope(callerId, e.device ?? deviceKeyOf('', e.address ?? e.spec.host, e.spec.port))
        : null,
    );
    // Each device's entries, in device order.
    const byDevice = new Map<string, number[]>();
    scopes.forEach((scope, i) => {
      if (scope === null) return;
      const at = byDevice.get(scope);
      if (at) at.push(i);
      else byDevice.set(scope, [i]);
    });
    const scope = callerScope(callerId);
    // Counted entries in device order: the caller's budget runs out at `counted[left]`.
    const countedAt = scopes.flatMap((s, i) => (s !== null ? [i] : []));
    const takeCaller = (units: number) =>
      limiter.take([{ scope, limit: limits.caller, units }]).catch((err: unknown) => {
        if (!(err instanceof RateLimited)) throw err;
        throw new RefusedAt(countedAt[err.left] ?? countedAt.at(-1) ?? 0, err);
      });
    // The narrower counters first, as for one job: a device that refuses never holds units of
    // the caller's budget. Each device counter is its own key, so they are raised concurrently.
    // A device runs out at its entry `at[left]`; of several, the earliest entry refuses.
    const deviceGrants: RateGrant[] = [];
    const outcome: {
      refusal: { at: number; err: RateLimited } | null;
      failure: { at: number; err: unknown } | null;
    } = { refusal: null, failure: null };
    const taking = new KeyedWindow(TAKE_CONCURRENCY, () => undefined);
    for (const [device, at] of limits.device > 0 ? byDevice : []) {
      await taking.add(device, async () => {
        try {
          deviceGrants.push(
            await limiter.take([{ scope: device, limit: limits.device, units: at.length }]),
          );
        } catch (err) {
          if (err instanceof RateLimited) {
            const entry = at[err.left]!;
            const { refusal } = outcome;
            if (refusal === null || entry < refusal.at) outcome.refusal = { at: entry, err };
          } else if (outcome.failure === null || at[0]! < outcome.failure.at) {
            outcome.failure = { at: at[0]!, err };
          }
        }
      });
    }
    await taking.drain();
    const giveBackDevices = () => Promise.all(deviceGrants.map((g) => g.giveBack()));
    const { refusal, failure } = outcome;
    if (failure !== null || refusal !== null) {
      await giveBackDevices();
      if (failure !== null) throw failure.err;
      const { at, err } = refusal!;
      // Unless the caller's budget runs out at an earlier entry: that refusal comes first.
      const before = countedAt.filter((i) => i < at).length;
      if (before > 0) await (await takeCaller(before)).giveBack();
      throw new RefusedAt(at, err);
    }
    let callerGrant: RateGrant;
    try {
      callerGrant = await takeCaller(countedAt.length);
    } catch (err) {
      await giveBackDevices();
      throw err;
    }
    return new BatchBudget(scopes, scope, [...deviceGrants, callerGrant]);
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
