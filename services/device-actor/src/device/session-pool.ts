import { createHash, randomBytes } from 'node:crypto';
import type { CliSession } from './drivers/cli-session.js';

/**
 * Warm SSH sessions kept between jobs of the same device and credentials. A session is keyed by
 * host, port, username and a salted hash of the secrets (password and enable secret), so the
 * secrets are never a map key, and a password change is visible as a different hash for the
 * same host/port/username: the old sessions are then closed.
 */

export interface SessionPoolOptions {
  /** Idle time after which a warm session is closed, in ms. Default 300000 (CONNECTION_POOL_TTL). */
  idleTtlMs?: number;
  /** Most warm sessions kept by this actor host; the oldest idle one is evicted. Default 10. */
  maxSize?: number;
}

/** The connection identity of a job. */
export interface PoolKeyParts {
  host: string;
  port: number;
  username: string;
  password: string;
  enable: string | null;
  /** The device whatever address reaches it (its pinned host key's key), when known. */
  device?: string;
  /** The session's route besides the device (algorithms, jump hosts); default none. */
  route?: string;
  /** Other secrets of the login (private key, passphrase, jump-host credentials). */
  otherSecrets?: readonly string[];
}

interface Entry {
  /** Host and port: the device, whoever is logged in. */
  address: string;
  /** The device's key when known: its sessions at any address. */
  device: string | null;
  identity: string;
  secretHash: string;
  platform: string;
  session: CliSession;
  idleSince: number;
  timer: NodeJS.Timeout;
}

export class SessionPool {
  /** Per-process salt: the hashes are useless outside this process. */
  private readonly salt = randomBytes(16);
  private readonly idleTtlMs: number;
  private readonly maxSize: number;
  /** Idle sessions, oldest first (a Set keeps insertion order and deletes in O(1)). */
  private readonly idle = new Set<Entry>();
  /**
   * The same sessions by identity, oldest first: a job finds its device's among a thousand warm
   * sessions without scanning them all.
   */
  private readonly byIdentity = new Map<string, Entry[]>();
  private closed = false;
  /** Jobs served by a warm session. */
  hits = 0;
  /** Poolable jobs that had to open a session (none warm, or the warm one was stale). */
  misses = 0;

  constructor(options: SessionPoolOptions = {}) {
    this.idleTtlMs = options.idleTtlMs ?? 300_000;
    this.maxSize = options.maxSize ?? 10;
    if (!(this.idleTtlMs > 0)) throw new RangeError('idleTtlMs must be positive');
    if (!Number.isInteger(this.maxSize) || this.maxSize < 0)
      throw new RangeError('maxSize must be a non-negative integer');
  }

  /** Warm sessions held now. */
  get size(): number {
    return this.idle.size;
  }

  /**
   * Takes a warm session for these credentials and platform, after `check` confirmed it still
   * answers. A stale one is closed and counts as a miss; null means "open a new one".
   */
  async acquire(
    parts: PoolKeyParts,
    platform: string,
    check: (session: CliSession) => Promise<boolean>,
  ): Promise<CliSession | null> {
    const { identity, secretHash } = this.keyOf(parts);
    const mine = this.byIdentity.get(identity) ?? [];
    // Same device and user, other secrets: the password changed, so those sessions are stale.
    // Awaited: the caller opens a new session next, and a device sees one at a time.
    await Promise.all(mine.filter((x) => x.secretHash !== secretHash).map((e) => this.drop(e)));
    // The newest (looked up again: the drops and other jobs changed the list meanwhile).
    const e = this.byIdentity.get(identity)?.findLast((x) => x.secretHash === secretHash);
    if (e !== undefined) {
      this.forget(e);
      if (e.platform === platform && (await check(e.session))) {
        this.hits++;
        return e.session;
      }
      await e.session.close().catch(() => undefined);
    }
    this.misses++;
    return null;
  }

  /** Keeps a healthy session warm for the next job with the same identity. */
  release(parts: PoolKeyParts, platform: string, session: CliSession): void {
    if (this.closed || this.maxSize === 0 || !session.reusable) {
      void session.close().catch(() => undefined);
      return;
    }
    const { identity, secretHash } = this.keyOf(parts);
    const entry: Entry = {
      address: addressOf(parts.host, parts.port),
      device: parts.device ?? null,
      identity,
      secretHash,
      platform,
      session,
      idleSince: Date.now(),
      timer: setTimeout(() => void this.drop(entry), this.idleTtlMs),
    };
    entry.timer.unref();
    this.idle.add(entry);
    const mine = this.byIdentity.get(identity);
    if (mine) mine.push(entry);
    else this.byIdentity.set(identity, [entry]);
    while (this.idle.size > this.maxSize) {
      const oldest = this.idle.values().next().value;
      if (oldest === undefined) break;
      void this.drop(oldest);
    }
  }

  /**
   * Closes every warm session of one device (any user) — at its address, or at any address when
   * its key is given — and waits until they are gone: done before a job opens its own session,
   * so that the device never sees two from this host.
   */
  async closeDevice(where: { host?: string; port?: number; device?: string }): Promise<void> {
    const address =
      where.host !== undefined && where.port !== undefined
        ? addressOf(where.host, where.port)
        : null;
    const gone = [...this.idle].filter(
      (e) => e.address === address || (where.device !== undefined && e.device === where.device),
    );
    await Promise.all(gone.map((e) => this.drop(e)));
  }

  /**
   * Closes every warm session whose device address `matches` (host as the pool keys it, lower
   * case, and port) and waits until they are gone: a shard given up takes its devices' warm
   * sessions with it, so that the next owner's session is the device's only one.
   */
  async closeWhere(matches: (host: string, port: number) => boolean): Promise<void> {
    const gone = [...this.idle].filter((e) => {
      const [host, port] = JSON.parse(e.address) as [string, number];
      return matches(host, port);
    });
    await Promise.all(gone.map((e) => this.drop(e)));
  }

  /** Closes every warm session; later releases close their session at once. */
  async close(): Promise<void> {
    this.closed = true;
    const entries = [...this.idle];
    this.idle.clear();
    this.byIdentity.clear();
    await Promise.all(
      entries.map(async (e) => {
        clearTimeout(e.timer);
        await e.session.close().catch(() => undefined);
      }),
    );
  }

  private drop(entry: Entry): Promise<void> {
    this.forget(entry);
    return entry.session.close().catch(() => undefined);
  }

  /** Takes the entry out of the pool (its session left open) and stops its idle timer. */
  private forget(entry: Entry): void {
    this.idle.delete(entry);
    const mine = this.byIdentity.get(entry.identity);
    const at = mine?.indexOf(entry) ?? -1;
    if (mine && at >= 0) {
      mine.splice(at, 1);
      if (mine.length === 0) this.byIdentity.delete(entry.identity);
    }
    clearTimeout(entry.timer);
  }

  private keyOf(parts: PoolKeyParts): { identity: string; secretHash: string } {
    const hash = createHash('sha256')
      .update(this.salt)
      .update(parts.password)
      .update('\0')
      .update(parts.enable ?? parts.password);
    for (const s of parts.otherSecrets ?? []) hash.update('\0').update(s);
    const secretHash = hash.digest('hex');
    return {
      identity: JSON.stringify([
        parts.host.toLowerCase(),
        parts.port,
        parts.username,
        ...(parts.route !== undefined ? [parts.route] : []),
      ]),
      secretHash,
    };
  }
}

function addressOf(host: string, port: number): string {
  return JSON.stringify([host.toLowerCase(), port]);
}
