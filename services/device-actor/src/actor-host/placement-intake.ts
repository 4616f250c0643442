import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  type ConsumerMessages,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { Consumers, Streams, Subjects } from '@svc/proto';
import { closeWhenStalled, isConsumerNotFound, workConsumeOptions } from '@svc/nats';
import { type Logger } from '@svc/telemetry';

/** The durable consumer of the jobs placed on one host (its `svc.actor.<hostId>` subject). */
export function placementConsumerConfig(hostId: string) {
  return {
    durable_name: Consumers.actor(hostId),
    filter_subject: Subjects.actor(hostId),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    // Jobs wait in device mailboxes until their turn; they are acked when they end.
    ack_wait: nanos(6 * 3600_000),
    max_ack_pending: 20_000,
  };
}

/**
 * The host's intake: consumes the jobs placed on it and hands each message to `deliver`, until
 * the host drains. A consumer that fails or stalls is consumed again, never given up.
 */
export class PlacementIntake {
  #messages: ConsumerMessages | null = null;
  #stalled = false;
  readonly #done: Promise<void>;

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly hostId: string,
    private readonly log: Logger,
    private readonly draining: () => boolean,
    private readonly deliver: (msg: JsMsg) => void,
  ) {
    this.#done = this.#run();
  }

  /** Stops consuming (call once draining) and waits for the loop to end. */
  async close(): Promise<void> {
    await this.#messages?.close().catch(() => undefined);
    await this.#done.catch(() => undefined);
  }

  async #run(): Promise<void> {
    const { jsm, hostId, log } = this;
    const js = jetstream(this.nc);
    const consumerConfig = placementConsumerConfig(hostId);
    while (!this.draining()) {
      try {
        if (this.#stalled) {
          // A consumer left without a leader (cluster node lost) is replaced; the jobs stay in
          // the stream, and one delivered twice cannot start twice. Replaced only once deleted:
          // the one kept would never send again what it sent into a connection that lost it
          // (its ack_wait is hours), and those jobs would wait in the stream for that long.
          await jsm.consumers
            .delete(Streams.actor, Consumers.actor(hostId))
            .catch((err: unknown) => {
              if (!isConsumerNotFound(err)) throw err;
            });
          this.#stalled = false;
        }
        // Re-declared each time: a reaper that took this host for dead deleted it.
        await jsm.consumers.add(Streams.actor, consumerConfig);
        const consumer = await js.consumers.get(Streams.actor, Consumers.actor(hostId));
        this.#messages = await consumer.consume(workConsumeOptions(512));
        // A close that came while this consume was being opened closed only the one before it.
        // Closed here, it ends where the loop below reads it (close() resolves only there).
        if (this.draining()) void this.#messages.close();
        closeWhenStalled(this.#messages, log, 'placement', () => {
          this.#stalled = true;
        });
        for await (const msg of this.#messages) this.deliver(msg);
      } catch (err) {
        // A cluster node going away can end the consumer: consume again, never stop serving.
        // What the failed consume had taken and not handed over is lost with it: replaced too.
        this.#stalled = true;
        if (!this.draining()) log.warn({ err }, 'placement consumer failed; consuming again');
      }
      if (!this.draining()) await sleep(500);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
