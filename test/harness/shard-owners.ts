// What the tests of a shard's release and takeover (docs/shards.md) read and choose: a device's
// shard, its owner entry in `svc-locks`, and host names that keep or give up a shard when
// another host joins (the dispatcher's bounded-load rendezvous keeps an owner's best-scored half).
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  Buckets,
  Consumers,
  JOB_SHARDS,
  LockKeys,
  ShardOwner,
  Streams,
  decodeMessage,
  jobShardOf,
} from '@svc/proto';
import { deviceKeyOf } from '@svc/device-access';
import { rendezvousScore } from '@svc/dispatcher';
import { waitUntil, type WaitOptions } from './wait.js';

/** The shard of a device's jobs in the default context (by the address the jobs name). */
export function shardOfDevice(device: { host: string; port: number }, context = 'default'): number {
  return jobShardOf(deviceKeyOf(context, device.host, device.port));
}

/**
 * Whether `host`, owning every shard of a context, keeps `shard` when one more host joins: an
 * owner keeps the half of its shards it scores highest (`planShards`).
 */
export function keepsWhenJoined(host: string, shard: number): boolean {
  const score = (n: number) => rendezvousScore(`shard:${n}`, host);
  const ranked = [...Array(JOB_SHARDS).keys()].sort((a, b) =>
    score(b) > score(a) ? 1 : score(b) < score(a) ? -1 : a - b,
  );
  return ranked.indexOf(shard) < Math.ceil(JOB_SHARDS / 2);
}

/** The first of `prefix0`, `prefix1`, … for which `wanted` holds. */
export function hostNamed(prefix: string, wanted: (host: string) => boolean): string {
  for (let i = 0; ; i++) if (wanted(`${prefix}${i}`)) return `${prefix}${i}`;
}

/** Reads the owner entries of a context's shards (`svc-locks`). */
export class ShardOwners {
  private constructor(
    private readonly nc: NatsConnection,
    private readonly kv: KV,
    readonly context: string,
  ) {}

  static async open(nc: NatsConnection, context = 'default'): Promise<ShardOwners> {
    return new ShardOwners(nc, await new Kvm(jetstream(nc)).open(Buckets.locks), context);
  }

  /** The shard's owner entry, or null (none, or deleted). */
  async of(shard: number): Promise<ShardOwner | null> {
    const entry = await this.kv.get(LockKeys.shard(this.context, shard));
    return entry?.operation === 'PUT' ? decodeMessage(ShardOwner, entry.value) : null;
  }

  /** Waits until the shard's entry satisfies `wanted`; returns it. */
  async waitFor(
    shard: number,
    wanted: (owner: ShardOwner) => boolean,
    what: string,
    options?: WaitOptions,
  ): Promise<ShardOwner> {
    return waitUntil(
      async () => {
        const owner = await this.of(shard);
        return owner !== null && wanted(owner) && owner;
      },
      what,
      options,
    );
  }

  /** Whether the shard's consumer exists (its owner made it: it consumes the shard). */
  async consumed(shard: number): Promise<boolean> {
    const jsm = await jetstreamManager(this.nc);
    return jsm.consumers.info(Streams.jobs, Consumers.shard(this.context, shard)).then(
      () => true,
      () => false,
    );
  }

  /** Jobs the shard's consumer delivered and has not seen acknowledged (0 without a consumer). */
  async ackPending(shard: number): Promise<number> {
    const jsm = await jetstreamManager(this.nc);
    const info = await jsm.consumers
      .info(Streams.jobs, Consumers.shard(this.context, shard))
      .catch(() => null);
    return info?.num_ack_pending ?? 0;
  }
}
