import type { JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  Buckets,
  Consumers,
  Headers,
  LockKeys,
  Streams,
  Subjects,
  encodeJson,
  shardOwnerOf,
  type ShardOwner,
} from '@svc/proto';
import { decodedEntries, isConsumerNotFound, watchBucket, type BucketWatch } from '@svc/nats';
import type { Logger } from '@svc/telemetry';
import { IntakeChecks, ShardIntake, shardSource } from './shard-intake.js';

/** How a job came from a shard this host owns (docs/shards.md). */
export interface ShardDelivery {
  context: string;
  shard: number;
  epoch: number;
  /** An earlier owner may hold it: fenced to `epoch` before it starts. */
  fence: boolean;
}

export interface ShardOwnershipDeps {
  nc: NatsConnection;
  jsm: JetStreamManager;
  locks: KV;
  hostId: string;
  contexts: readonly string[];
  log: Logger;
  draining: () => boolean;
  deliver: (msg: JsMsg, shard: ShardDelivery) => void;
  /**
   * Gives up the shard's jobs on this host: those waiting leave their mailboxes (not
   * acknowledged: the next owner gets them first), and it resolves once none of them runs.
   */
  release: (context: string, shard: number) => Promise<void>;
}

interface Owned {
  context: string;
  shard: number;
  epoch: number;
  intake: ShardIntake;
}

/**
 * The shards of job subjects this host owns: one intake per shard while the context's leading
 * dispatcher names this host its owner (`LockKeys.shard`), given up when asked (`releasing`:
 * its jobs here end first, then `released` by compare-and-set) or when another host took it.
 */
export class ShardOwnership {
  /** By the shard's key in `svc-locks` (`LockKeys.shard`). */
  readonly #owned = new Map<string, Owned>();
  readonly #checks: IntakeChecks;
  #watch: BucketWatch | null = null;
  /** Set by `stop`: its intakes end then, and stay known for `releaseAll`. */
  #stopping = false;
  /**
   * Each shard's entries are handled one at a time, in the order the watch gives them; shards
   * apart: a release waiting for a shard's running jobs holds up no other shard's takeover.
   */
  readonly #turns = new Map<string, Promise<void>>();

  private constructor(private readonly deps: ShardOwnershipDeps) {
    this.#checks = new IntakeChecks(deps.jsm, deps.log);
  }

