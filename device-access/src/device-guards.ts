import type { KV } from '@nats-io/kv';
import {
  decodeMessage,
  encodeJson,
  isWrongRevision,
  BreakerRecord,
  LockoutRecord,
  canonicalHost,
  encodeToken,
} from '@svc/proto';
import type { KvMirror } from '@svc/nats';

/**
 * Devices are identified by context, canonical address and port (the breaker, lockout, rate
 * limit, placement and session key). Pass the resolved address where there is one; a host as
 * written is canonicalised (IP literals normalised, names lower-cased).
 */
export function deviceKeyOf(context: string, host: string, port: number): string {
  return `${context}|${canonicalHost(host)}|${port}`;
}

type BreakerState = BreakerRecord;

/** `clean`: no failures on record, so a success need not be written back. */
export type BreakerVerdict =
  { allowed: true; probe: boolean; clean: boolean } | { allowed: false; retryAtMs: number };

/**
 * A circuit breaker per device (context+host+port) shared by every actor host through the
 * `svc-breakers` bucket. Counts change only by compare-and-set, so concurrent failures on two
 * hosts are never lost. Opens after `threshold` consecutive connection failures, stays open
 * `openMs`, then lets exactly one probe through (half-open); the probe's outcome closes or
 * re-opens it.
 */
export class CircuitBreaker {
  /** @param mirror a watched copy of the bucket: a healthy device then costs no round trip. */
  constructor(
    private readonly kv: KV,
    private readonly threshold: number,
    private readonly openMs: number,
    private readonly mirror: KvMirror | null = null,
  ) {}

  /** Whether a job may connect now; `probe` when it is the half-open probe. */
  async admit(deviceKey: string, jobId: string, now = Date.now()): Promise<BreakerVerdict> {
    const key = encodeToken(deviceKey);
    if (this.mirror?.ready && this.mirror.get(key) === null) {
      return { allowed: true, probe: false, clean: true };
    }
    for (let attempt = 0; attempt < 10; attempt++) {
      const entry = await this.kv.get(key);
      if (!entry || entry.operation !== 'PUT') return { allowed: true, probe: false, clean: true };
      const s = decodeMessage(BreakerRecord, entry.value);
      if (s.state === 'closed') return { allowed: true, probe: false, clean: s.failures === 0 };
      if (now < s.since + this.openMs) return { allowed: false, retryAtMs: s.since + this.openMs };
      // Open long enough (or a probe that never reported): this job becomes the probe.
      const next: BreakerState = { ...s, state: 'half_open', since: now, probe: jobId };
      try {
        await this.kv.update(key, encodeJson(next), entry.revision);
        return { allowed: true, probe: true, clean: false };
      } catch (err) {
        if (!isWrongRevision(err)) throw err;
      }
    }
    return { allowed: false, retryAtMs: now + this.openMs };
  }

  async recordSuccess(deviceKey: string): Promise<void> {
    const key = encodeToken(deviceKey);
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return;
    const s = decodeMessage(BreakerRecord, entry.value);
    if (s.state === 'closed' && s.failures === 0) return;
    await this.kv.delete(key, { previousSeq: entry.revision }).catch(() => undefined);
  }

  /** Counts a connection failure; returns true when the breaker is (now) open. */
  async recordFailure(deviceKey: string, now = Date.now()): Promise<boolean> {
    const key = encodeToken(deviceKey);
    for (let attempt = 0; attempt < 20; attempt++) {
      const entry = await this.kv.get(key);
      const current: BreakerState =
        entry && entry.operation === 'PUT'
          ? decodeMessage(BreakerRecord, entry.value)
          : { state: 'closed', failures: 0, since: now, probe: null };
      const failures = current.failures + 1;
      const open = current.state !== 'closed' || failures >= this.threshold;
      const next: BreakerState = open
        ? { state: 'open', failures, since: now, probe: null }
        : { ...current, failures };
      try {
        if (entry && entry.operation === 'PUT')
          await this.kv.update(key, encodeJson(next), entry.revision);
        else await this.kv.create(key, encodeJson(next));
        return open;
      } catch (err) {
        if (!isWrongRevision(err)) throw err;
      }
    }
    return false;
  }
}

/**
 * Failed device logins per user per device in a sliding window (`svc-lockout`). Enough of them
 * lock the user out of that device: the gateway answers 403 and actors fail queued jobs fast,
 * so that the service never locks a real account on the device's own AAA server.
 */
export class LockoutLedger {
  /** @param mirror a watched copy of the bucket: a user with no failures costs no round trip. */
  constructor(
    private readonly kv: KV,
    private readonly threshold: number,
    private readonly windowMs: number,
    private readonly mirror: KvMirror | null = null,
  ) {}

  static keyOf(username: string, deviceKey: string): string {
    return encodeToken(`${username}|${deviceKey}`);
  }

  async isLockedOut(username: string, deviceKey: string, now = Date.now()): Promise<boolean> {
    const key = LockoutLedger.keyOf(username, deviceKey);
    let value: Uint8Array | null;
    if (this.mirror?.ready) value = this.mirror.get(key)?.value ?? null;
    else {
      const entry = await this.kv.get(key);
      value = entry && entry.operation === 'PUT' ? entry.value : null;
    }
    if (!value) return false;
    const times = decodeMessage(LockoutRecord, value).filter((t) => t > now - this.windowMs);
    return times.length >= this.threshold;
  }

  async recordFailure(username: string, deviceKey: string, now = Date.now()): Promise<void> {
    const key = LockoutLedger.keyOf(username, deviceKey);
    for (let attempt = 0; attempt < 20; attempt++) {
      const entry = await this.kv.get(key);
      const times =
        entry && entry.operation === 'PUT'
          ? decodeMessage(LockoutRecord, entry.value).filter((t) => t > now - this.windowMs)
          : [];
      times.push(now);
      try {
        if (entry && entry.operation === 'PUT')
          await this.kv.update(key, encodeJson(times), entry.revision);
        else await this.kv.create(key, encodeJson(times));
        return;
      } catch (err) {
        if (!isWrongRevision(err)) throw err;
      }
    }
  }
}
