import { createHash } from 'node:crypto';
import type { KV } from '@nats-io/kv';
import { isWrongRevision } from '@svc/proto';
import { AuditEvent, type AuditLog } from '@svc/telemetry';
import { KvMirror } from '@svc/nats';
import { HttpError } from './http-errors.js';

const WINDOW_MS = 60_000;
/** Key prefix of the failure counters in `svc-ratelimit` (submission counters have none). */
const PREFIX = 'authfail';
const MAX_ATTEMPTS = 100;

/** One authentication failure, as audited. */
export interface AuthFailure {
  source: string;
  /** The user name tried (Basic), null for Bearer. Never a password or a token. */
  username: string | null;
  /** The caller when it was authenticated but its credential missed (a foreign job). */
  caller?: string;
  reason: string;
  requestId: string;
  route: string;
}

/**
 * Brute-force limits on every authentication path: failures counted per source address and per
 * user name in fixed one-minute windows of `svc-ratelimit`, shared by every gateway. Once either
 * count reaches AUTH_FAILURE_LIMIT, every authentication attempt from that address or with that
 * user name gets 429 until the window ends, right credentials included (a guesser learns
 * nothing during the lock). Reads come from a watched copy of the counters (no round trip on
 * the request path); failures are written by compare-and-set.
 */
export class AuthLimits {
  #prunedWindow = 0;
  /** Counts this instance wrote itself: seen at once, before the watch brings them back. */
  readonly #written = new Map<string, number>();

  private constructor(
    private readonly kv: KV | null,
    private readonly mirror: KvMirror | null,
    private readonly limit: number,
    private readonly audit: AuditLog,
    private readonly now: () => number,
  ) {}

  static async start(
    kv: KV,
    limit: number,
    audit: AuditLog,
    now: () => number = Date.now,
  ): Promise<AuthLimits> {
    if (limit <= 0) return new AuthLimits(null, null, 0, audit, now);
    const mirror = await KvMirror.start(kv, `${PREFIX}.>`);
    return new AuthLimits(kv, mirror, limit, audit, now);
  }

  /**
   * Throws 429 (audited) when the address or the user name is locked for this window.
   * `fresh` reads the shared counters from the bucket instead of the watched copy, which trails
   * other gateways' writes by a few milliseconds: key management (the admin secret) takes that
   * round trip, so a guesser cannot slip an attempt past the limit by switching gateways.
   */
  async check(
    source: string,
    username: string | null,
    attempt: AuthFailure,
    fresh = false,
  ): Promise<void> {
    if (!this.kv) return;
    const window = this.window();
    for (const scope of scopes(source, username)) {
      const count = await this.count(keyOf(scope, window), fresh);
      if (count < this.limit) continue;
      const retry = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - this.now()) / 1000));
      this.emit({ ...attempt, reason: `locked: ${attempt.reason}` }, '429');
      throw new HttpError(429, 'too many failed authentication attempts; retry later', {
        'Retry-After': String(retry),
      });
    }
  }

  /** Counts a failure against the address and the user name, and audits it. */
  async fail(failure: AuthFailure): Promise<void> {
    this.emit(failure, '401');
    if (!this.kv) return;
    const window = this.window();
    this.prune(window);
    await Promise.all(
      scopes(failure.source, failure.username).map((s) => this.bump(keyOf(s, window))),
    );
  }

  stop(): void {
    this.mirror?.stop();
  }

  private window(): number {
    return Math.floor(this.now() / WINDOW_MS);
  }

  private async count(key: string, fresh: boolean): Promise<number> {
    const entry =
      !fresh && this.mirror?.ready
        ? this.mirror.get(key)
        : await this.kv!.get(key).then((e) => (e?.operation === 'PUT' ? e : null));
    const seen = entry ? Number(new TextDecoder().decode(entry.value)) || 0 : 0;
    return Math.max(seen, this.#written.get(key) ?? 0);
  }

  private async bump(key: string): Promise<void> {
    const kv = this.kv!;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const entry = await kv.get(key);
      const live = entry?.operation === 'PUT';
      const count = live ? Number(new TextDecoder().decode(entry.value)) || 0 : 0;
      const next = new TextEncoder().encode(String(count + 1));
      try {
        if (live) await kv.update(key, next, entry.revision);
        else await kv.create(key, next);
        this.#written.set(key, Math.max(count + 1, this.#written.get(key) ?? 0));
        return;
      } catch (err) {
        if (!isWrongRevision(err)) throw err;
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(20, attempt + 1)));
      }
    }
    throw new Error(`auth failure counter ${key} kept changing`);
  }

  /** Counters of past windows leave the copy (the bucket's TTL removes them without a delete). */
  private prune(window: number): void {
    if (!this.mirror || this.#prunedWindow === window) return;
    this.#prunedWindow = window;
    const suffix = `.${window}`;
    for (const [key] of [...this.mirror.entries()]) {
      if (!key.endsWith(suffix)) this.mirror.forget(key);
    }
    for (const key of [...this.#written.keys()]) {
      if (!key.endsWith(suffix)) this.#written.delete(key);
    }
  }

  private emit(f: AuthFailure, status: string): void {
    this.audit.emit(AuditEvent.authFailed, {
      request_id: f.requestId,
      username: f.username ?? '',
      device_ip: '',
      platform: '',
      status,
      duration_ms: 0,
      caller: f.caller ?? null,
      source_ip: f.source,
      reason: f.reason,
      route: f.route,
    });
  }
}

function scopes(source: string, username: string | null): string[] {
  return username === null ? [`ip\0${source}`] : [`ip\0${source}`, `user\0${username}`];
}

/** Hashed: no address or user name in clear in the bucket (and always a valid key). */
function keyOf(scope: string, window: number): string {
  return `${PREFIX}.${createHash('sha256').update(scope, 'utf8').digest('hex').slice(0, 40)}.${window}`;
}