  static async start(deps: ShardOwnershipDeps): Promise<ShardOwnership> {
    const ownership = new ShardOwnership(deps);
    const watch = await watchBucket(deps.locks, { key: LockKeys.shardAll, log: deps.log });
    ownership.#watch = watch;
    void (async () => {
      // A delete, or an entry that is not an owner of its key: this host owns nothing there.
      const drop = { consumer: 'actor_shards', log: deps.log };
      for await (const e of decodedEntries(watch, shardOwnerOf, drop)) {
        const owner = e.decoded;
        const turn = (ownership.#turns.get(e.key) ?? Promise.resolve())
          .then(() => ownership.#onEntry(e.key, owner))
          .catch((err: unknown) => deps.log.warn({ err, key: e.key }, 'shard change not handled'));
        ownership.#turns.set(e.key, turn);
        void turn.then(() => {
          if (ownership.#turns.get(e.key) === turn) ownership.#turns.delete(e.key);
        });
      }
    })();
    return ownership;
  }

  /** Whether this host owns the shard at `epoch` now (its jobs that have not started check). */
  owns(context: string, shard: number, epoch: number): boolean {
    return this.#owned.get(LockKeys.shard(context, shard))?.epoch === epoch;
  }

  /**
   * Stops every intake (the host stopping); the shards are released by `releaseAll`. A shard's
   * release under way is not waited for: it waits for running jobs, which the stop ends.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#watch?.stop();
    this.#checks.stop();
    await Promise.all([...this.#owned.values()].map((o) => o.intake.close()));
  }

  /**
   * Marks every shard this host owns `released` (a graceful stop, once its jobs have ended or
   * were failed): the dispatcher gives them to another host at once.
   */
  async releaseAll(): Promise<void> {
    for (const [key, { context, shard }] of [...this.#owned]) {
      await this.#markReleased(key).catch((err: unknown) =>
        this.deps.log.warn({ err, context, shard }, 'shard not released'),
      );
    }
    this.#owned.clear();
  }

  async #onEntry(key: string, owner: ShardOwner | null): Promise<void> {
    const { hostId, contexts, log } = this.deps;
    const mine = owner?.host === hostId && contexts.includes(owner.context);
    const current = this.#owned.get(key);
    if (mine && owner.state === 'owned') {
      if (current?.epoch === owner.epoch || this.deps.draining()) return;
      if (current) await this.#giveUp(key);
      this.#take(key, owner);
      return;
    }
    if (mine && owner.state === 'releasing') {
      if (current) await this.#giveUp(key);
      await this.#markReleased(key);
      log.info({ context: owner.context, shard: owner.shard, to: owner.to }, 'shard released');
      return;
    }
    // Released, another host's now (this one was taken for gone), or deleted: its jobs here stop.
    if (current) {
      await this.#giveUp(key);
      log.warn(
        { context: current.context, shard: current.shard, owner: owner?.host, epoch: owner?.epoch },
        'shard no longer this host’s',
      );
    }
  }

  /**
   * The shard's owner as the bucket's leader has it, with its revision, or null: the watched
   * copy lags after a freeze, and so may a replica answering a direct get (fault run 498 read no
   * entry 1 ms after it was written, and the shard was never consumed).
   */
  async #readOwner(key: string): Promise<{ owner: ShardOwner; revision: number } | null> {
    // Null when the bucket holds no entry for the key.
    const stored = await this.deps.jsm.streams.getMessage(Streams.kv(Buckets.locks), {
      last_by_subj: Subjects.kvEntry(Buckets.locks, key),
    });
    if (!stored || stored.header?.get(Headers.kvOperation)) return null;
    const owner = shardOwnerOf(key, stored.data, {
      consumer: 'actor_shards',
      log: this.deps.log,
      where: { key },
    });
    return owner && { owner, revision: stored.seq };
  }

  #take(key: string, owner: ShardOwner): void {
    const { nc, jsm, hostId, log } = this.deps;
    const { context, shard, epoch } = owner;
    let fenceTo = 0;
    let taken = false;
    // Before each consume: the shard still this host's at this epoch. Until it has once
    // succeeded, the earlier owner's consumer is deleted and what it may have been given is
    // everything stored by then (`fenceTo`).
    const prepare = async (): Promise<boolean> => {
      const now = (await this.#readOwner(key))?.owner;
      if (now?.host !== hostId || now.epoch !== epoch || now.state !== 'owned') {
        log.info(
          { context, shard, epoch, now },
          'shard not this host’s at its epoch; not consumed',
        );
        return false;
      }
      if (!taken) {
        await jsm.consumers
          .delete(Streams.jobs, Consumers.shard(context, shard))
          .catch((err: unknown) => {
            if (!isConsumerNotFound(err)) throw err;
          });
        fenceTo = (await jsm.streams.info(Streams.jobs)).state.last_seq;
        taken = true;
        log.info({ context, shard, epoch, fence_to: fenceTo }, 'shard taken');
      }
      return true;
    };
    const intake = new ShardIntake(
      nc,
      jsm,
      log,
      this.deps.draining,
      (msg) => this.deps.deliver(msg, { context, shard, epoch, fence: msg.seq <= fenceTo }),
      shardSource(context, shard, prepare, this.#checks),
    );
    this.#owned.set(key, { context, shard, epoch, intake });
    // An intake that ends by itself (the shard not this host's after all) is forgotten: a later
    // assignment takes the shard afresh. One that ends because the host drains is kept: its
    // intakes end then, before `stop`, and `releaseAll` releases what is kept.
    void intake.done.then(() => {
      if (this.#stopping || this.deps.draining()) return;
      if (this.#owned.get(key)?.intake === intake) this.#owned.delete(key);
    });
  }

  /** Stops the shard's intake and waits until none of its jobs runs here. */
  async #giveUp(key: string): Promise<void> {
    const owned = this.#owned.get(key);
    if (!owned) return;
    this.#owned.delete(key);
    await owned.intake.close();
    await this.deps.release(owned.context, owned.shard);
  }

  async #markReleased(key: string): Promise<void> {
    const { locks, hostId } = this.deps;
    for (let attempt = 1; ; attempt++) {
      const read = await this.#readOwner(key);
      if (!read || read.owner.host !== hostId || read.owner.state === 'released') return;
      const released: ShardOwner = { ...read.owner, state: 'released' };
      try {
        await locks.update(key, encodeJson(released), read.revision);
        return;
      } catch (err) {
        // Written meanwhile (the dispatcher): read again, a few times.
        if (attempt >= 5) throw err;
      }
    }
  }
}
