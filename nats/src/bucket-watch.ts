import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeliverPolicy,
  type Consumer,
  type ConsumerMessages,
  type JsMsg,
} from '@nats-io/jetstream';
import { Bucket, type KV } from '@nats-io/kv';
import { ClosedConnectionError, DrainingConnectionError } from '@nats-io/transport-node';
import type { Logger } from '@svc/telemetry';
import { closeWhenLost, workConsumeOptions } from './consumer-watchdog.js';

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
  stop(): void;
}

/**
 * Follows the keys of a bucket matching `key`: their last values, then every write, in order.
 *
 * Not the KV client's `watch()`: its ordered consumer has one replica, on one node, and when that
 * node dies the client notices only after two missed 30 s heartbeats (@nats-io/kv 3.3.1, not
 * configurable). The dispatcher's view of the actor hosts went blind for that minute after a
 * node loss, and no job was placed. This watch pulls with 2 s heartbeats (`workConsumeOptions`):
 * two missed, or quiet for longer than a pull lasts (this connection moved off the lost node), it
 * opens a new consumer from the last revision it gave, on a node that lives.
 */
export async function watchBucket(
  kv: KV,
  options: { key?: string; log?: Pick<Logger, 'warn'> } = {},
): Promise<BucketWatch> {
  if (!(kv instanceof Bucket)) throw new TypeError('watchBucket needs a bucket opened by Kvm');
  const log = options.log ?? { warn: () => undefined };
  const prefix = `${kv.prefix}.`;
  const subject = `${prefix}${options.key ?? '>'}`;
  const what = `watch ${kv.bucket} ${options.key ?? '>'}`;
  let stopped = false;
  let revision = 0;
  let caughtUp = false;
  let current: ConsumerMessages | null = null;
  let currentConsumer: Consumer | null = null;
  let alive = () => undefined as void;
  let currentAt = Date.now();

  const open = async (): Promise<ConsumerMessages> => {
    const consumer = await kv.js.consumers.get(
      kv.stream,
      revision === 0
        ? { filter_subjects: subject, deliver_policy: DeliverPolicy.LastPerSubject }
        : {
            filter_subjects: subject,
            deliver_policy: DeliverPolicy.StartSequence,
            opt_start_seq: revision + 1,
          },
    );
    const messages = await consumer.consume(WATCH_CONSUME);
    alive = closeWhenLost(messages, WATCH_CONSUME, log, what);
    void (async () => {
      for await (const s of messages.status()) if (s.type === 'heartbeat') currentAt = Date.now();
    })();
    // A stop while this one was opened: closed here, it ends where it is read.
    if (stopped) void messages.close();
    current = messages;
    currentConsumer = consumer;
    return messages;
  };
  // The first consume is the caller's to fail (as the KV client's watch fails at creation).
  const first = await open();

  const entryOf = (m: JsMsg): BucketWatchEntry => {
    alive();
    revision = m.seq;
    const pending = m.info.pending;
    const isUpdate = caughtUp;
    if (pending === 0) {
      caughtUp = true;
      currentAt = Date.now();
    }
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

  // The connection closed (or draining): the watch ends, as the KV client's does.
  let ended = false;
  const endedBy = (err: unknown) =>
    err instanceof ClosedConnectionError || err instanceof DrainingConnectionError;

  async function* entries(): AsyncGenerator<BucketWatchEntry> {
    let messages: ConsumerMessages | null = first;
    while (messages) {
      try {
        for await (const m of messages) yield entryOf(m);
      } catch (err) {
        ended ||= endedBy(err);
        if (!stopped && !ended) log.warn({ err, watch: what }, 'bucket watch failed');
      }
      messages = null;
      // Stalled (node lost) or failed: again from the last revision given, until it opens.
      while (!stopped && !ended && !messages) {
        messages = await open().catch(async (err: unknown) => {
          ended ||= endedBy(err);
          if (!ended) {
            log.warn({ err, watch: what }, 'bucket watch not open yet; trying again');
            await sleep(500);
          }
          return null;
        });
      }
    }
  }
  const iterable = entries();
  return {
    [Symbol.asyncIterator]: () => iterable,
    currentAt: () => currentAt,
    stop() {
      stopped = true;
      void current?.close();
      // Gone now rather than after its inactivity threshold (5 min): one per SSE stream adds up.
      void currentConsumer?.delete().catch(() => undefined);
    },
  };
}

/** Pulls that end after 10 s, with a heartbeat every 2 s (`workConsumeOptions`). */
const WATCH_CONSUME = workConsumeOptions(256);
