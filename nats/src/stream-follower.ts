import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeliverPolicy,
  type Consumer,
  type ConsumerMessages,
  type JetStreamClient,
  type JsMsg,
  type OrderedConsumerOptions,
} from '@nats-io/jetstream';
import { ClosedConnectionError, DrainingConnectionError } from '@nats-io/transport-node';
import type { Logger } from '@svc/telemetry';
import { closeWhenLost, workConsumeOptions } from './consumer-watchdog.js';

/** Where a follow starts: every message, the last of each subject, or after a sequence. */
export type FollowFrom = 'all' | 'last-per-subject' | { afterSeq: number };

/** A stream's messages in order until `stop()` or the connection's close; the iteration then ends. */
export interface StreamFollower extends AsyncIterable<JsMsg> {
  /**
   * Messages stored at the start position when the follow opened (with `countPending`; 0
   * otherwise): how many are history rather than live.
   */
  readonly pendingAtOpen: number;
  /**
   * When (this process's clock) the follower was last known to have every message: the server
   * sent one with nothing pending behind it, or an idle heartbeat (every 2 s when nothing comes).
   * It stops moving while the follow is cut off (its consumer lost with a node, a new one not
   * made yet). Its opening until the first.
   */
  currentAt(): number;
  stop(): void;
}

/**
 * Follows the messages of `stream` matching `filter` through an ordered consumer (one replica, on
 * one node, made by the server at once on a node that lives) that pulls with 2 s heartbeats
 * (`workConsumeOptions`). When its node dies, two missed heartbeats, or quiet for longer than a
 * pull lasts (this connection moved off the lost node: the client then asks the lost consumer
 * for its state for ever), close it, and a new consumer goes on after the last message given: no
 * gap, nothing twice. The KV client's own watch notices such a loss only after two missed 30 s
 * heartbeats (@nats-io/kv 3.3.1, not configurable). The follow ends on `stop()` and when the
 * connection closes or drains; anything else is tried again every half second.
 */
export async function followStream(
  js: JetStreamClient,
  stream: string,
  options: {
    filter: string;
    from: FollowFrom;
    /** Names the follow in log lines (`consumer: what`). */
    what: string;
    log?: Pick<Logger, 'warn'>;
    /** Read `pendingAtOpen` from the first consumer (one API call more). */
    countPending?: boolean;
    /** Messages without their data (headers and subject only). */
    headersOnly?: boolean;
  },
): Promise<StreamFollower> {
  const { filter, what } = options;
  const log = options.log ?? { warn: () => undefined };
  let stopped = false;
  let lastSeq: number | null = null;
  let current: ConsumerMessages | null = null;
  let currentConsumer: Consumer | null = null;
  let alive = () => undefined as void;
  let currentAt = Date.now();

  const configOf = (): Partial<OrderedConsumerOptions> => {
    const from: FollowFrom = lastSeq === null ? options.from : { afterSeq: lastSeq };
    const base = {
      filter_subjects: filter,
      ...(options.headersOnly ? { headers_only: true } : {}),
    };
    if (from === 'all') return { ...base, deliver_policy: DeliverPolicy.All };
    if (from === 'last-per-subject')
      return { ...base, deliver_policy: DeliverPolicy.LastPerSubject };
    return {
      ...base,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: from.afterSeq + 1,
    };
  };
  const consume = async (consumer: Consumer): Promise<ConsumerMessages> => {
    const messages = await consumer.consume(FOLLOW_CONSUME);
    alive = closeWhenLost(messages, FOLLOW_CONSUME, log, what);
    void (async () => {
      for await (const s of messages.status()) if (s.type === 'heartbeat') currentAt = Date.now();
    })();
    // A stop while this one was opened: closed here, it ends where it is read.
    if (stopped) void messages.close();
    current = messages;
    currentConsumer = consumer;
    return messages;
  };
  const open = async () => consume(await js.consumers.get(stream, configOf()));

  // The first open is the caller's to fail.
  const firstConsumer = await js.consumers.get(stream, configOf());
  const pendingAtOpen = options.countPending ? (await firstConsumer.info()).num_pending : 0;
  const first = await consume(firstConsumer);

  let ended = false;
  const endedBy = (err: unknown) =>
    err instanceof ClosedConnectionError || err instanceof DrainingConnectionError;
  const stop = () => {
    stopped = true;
    void current?.close();
    // Gone now rather than after its inactivity threshold (5 min): one per SSE stream adds up.
    void currentConsumer?.delete().catch(() => undefined);
  };

  async function* follow(): AsyncGenerator<JsMsg> {
    let messages: ConsumerMessages | null = first;
    try {
      while (messages) {
        try {
          for await (const m of messages) {
            alive();
            lastSeq = m.seq;
            if (m.info.pending === 0) currentAt = Date.now();
            yield m;
          }
        } catch (err) {
          ended ||= endedBy(err);
          if (!stopped && !ended) log.warn({ err, consumer: what }, 'stream follow failed');
        }
        messages = null;
        // Stalled (node lost) or failed: again after the last message given, until it opens.
        while (!stopped && !ended && !messages) {
          messages = await open().catch(async (err: unknown) => {
            ended ||= endedBy(err);
            if (!ended) {
              log.warn({ err, consumer: what }, 'stream follow not open yet; trying again');
              await sleep(FOLLOW_RETRY_MS);
            }
            return null;
          });
        }
      }
    } finally {
      // Ended by its reader (a `break`) as much as by `stop()` or the connection.
      stop();
    }
  }
  const iterable = follow();
  return {
    [Symbol.asyncIterator]: () => iterable,
    pendingAtOpen,
    currentAt: () => currentAt,
    stop,
  };
}

/** Pulls that end after 10 s, with a heartbeat every 2 s (`workConsumeOptions`). */
const FOLLOW_CONSUME = workConsumeOptions(256);
/** How soon a lost follow is tried again while no node serves it yet. */
const FOLLOW_RETRY_MS = 500;
