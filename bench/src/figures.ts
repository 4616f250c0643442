/** The benchmark's own process when it holds only the fleet and the client (`--processes`). */
export const FLEET_AND_CLIENT = 'fleet+client';

/** A sum over svc and nats-server: every watched process but the fleet and client. */
export const svcSum = (perProcess: readonly (readonly [string, number])[]): number =>
  perProcess.filter(([name]) => name !== FLEET_AND_CLIENT).reduce((sum, [, ms]) => sum + ms, 0);

/**
 * The median of the finite values (the lower of the middle two for an even count, as the 50th
 * percentile of `load.js`); NaN when there are none (a figure a run did not report).
 */
export function median(values: readonly number[]): number {
  const sorted = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.ceil(sorted.length / 2) - 1]!;
}
