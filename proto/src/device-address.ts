import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * A device is its canonical address: the same machine written as `localhost`, `127.0.0.1`,
 * `::ffff:127.0.0.1` or `[::1]`'s long form is one device for every guard (lockout, breaker,
 * rate limit, placement, session). Names are resolved once per job and the job then connects to
 * exactly that address, so a second resolution can never lead it elsewhere (DNS rebinding).
 */

/**
 * The canonical text of an IP literal (IPv4-mapped IPv6 becomes IPv4, IPv6 is compressed,
 * brackets are dropped), or null when `host` is not a literal in the standard notation. Forms
 * like `127.1` or `0x7f000001` are names here: the resolver turns them into an address, which is
 * then what every check sees.
 */
export function canonicalIp(host: string): string | null {
  let h = host.trim();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (isIP(h) === 0) return null;
  try {
    return ipaddr.process(h).toString();
  } catch {
    return null;
  }
}

/** The identity of a host before resolution: a canonical literal, or the lower-cased name. */
export function canonicalHost(host: string): string {
  return canonicalIp(host) ?? host.trim().toLowerCase().replace(/\.$/, '');
}
