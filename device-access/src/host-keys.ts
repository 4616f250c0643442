import { createHash } from 'node:crypto';
import type { KV } from '@nats-io/kv';
import { Type } from 'typebox';
import {
  ConfigError,
  canonicalHost,
  decodeMessage,
  encodeJson,
  isWrongRevision,
  MalformedMessage,
  PinnedHostKeyRecord,
  encodeToken,
} from '@svc/proto';
import { deviceKeyOf } from './device-guards.js';
import { KvMirror, bucketKeys, retryTransient } from '@svc/nats';

/**
 * Host-key trust: which SSH host key the service accepts for a device (context + canonical
 * address + port). Pinned keys live in the `svc-hostkeys` bucket, shared by every actor host;
 * the check runs during the SSH handshake, before any credential is sent.
 */

export type HostKeyMode = 'tofu' | 'strict' | 'off';
const MODES: readonly HostKeyMode[] = ['tofu', 'strict', 'off'];

export const HostKeySettings = {
  HOST_KEY_POLICY: Type.Array(Type.String(), {
    default: ['tofu'],
    description:
      'Host-key trust per context, comma-separated `[context=]mode`: `tofu` (pin the first key seen, refuse a changed one), `strict` (only keys an admin loaded) or `off` (no check, logged). An entry without a context is the default.',
  }),
};

/** A pinned key as stored and as the admin API shows it. */
export interface PinnedHostKey {
  context: string;
  host: string;
  port: number;
  /** e.g. `ssh-ed25519`. */
  key_type: string;
  /** The public key blob, base64 (as in an OpenSSH known_hosts line). */
  public_key: string;
  /** `SHA256:<base64>` as OpenSSH prints it. */
  fingerprint: string;
  /** `tofu`: pinned on first use; `admin`: loaded by an administrator. */
  source: 'tofu' | 'admin';
  pinned_at: string;
}

/** The OpenSSH fingerprint of a public key blob: `SHA256:` and unpadded base64. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** The key type named inside a public key blob (its first SSH string). */
export function keyTypeOf(blob: Buffer): string | null {
  if (blob.length < 4) return null;
  const n = blob.readUInt32BE(0);
  if (n === 0 || n > 64 || 4 + n > blob.length) return null;
  const type = blob.subarray(4, 4 + n).toString('latin1');
  return /^[a-z0-9@.-]+$/.test(type) ? type : null;
}

/**
 * Reads an OpenSSH public key line (`ssh-ed25519 AAAA… [comment]`, as in `*.pub` files and
 * `ssh-keyscan` output without the host). Null when it is not one.
 */
export function parseOpenSshPublicKey(line: string): { type: string; blob: Buffer } | null {
  const parts = line.trim().split(/\s+/);
  if (parts.length < 2) return null;
  const [type, b64] = parts as [string, string];
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return null;
  const blob = Buffer.from(b64, 'base64');
  return keyTypeOf(blob) === type ? { type, blob } : null;
}

