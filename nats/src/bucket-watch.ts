import type { JsMsg } from '@nats-io/jetstream';
import { Bucket, type KV } from '@nats-io/kv';
import type { Logger } from '@svc/telemetry';
import type { DropContext } from '@svc/proto';
import { followStream } from './stream-follower.js';

/** One entry of a watched bucket, as the KV client's watch gives it. */
export interface BucketWatchEntry {
  key: string;
  value: Uint8Array;
  operation: 'PUT' | 'DEL' | 'PURGE';
  revision: number;
  /** When the server stored it. */
  created: Date;
  /** Entries of the initial values still to come after this one (0: the copy is whole). */
  delta: number;
  /** A write made after the watch had given the initial values. */
  isUpdate: boolean;
}

/** Entries until `stop()`; the iteration then ends. */
export interface BucketWatch extends AsyncIterable<BucketWatchEntry> {
  /**
   * When (this process's clock) the copy was last known to hold every write: the server sent
   * its last entry with nothing pending behind it, or an idle heartbeat (every 2 s when nothing
   * comes). It stops moving while the watch is cut off (its consumer lost with a node, a new one
   * not made yet): what the copy says is as of then, not now. Its opening until the first.
   */
  currentAt(): number;
  /**
   * With `countPending`: entries the watch had to give when it opened (the keys' last values);
   * 0, it is whole at once. Null when not counted.
   */
  readonly pendingAtOpen: number | null;
  stop(): void;
}

/**
 * Follows the keys of a bucket matching `key`: their last values, then every write, in order.
 *
 * Not the KV client's `watch()`: its ordered consumer has one replica, on one node, and when that
 * node dies the client notices only after two missed 30 s heartbeats (@nats-io/kv 3.3.1, not
 * configurable). The dispatcher's view of the actor hosts went blind for that minute after a
 * node loss, and no job was placed. This watch is a `followStream` of the bucket's stream: a lost
 * consumer is found within seconds and a new one goes on from the last revision given.
 */
export async function watchBucket(
  kv: KV,
  options: {
    key?: string;
    log?: Pick<Logger, 'warn'>;
    /** Keys, revisions and operations only: every entry's `value` is empty. */
    keysOnly?: boolean;
    /** Count `pendingAtOpen` (one API call more at open). */
    countPending?: boolean;
  } = {},
): Promise<BucketWatch> {
  if (!(kv instanceof Bucket)) throw new TypeError('watchBucket needs a bucket opened by Kvm');
  const prefix = `${kv.prefix}.`;
  // The first follow is the caller's to fail (as the KV client's watch fails at creation).
  const follower = await followStream(kv.js, kv.stream, {
    filter: `${prefix}${options.key ?? '>'}`,
    from: 'last-per-subject',
    what: `watch ${kv.bucket} ${options.key ?? '>'}`,
    ...(options.countPending ? { countPending: true } : {}),
    ...(options.log ? { log: options.log } : {}),
    ...(options.keysOnly ? { headersOnly: true } : {}),
  });
  let caughtUp = false;

  const entryOf = (m: JsMsg): BucketWatchEntry => {
    const pending = m.info.pending;
    const isUpdate = caughtUp;
    if (pending === 0) caughtUp = true;
    const op = m.headers?.get('KV-Operation');
    return {
      key: kv.decodeKey(m.subject.slice(prefix.length)),
      value: m.data,
      operation: op === 'DEL' || op === 'PURGE' ? op : 'PUT',
      revision: m.seq,
      created: new Date(Math.floor(m.info.timestampNanos / 1e6)),
      delta: isUpdate ? 0 : pending,
      isUpdate,
    };
  };
  async function* entries(): AsyncGenerator<BucketWatchEntry> {
    for await (const m of follower) yield entryOf(m);
  }
  const iterable = entries();
  return {
    [Symbol.asyncIterator]: () => iterable,
    currentAt: () => follower.currentAt(),
    pendingAtOpen: options.countPending ? follower.pendingAtOpen : null,
    stop: () => follower.stop(),
  };
}

/**
 * A watch's entries, each put's value decoded by `decode` (null, dropped and logged by it, when
 * it is not one) and a delete's as null: what every reader of a key range does with its entries.
 */
export async function* decodedEntries<
  T,
  E extends Pick<BucketWatchEntry, 'key' | 'value' | 'operation'> = BucketWatchEntry,
>(
  watch: AsyncIterable<E>,
  decode: (key: string, value: Uint8Array, drop: DropContext) => T | null,
  drop: Omit<DropContext, 'where'>,
): AsyncGenerator<E & { decoded: T | null }> {
  for await (const e of watch) {
    const decoded =
      e.operation === 'PUT' ? decode(e.key, e.value, { ...drop, where: { key: e.key } }) : null;
    yield { ...e, decoded };
  }
}
