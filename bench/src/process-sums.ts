/** The benchmark's own process when it holds only the fleet and the client (`--processes`). */
export const FLEET_AND_CLIENT = 'fleet+client';

/** A sum over svc and nats-server: every watched process but the fleet and client. */
export const svcSum = (perProcess: readonly (readonly [string, number])[]): number =>
  perProcess.filter(([name]) => name !== FLEET_AND_CLIENT).reduce((sum, [, ms]) => sum + ms, 0);
