import {
  JetStreamApiCodes,
  JetStreamApiError,
  type ConsumeOptions,
  type Consumer,
  type ConsumerInfo,
  type ConsumerMessages,
  type JetStreamManager,
} from '@nats-io/jetstream';
import type { Logger } from '@svc/telemetry';
import { nextMessageOn } from './stream-reads.js';

/** Whether a JetStream API error says the consumer does not exist. */
export function isConsumerNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;
}

/**
 * Pull options of the work consumers (dispatch, placement). A pull held by a consumer leader
 * that died is never answered; the server's idle heartbeats stop with it, so two missed
 * heartbeats (4 s) reveal the loss. The library's default (half the expiry) took 10 s and more
 * after every cluster node loss, during which no job moved.
 */
export function workConsumeOptions(maxMessages: number): ConsumeOptions {
  return { max_messages: maxMessages, expires: 10_000, idle_heartbeat: 2_000 };
}

/**
 * Ends a `consume()` whose consumer went quiet or away (heartbeats missed, consumer gone): the
 * caller's loop then consumes afresh (re-creating the consumer when `onStall` says so). After a
 * cluster node dies, a consumer can be left without a leader on nats-server 2.9 and its pulls
 * go unanswered for ever; a new consumer of the same name gets a leader at once.
 */
export function closeWhenStalled(
  messages: ConsumerMessages,
  log: Pick<Logger, 'warn'>,
  what: string,
  onStall: () => void = () => undefined,
): void {
  void (async () => {
    for await (const s of messages.status()) {
      const stalled =
        (s.type === 'heartbeats_missed' && s.count >= 2) ||
        s.type === 'consumer_not_found' ||
        s.type === 'consumer_deleted' ||
        s.type === 'no_responders';
      if (stalled) {
        log.warn({ status: s.type, consumer: what }, 'consumer stalled; consuming again');
        onStall();
        await messages.close().catch(() => undefined);
        return;
      }
    }
  })();
}

/**
 * Tells a work consumer's owner when to replace it: when two reads in a row (`check`, some
 * seconds apart) find the same message of its subject stored at or below its ack floor
 * (`ranPastMessage`).
 */
export class RanPastWatch {
  #last: number | null = null;

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly stream: string,
    private readonly subject: string,
  ) {}

  /**
   * True when `consumer` is to be replaced; a read that fails says no. `state`: its info, when
   * the caller has just read it for another check (not read again).
   */
  async check(consumer: Consumer, state?: ConsumerInfo, stored?: number): Promise<boolean> {
    const past = await ranPastMessage(
      this.jsm,
      this.stream,
      this.subject,
      consumer,
      state,
      stored,
    ).catch(() => null);
    const replace = past !== null && past === this.#last;
    this.#last = replace ? null : past;
    return replace;
  }

  /** Forgets the last read (the consumer was replaced, or is not read for now). */
  reset(): void {
    this.#last = null;
  }
}

/**
 * The stream sequence of the first message stored on `subject` in a work-queue `stream` when the
 * consumer has passed it, else null. A work-queue stream removes a message once its consumer
 * acknowledges (or terminates) it, so one still stored that the consumer counts as settled (at
 * or below its ack floor; at or below its last delivery when nothing is unacknowledged, since a
 * consumer that has acknowledged nothing yet reports a floor of 0), or while it reports nothing
 * left to deliver and nothing unacknowledged, is one its state ran past: it will never deliver
 * it. Seen on nats-server 2.9.10 after a frozen node resumed (`frozen-leader`
 * run 305: 68 jobs on an actor host's subject, its consumer at "0 pending" for minutes while it
 * beat and pulled). The floor passes such a message whether or not the consumer keeps delivering
 * newer ones, so it is found under steady load too, not only once the load pauses. A read can
 * also catch a message acknowledged between the two reads (the stream is read first; the floor
 * and the last delivery only rise), so callers act only when two reads some seconds apart find
 * the same one.
 */
export async function ranPastMessage(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  consumer: Consumer,
  known?: ConsumerInfo,
  stored?: number,
): Promise<number | null> {
  // How many messages the subject holds (`stored`, read with `known`): no more than the consumer
  // has still to deliver or to be acknowledged leaves none it ran past, and nothing to read.
  if (known && stored !== undefined && stored <= known.num_pending + known.num_ack_pending) {
    return null;
  }
  const first = await nextMessageOn(jsm, stream, subject);
  if (!first) return null;
  // Read after the stream, or just before it by the caller (`known`): either way a message
  // settled between the two reads can show once, never on two checks in a row.
  const state = known ?? (await consumer.info());
  if (state.num_ack_pending === 0) {
    // Everything up to the last delivery is settled; with nothing left to deliver either, a
    // stored message is passed wherever it lies (run 305 had them on both sides of that point).
    const passed = state.num_pending === 0 || first.seq <= state.delivered.stream_seq;
    return passed ? first.seq : null;
  }
  return first.seq <= state.ack_floor.stream_seq ? first.seq : null;
}

/**
 * Ends a `consume()` that neither pulls nor is delivered anything for longer than a pull lasts
 * plus two heartbeats (a live one pulls again at least that often). When its connection lost the
 * consumer's node and reconnected elsewhere, the client asks the consumer for its state until it
 * answers (never, for an ordered consumer's one replica on a dead node) and counts no missed
 * heartbeats meanwhile, so `closeWhenStalled` never hears of it. Returns the call that tells it
 * a message came.
 */
function closeWhenQuiet(
  messages: ConsumerMessages,
  options: ConsumeOptions,
  log: Pick<Logger, 'warn'>,
  what: string,
): () => void {
  const quietMs = (options.expires ?? 30_000) + 2 * (options.idle_heartbeat ?? 0);
  const quiet = setTimeout(() => {
    log.warn({ consumer: what }, 'consumer quiet; consuming again');
    void messages.close();
  }, quietMs);
  quiet.unref();
  void (async () => {
    for await (const s of messages.status()) if (s.type === 'next') quiet.refresh();
  })();
  void messages.closed().then(() => clearTimeout(quiet));
  return () => void quiet.refresh();
}

/**
 * Both watchdogs on a `consume()` whose consumer may be lost with its node (an ordered
 * consumer: one replica): ended when heartbeats are missed or it goes quiet, for the caller to
 * consume again. Returns the call that tells it a message came.
 */
export function closeWhenLost(
  messages: ConsumerMessages,
  options: ConsumeOptions,
  log: Pick<Logger, 'warn'>,
  what: string,
): () => void {
  closeWhenStalled(messages, log, what);
  return closeWhenQuiet(messages, options, log, what);
}
