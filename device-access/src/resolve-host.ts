import { lookup } from 'node:dns/promises';
import { canonicalHost, canonicalIp } from '@svc/proto';

/** How long a submission waits for a name to resolve before leaving it to the actor. */
export const RESOLVE_TIMEOUT_MS = 2000;

/**
 * The address a job connects to: the literal itself, or the first address the system resolver
 * gives for the name (IPv4 first, as OpenSSH does by default). Null when the name does not
 * resolve in time.
 */
export async function resolveHost(
  host: string,
  timeoutMs = RESOLVE_TIMEOUT_MS,
): Promise<string | null> {
  const literal = canonicalIp(host);
  if (literal !== null) return literal;
  const name = canonicalHost(host);
  if (name === '') return null;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), timeoutMs);
  });
  try {
    const found = await Promise.race([lookup(name, { all: true }).catch(() => null), timeout]);
    if (found === null || found.length === 0) return null;
    const first = found.find((a) => a.family === 4) ?? found[0]!;
    return canonicalIp(first.address);
  } finally {
    clearTimeout(timer);
  }
}
