import type { Consumer, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import type { Logger } from '@svc/telemetry';

/** The most messages fetched at once. */
const FETCH_BATCH = 1000;
/** The first read's wait for what there is (the least a fetch may wait). */
const FIRST_FETCH_MS = 1000;
/** A fetch of what is known pending ends once delivered; this only bounds a lost answer. */
const FETCH_EXPIRES_MS = 10_000;
/** How late past its expiry a fetch may end before it is taken for lost (a busy server's 408). */
const FETCH_END_MARGIN_MS = 5_000;

export interface BurstFeedOptions {
  /** The stream read (a KV bucket's is `KV_<bucket>`). */
  stream: string;
  /** The feed starts with the messages stored from this time on. */
  from: Date;
  /** How often it reads by itself; `catchUp` reads besides. */
  everyMs: number;
  /** Each message read, in stream order (headers only: the feed never fetches bodies). */
  onMessage: (m: JsMsg) => void;
  log: Logger;
  /** What the feed is, in its log lines (`enqueue check: record`). */
  label: string;
}

/**
 * Reads a stream's headers in bursts, not as each message is stored: every `everyMs` and at
 * `catchUp`, exactly what is pending (the consumer's `num_pending`, then a fetch of that many,
 * which ends once they are delivered). A reader of a KV bucket's writes this way wakes once per
 * burst instead of once per write, and a key written several times between two reads shows only
 * its last write (the bucket keeps one). A feed whose consumer is lost (the node holding it) is
 * made again after the last message read.
 */
export class BurstFeed {
  #stopped = false;
  /** The ordered consumer the feed is read through; null until made, or after it failed. */
  #feed: Consumer | null = null;
  /** Whether `#feed` has fetched yet (its server-side consumer exists only from then). */
  #fetched = false;
  /** Stream sequence of the last message read: a feed made again starts after it. */
  #cursor: number | null = null;
  /** The read under way: a catch-up waits for it instead of starting another. */
  #reading: Promise<void> | null = null;
  readonly #timer: NodeJS.Timeout;

  constructor(
    private readonly js: JetStreamClient,
    private readonly options: BurstFeedOptions,
  ) {
    // Not awaited: a first read waits up to FIRST_FETCH_MS (a catch-up waits for it instead).
    void this.#read();
    this.#timer = setInterval(() => void this.#read(), options.everyMs);
    this.#timer.unref();
  }

  /** Resolves once every message stored before the call has been read (or the read failed). */
  async catchUp(): Promise<void> {
    // A read already under way began earlier and may stop short of the latest: one more follows.
    await this.#reading;
    await this.#read();
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
  }

  /** Reads what the feed holds now (at most one read at a time; a failed one is logged). */
  #read(): Promise<void> {
    this.#reading ??= this.#readPending()
      .catch((err: unknown) => {
        if (!this.#stopped) this.options.log.warn({ err }, `${this.options.label} feed not read`);
      })
      .finally(() => {
        this.#reading = null;
      });
    return this.#reading;
  }

  /**
   * The feed's consumer: at first from `from`; made again after a failure, from the message
   * after the last one read.
   */
  async #openFeed(): Promise<Consumer> {
    if (this.#feed) return this.#feed;
    const start =
      this.#cursor !== null
        ? { opt_start_seq: this.#cursor + 1 }
        : { opt_start_time: this.options.from.toISOString() };
    this.#feed = await this.js.consumers.get(this.options.stream, {
      headers_only: true,
      ...start,
    });
    this.#fetched = false;
    return this.#feed;
  }

  /**
   * Fetches exactly what is pending, in batches: a fetch of no more than the stream holds past
   * the feed's position ends once they are delivered, without waiting for new writes. A feed
   * that never fetched has no server-side consumer to ask yet: its first fetch waits at most
   * FIRST_FETCH_MS for what there is. A failure drops the feed; the next read makes it again.
   */
  async #readPending(): Promise<void> {
    if (this.#stopped) return;
    const feed = await this.#openFeed();
    try {
      let pending: number | null = null;
      try {
        pending = (await feed.info()).num_pending;
      } catch (err) {
        // Fetched before: its consumer is gone (the node holding it was lost).
        if (this.#fetched) throw err;
      }
      // What was pending when the read began, and no more: writes stored meanwhile wait for the
      // next read (chasing them would fetch a few at a time, a request each).
      while (!this.#stopped && pending !== 0) {
        const max = pending === null ? FETCH_BATCH : Math.min(pending, FETCH_BATCH);
        const expires = pending === null ? FIRST_FETCH_MS : FETCH_EXPIRES_MS;
        const batch = await feed.fetch({ max_messages: max, expires });
        this.#fetched = true;
        // The server ends a fetch by its expiry. When the node serving the consumer dies, that
        // end never comes, and the client asks the lost consumer for its state for ever instead
        // of ending the fetch (@nats-io/jetstream 3.3.1): ended here, and the feed made again.
        let lost = false;
        const deadline = setTimeout(() => {
          lost = true;
          void batch.close();
        }, expires + FETCH_END_MARGIN_MS);
        let delivered = 0;
        try {
          for await (const m of batch) {
            this.#cursor = m.seq;
            this.options.onMessage(m);
            delivered++;
          }
        } finally {
          clearTimeout(deadline);
        }
        if (lost) {
          throw new Error(
            `${this.options.stream}: a fetch not ended by the server after its ${expires} ms; its consumer is lost`,
          );
        }
        // Fewer than asked (the first read, or messages removed meanwhile): nothing more now.
        pending = pending === null || delivered < max ? 0 : pending - delivered;
      }
    } catch (err) {
      this.#feed = null;
      throw err;
    }
  }
}
