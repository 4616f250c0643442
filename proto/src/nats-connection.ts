import { connect, type NatsConnection } from '@nats-io/transport-node';

/** Oldest nats-server the service runs on (Debian bookworm ships 2.9.10). */
export const MIN_SERVER_VERSION = '2.9.0';

/**
 * Connects with endless reconnects (a cluster node may restart at any time) and refuses servers
 * older than MIN_SERVER_VERSION, since older servers silently ignore options the service uses.
 */
export async function connectNats(url: string, name: string): Promise<NatsConnection> {
  const nc = await connect({
    servers: url.split(',').map((s) => s.trim()),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    // Without this the first connect fails at once when the server is still starting.
    waitOnFirstConnect: true,
    timeout: 10_000,
    // Async traces build an Error (with a stack) for every request in case it fails: measured
    // at about 1 ms of CPU per job on an actor host. Errors still carry their message and code.
    noAsyncTraces: true,
  });
  const version = nc.info?.version ?? '0.0.0';
  if (compareVersions(version, MIN_SERVER_VERSION) < 0) {
    await nc.close();
    throw new Error(`nats-server ${version} is older than the required ${MIN_SERVER_VERSION}`);
  }
  return nc;
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/).map((x) => parseInt(x, 10) || 0);
  const pb = b.split(/[.-]/).map((x) => parseInt(x, 10) || 0);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
