import { Type, type Static } from 'typebox';
import { JobEnvelope } from './job.js';
import { decodeOrDrop, type DropContext } from '../codec.js';
import { LockKeys, JOB_SHARDS } from '../subjects.js';

/**
 * Records of the small buckets, as services write them and read them back (`decodeMessage`).
 * Not part of the HTTP API.
 */

/** A lease in `svc-locks` (dispatcher per context, reaper). */
export const LeaseRecord = Type.Object(
  { holder: Type.String(), expires_at: Type.Number({ description: 'epoch ms' }) },
  { $id: 'LeaseRecord' },
);
export type LeaseRecord = Static<typeof LeaseRecord>;

/** A device's circuit breaker in `svc-breakers`. */
export const BreakerRecord = Type.Object(
  {
    state: Type.Enum(['closed', 'open', 'half_open']),
    failures: Type.Integer({ minimum: 0 }),
    /** Epoch ms the breaker opened (or the probe started). */
    since: Type.Number(),
    /** Job id of the half-open probe. */
    probe: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: 'BreakerRecord' },
);
export type BreakerRecord = Static<typeof BreakerRecord>;

/** Login failure times (epoch ms) of a user on a device in `svc-lockout`. */
export const LockoutRecord = Type.Array(Type.Number(), { $id: 'LockoutRecord' });

/** A pinned SSH host key in `svc-hostkeys`, as stored and as the admin API shows it. */
export const PinnedHostKeyRecord = Type.Object(
  {
    context: Type.String(),
    host: Type.String(),
    port: Type.Integer(),
    key_type: Type.String(),
    public_key: Type.String(),
    fingerprint: Type.String(),
    source: Type.Enum(['tofu', 'admin']),
    pinned_at: Type.String(),
  },
  { $id: 'PinnedHostKeyRecord' },
);

/** An API key's entry in `svc-apikeys` (key: key id). */
export const ApiKeyRecord = Type.Object(
  {
    key_id: Type.String(),
    role: Type.Enum(['admin', 'operator', 'viewer']),
    contexts: Type.Array(Type.String()),
    created_at: Type.String(),
    expires_at: Type.String(),
    created_by: Type.String(),
    jti: Type.String(),
    parent: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    scope_mac: Type.Optional(Type.String()),
  },
  { $id: 'ApiKeyRecord' },
);

/** A job of a rollout wave held in `svc-batches` (`<batch>.held.<job>`) until its wave. */
export const HeldEnvelope = Type.Object(
  { envelope: JobEnvelope, traceparent: Type.Union([Type.String(), Type.Null()]) },
  { $id: 'HeldEnvelope' },
);
export type HeldEnvelope = Static<typeof HeldEnvelope>;

/** A job's results kept in the object store (`svc-results`): the results map. */
export const ResultsObject = Type.Record(Type.String(), Type.Unknown(), { $id: 'ResultsObject' });

/**
 * Value of `LockKeys.shard` in `svc-locks`: who consumes one shard of a context's jobs
 * (docs/shards.md). Written by compare-and-set only: by the context's leading dispatcher when it
 * assigns the shard (`owned`, a new `epoch`) or asks its owner to give it up (`releasing`, `to`
 * the next owner), and by the owner when it has (`released`).
 */
export const ShardOwner = Type.Object(
  {
    context: Type.String(),
    shard: Type.Integer({ minimum: 0 }),
    /** Grows by one with every new owner: the placement a taken-over job is fenced to. */
    epoch: Type.Integer({ minimum: 1 }),
    host: Type.String(),
    state: Type.Enum(['owned', 'releasing', 'released']),
    /** While `releasing`: the host the shard goes to next. */
    to: Type.Optional(Type.String()),
  },
  { $id: 'ShardOwner' },
);
export type ShardOwner = Static<typeof ShardOwner>;

/**
 * The owner stored under `key` (`LockKeys.shard`), or null (and dropped as malformed) when it is
 * not one or names another shard than its key: every reader acts on the key's shard only.
 */
export function shardOwnerOf(key: string, value: Uint8Array, drop: DropContext): ShardOwner | null {
  const owner = decodeOrDrop(ShardOwner, value, drop);
  if (owner === null) return null;
  if (owner.shard >= JOB_SHARDS || LockKeys.shard(owner.context, owner.shard) !== key) {
    drop.log.warn(
      { ...drop.where, consumer: drop.consumer },
      'dropping a shard owner of another key',
    );
    return null;
  }
  return owner;
}

/**
 * Value of `LockKeys.device` in `svc-locks`: the actor host holding sessions to a device known
 * by its pinned host key, so that the device has at most DEVICE_MAX_SESSIONS cluster-wide
 * whichever hosts own its addresses' shards (DESIGN invariant 3). Created by compare-and-set
 * before the host's first session to it logs in, removed when its last (warm ones included)
 * closes. A host waiting for it sets `wanted_by`; the holder then closes its idle sessions to
 * the device and hands the claim to that host. Holds no secret: a device key names the context
 * and the host key's fingerprint.
 */
export const DeviceClaimEntry = Type.Object(
  {
    /** The device key (`<context>|hostkey:<fingerprint>`) its key encodes. */
    device: Type.String(),
    /** The actor host that holds it. */
    host: Type.String(),
    /** The host waiting for it (the first to ask), given it next. */
    wanted_by: Type.Optional(Type.String()),
  },
  { $id: 'DeviceClaimEntry' },
);
export type DeviceClaimEntry = Static<typeof DeviceClaimEntry>;

/**
 * The claim stored under `key` (`LockKeys.device`), or null (and dropped as malformed) when it
 * is not one or names another device than its key.
 */
export function deviceClaimOf(
  key: string,
  value: Uint8Array,
  drop: DropContext,
): DeviceClaimEntry | null {
  const claim = decodeOrDrop(DeviceClaimEntry, value, drop);
  if (claim === null) return null;
  if (LockKeys.device(claim.device) !== key) {
    drop.log.warn(
      { ...drop.where, consumer: drop.consumer },
      'dropping a device claim of another key',
    );
    return null;
  }
  return claim;
}