/** The mode of each context from HOST_KEY_POLICY; throws ConfigError listing bad entries. */
export function hostKeyModes(entries: readonly string[]): (context: string) => HostKeyMode {
  const problems: string[] = [];
  const byContext = new Map<string, HostKeyMode>();
  let fallback: HostKeyMode = 'tofu';
  for (const raw of entries) {
    const m = /^(?:([A-Za-z0-9_-]+)=)?([a-z]+)$/.exec(raw.trim());
    const mode = m?.[2] as HostKeyMode | undefined;
    if (!m || mode === undefined || !MODES.includes(mode)) {
      problems.push(`HOST_KEY_POLICY: ${JSON.stringify(raw)} is not [context=]tofu|strict|off`);
      continue;
    }
    if (m[1] !== undefined) byContext.set(m[1], mode);
    else fallback = mode;
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return (context) => byContext.get(context) ?? fallback;
}

/**
 * Watched copies of `svc-hostkeys`, one per bucket handle (so per process), shared by its
 * stores; null when the copy could not be started (then the bucket is read).
 */
const copies = new WeakMap<KV, Promise<KvMirror | null>>();
/** Each pin of a copy as decoded, by the stored value it was decoded from. */
const decodedPins = new WeakMap<Uint8Array, PinnedHostKey>();

/** How long a first pin is tried again while the store does not answer (ms). */
const PIN_OUTAGE_MS = 10_000;

/** The pinned keys in `svc-hostkeys`, keyed like the other device guards. */
export class HostKeyStore {
  constructor(readonly kv: KV) {}

  static keyOf(context: string, host: string, port: number): string {
    return encodeToken(deviceKeyOf(context, host, port));
  }

  /**
   * The key of the device guards (lockout, breaker) for a device: its pinned host key when one
   * is pinned, so that every address presenting the same key is one device; else context,
   * address and port (before first contact, or with HOST_KEY_POLICY off). A store error falls
   * back to the address: guards never fail a job for it.
   */
  async guardKeyOf(context: string, address: string, port: number): Promise<string> {
    return (
      (await this.pinnedDeviceOf(context, address, port)) ?? deviceKeyOf(context, address, port)
    );
  }

  /** The device key of the host key pinned for this address (`<context>|hostkey:<fp>`), or null. */
  async pinnedDeviceOf(context: string, address: string, port: number): Promise<string | null> {
    const pin = await this.pinnedCopy(context, address, port).catch(() => null);
    return pin !== null ? HostKeyStore.deviceOf(context, pin.fingerprint) : null;
  }

  /**
   * The pin as the watched copy of the bucket has it. Every job's device guards ask (three
   * times at the gateway, twice on the actor host): a round trip each was 10 of a job's 34
   * messages through nats-server. The copy trails another process's new pin by milliseconds,
   * as the breaker and lockout copies do; this process's own writes wait for it (`settled`).
   * Verifying a device's key (`pinnedForCheck`) still reads the bucket.
   */
  private async pinnedCopy(
    context: string,
    host: string,
    port: number,
  ): Promise<PinnedHostKey | null> {
    let copy = copies.get(this.kv);
    if (!copy) {
      copy = KvMirror.start(this.kv).catch(() => null);
      copies.set(this.kv, copy);
    }
    const pin = HostKeyStore.pinIn(await copy, HostKeyStore.keyOf(context, host, port));
    return pin !== undefined ? pin : this.get(context, host, port);
  }

  /** The pin a copy holds for `key`: null when none, undefined when there is no ready copy. */
  private static pinIn(
    mirror: KvMirror | null | undefined,
    key: string,
  ): PinnedHostKey | null | undefined {
    if (!mirror?.ready) return undefined;
    const entry = mirror.get(key);
    if (!entry) return null;
    // Decoded once per stored value: a job's guards ask five times.
    let pin = decodedPins.get(entry.value);
    if (!pin) {
      pin = decodeMessage(PinnedHostKeyRecord, entry.value);
      decodedPins.set(entry.value, pin);
    }
    return pin;
  }

  /**
   * Returns once this process's copy shows its own write (revision, or null for a delete), so
   * that the guards of the next job here key by it. Bounded: a copy that fell behind gives up
   * after two seconds (its watch catches up on its own).
   */
  private async settled(key: string, revision: number | null): Promise<void> {
    const mirror = await copies.get(this.kv);
    if (mirror?.ready) await mirror.caughtUp(key, revision, 2000);
  }

  /** The device key of a host key (`<context>|hostkey:<fingerprint>`): one device, any address. */
  static deviceOf(context: string, fingerprint: string): string {
    return `${context}|hostkey:${fingerprint}`;
  }

  async get(context: string, host: string, port: number): Promise<PinnedHostKey | null> {
    const entry = await this.kv.get(HostKeyStore.keyOf(context, host, port));
    return entry && entry.operation === 'PUT'
      ? decodeMessage(PinnedHostKeyRecord, entry.value)
      : null;
  }

  /**
   * The pin a device's offered key is checked against: the bucket's. When the bucket does not
   * answer (its node frozen or electing a leader), the pin this process's watched copy holds
   * (as last seen; it trails a change by milliseconds): a device pinned before is still reached
   * and a changed key still refused, instead of the job failing on the store. No pin in the
   * copy: the store's error (a first contact needs the bucket to pin). `onFallback` is told.
   */
  async pinnedForCheck(
    context: string,
    host: string,
    port: number,
    onFallback?: (err: unknown) => void,
  ): Promise<PinnedHostKey | null> {
    try {
      return await this.get(context, host, port);
    } catch (err) {
      if (err instanceof MalformedMessage) throw err;
      const pin = HostKeyStore.pinIn(
        await copies.get(this.kv),
        HostKeyStore.keyOf(context, host, port),
      );
      if (!pin) throw err;
      onFallback?.(err);
      return pin;
    }
  }

  /**
   * Pins `blob` unless a key is pinned already; returns the key that is pinned afterwards (the
   * other one when another host pinned first).
   */
  async pinFirst(
    context: string,
    host: string,
    port: number,
    blob: Buffer,
  ): Promise<PinnedHostKey> {
    const pin = this.record(context, host, port, blob, 'tofu');
    const key = HostKeyStore.keyOf(context, host, port);
    // Tried again through a store outage (a NATS node lost while the handshake waits): a create
    // whose answer was lost finds its own pin next. One that outlives its handshake still pins
    // the key the device showed.
    const created = await retryTransient(async () => {
      try {
        await this.settled(key, await this.kv.create(key, encodeJson(pin)));
        return true;
      } catch (err) {
        if (isWrongRevision(err) || /exists/i.test(String(err))) return false;
        throw err;
      }
    }, PIN_OUTAGE_MS);
    return created ? pin : ((await this.get(context, host, port)) ?? pin);
  }

  /** Loads (or replaces) the key of a device: an administrator's decision. */
  async put(context: string, host: string, port: number, blob: Buffer): Promise<PinnedHostKey> {
    const pin = this.record(context, host, port, blob, 'admin');
    const key = HostKeyStore.keyOf(context, host, port);
    await this.settled(key, await this.kv.put(key, encodeJson(pin)));
    return pin;
  }

  /** Forgets a pinned key; false when none was pinned. */
  async delete(context: string, host: string, port: number): Promise<boolean> {
    if ((await this.get(context, host, port)) === null) return false;
    const key = HostKeyStore.keyOf(context, host, port);
    await this.kv.delete(key);
    await this.settled(key, null);
    return true;
  }

  async list(): Promise<PinnedHostKey[]> {
    const out: PinnedHostKey[] = [];
    for (const key of await bucketKeys(this.kv)) {
      const entry = await this.kv.get(key);
      if (entry && entry.operation === 'PUT')
        out.push(decodeMessage(PinnedHostKeyRecord, entry.value));
    }
    return out.sort(
      (a, b) =>
        a.context.localeCompare(b.context) || a.host.localeCompare(b.host) || a.port - b.port,
    );
  }

  private record(
    context: string,
    host: string,
    port: number,
    blob: Buffer,
    source: PinnedHostKey['source'],
  ): PinnedHostKey {
    return {
      context,
      host: canonicalHost(host),
      port,
      key_type: keyTypeOf(blob) ?? 'unknown',
      public_key: blob.toString('base64'),
      fingerprint: fingerprintOf(blob),
      source,
      pinned_at: new Date().toISOString(),
    };
  }
}
