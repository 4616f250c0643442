import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  type Consumer,
  type ConsumerInfo,
  type ConsumerMessages,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { Consumers, Streams, Subjects } from '@svc/proto';
import { closeWhenStalled, isConsumerNotFound, RanPastWatch, workConsumeOptions } from '@svc/nats';
import { type Logger } from '@svc/telemetry';

/** The durable consumer of a shard a host owns. */
function intakeConsumerConfig(durable: string, subject: string) {
  return {
    durable_name: durable,
    filter_subject: subject,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    // Jobs wait in device mailboxes until their turn; they are acked when they end.
    ack_wait: nanos(6 * 3600_000),
    max_ack_pending: 20_000,
  };
}

/** Where an intake takes its jobs from. */
export interface IntakeSource {
  stream: string;
  subject: string;
  consumer: ReturnType<typeof intakeConsumerConfig>;
  /** Names the intake in its log lines. */
  label: string;
  /**
   * Called before each consume is opened, after a stalled consumer was deleted: false ends the
   * intake (a shard that is no longer this host's).
   */
  prepare: () => Promise<boolean>;
  /** Checks this intake with the host's other shard intakes (one read for all). */
  checks: IntakeChecks;
}

/** One shard of a context's jobs in `SVC_JOBS` (docs/shards.md), consumed by its owner. */
export function shardSource(
  context: string,
  shard: number,
  prepare: () => Promise<boolean>,
  checks: IntakeChecks,
): IntakeSource {
  const subject = Subjects.jobShard(context, shard);
  return {
    stream: Streams.jobs,
    subject,
    consumer: intakeConsumerConfig(Consumers.shard(context, shard), subject),
    label: `shard ${context}/${shard}`,
    prepare,
    checks,
  };
}

/**
 * The lost-acknowledgement and ran-past checks of a host's shard intakes, every ACK_CHECK_MS,
 * with two reads for all of them: the consumers of `SVC_JOBS` listed, and how many messages each
 * shard subject holds (one stream info). Per intake they were two to three JetStream requests
 * every 5 s, whatever the load: with 32 shards the larger part of a job's requests at 50 jobs/s.
 */
export class IntakeChecks {
  readonly #intakes = new Set<ShardIntake>();
  readonly #timer: NodeJS.Timeout;

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly log: Logger,
  ) {
    this.#timer = setInterval(() => void this.#checkAll(), ACK_CHECK_MS);
    this.#timer.unref();
  }

  add(intake: ShardIntake): void {
    this.#intakes.add(intake);
  }

  delete(intake: ShardIntake): void {
    this.#intakes.delete(intake);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  async #checkAll(): Promise<void> {
    if (this.#intakes.size === 0) return;
    const askedAt = Date.now();
    try {
      // The stream first: a message counted there and settled before the consumers are read
      // shows as accounted for, never as passed (the ran-past check wants two reads anyway).
      const stream = await this.jsm.streams.info(Streams.jobs, {
        subjects_filter: Subjects.jobShardsAll,
      });
      const stored = stream.state.subjects ?? {};
      const infos = new Map<string, ConsumerInfo>();
      for await (const info of this.jsm.consumers.list(Streams.jobs)) infos.set(info.name, info);
      await Promise.all(
        [...this.#intakes].map((intake) => {
          const { durable, subject } = intake.source;
          return intake.check({
            info: infos.get(durable) ?? null,
            stored: stored[subject] ?? 0,
            askedAt,
          });
        }),
      );
    } catch (err) {
      this.log.debug({ err }, 'shard intake checks not read; next time');
    }
  }
}

/**
 * The intake of one shard the host owns: consumes its jobs and hands each message to `deliver`,
 * until the host drains or gives the shard up. A consumer that fails or stalls is consumed again, never given up.
 *
 * It also sees that its acknowledgements arrive. One is a core publish, never answered: sent
 * while the NATS node leading the consumer dies, it is lost, and the job's message (its job
 * ended) stays pending for the ack wait (hours), counted in the queue depth all that time.
 * Every `ACK_CHECK_MS` the consumer's ack floor (every message up to it acknowledged) is read:
 * an acknowledgement this host sent seconds ago for a message above the floor, below every
 * message it still holds, did not arrive (the consumer delivers in order, so nothing it has not
 * handed over yet lies below), and is sent again; one that arrives twice is ignored. A consumer
 * whose ack floor two checks in a row find past the same job still on its subject has run
 * past it (`ranPastMessage`), busy or not: it is replaced, and the new one delivers the jobs from
 * the first, in order (those held here again too, tracked as one by their sequence).
 */
export class ShardIntake {
  #messages: ConsumerMessages | null = null;
  #consumer: Consumer | null = null;
  #stalled = false;
  #closed = false;
  readonly #source: IntakeSource;
  readonly #ranPast: RanPastWatch;
  readonly #done: Promise<void>;
  /**
   * Stream sequences of the messages delivered here and not yet acknowledged, terminated or
   * sent back (nak). A replaced consumer's copy of a message still held shares its sequence and
   * is not delivered again: the server applies an acknowledgement by the stream sequence in its
   * subject, so the first one sent, re-sent if lost, settles the copy too (checked on
   * nats-server 2.9.10).
   */
  readonly #held = new Set<number>();
  /** The acknowledgements sent, oldest first, until the consumer's ack floor passes them. */
  #acked: { seq: number; subject: string; at: number }[] = [];

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly log: Logger,
    private readonly draining: () => boolean,
    private readonly deliver: (msg: JsMsg) => void,
    source: IntakeSource,
  ) {
    this.#source = source;
    this.#ranPast = new RanPastWatch(jsm, source.stream, source.subject);
    this.#done = this.#run();
    // Checked with the host's other intakes (`IntakeChecks`): one read for all.
    source.checks.add(this);
  }

  /** The consumer's durable name and subject, for a check of several intakes at once. */
  get source(): { durable: string; subject: string } {
    return { durable: this.#source.consumer.durable_name, subject: this.#source.subject };
  }

  /** Settles once the intake has stopped consuming for good. */
  get done(): Promise<void> {
    return this.#done;
  }

  /** Stops consuming (the host draining, or the shard no longer its) and waits for the loop to end. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#source.checks.delete(this);
    await this.#messages?.close().catch(() => undefined);
    await this.#done.catch(() => undefined);
  }

  /** The message as delivered, telling this intake when it is acknowledged or terminated. */
  #tracked(msg: JsMsg): JsMsg {
    const seq = msg.seq;
    this.#held.add(seq);
    const subject = ackSubjectOf(msg);
    const settle = (acked: boolean) => {
      if (!this.#held.delete(seq)) return;
      if (acked && subject !== null) this.#acked.push({ seq, subject, at: Date.now() });
    };
    return new Proxy(msg, {
      get(target, prop, receiver) {
        if (prop === 'ack') return () => (target.ack(), settle(true));
        if (prop === 'term') return (reason?: string) => (target.term(reason), settle(false));
        // Sent again by the server: its next copy is delivered (`#run`).
        if (prop === 'nak') return (millis?: number) => (target.nak(millis), settle(false));
        const value = Reflect.get(target, prop, receiver) as unknown;
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    });
  }

  /**
   * Every ACK_CHECK_MS, from the state read for all of the host's intakes at once (`known`: read
   * at `askedAt`, with how many messages its subject holds): both checks.
   */
  async check(known: {
    info: ConsumerInfo | null;
    stored: number;
    askedAt: number;
  }): Promise<void> {
    const consumer = this.#consumer;
    if (!consumer || this.#ending()) {
      this.#ranPast.reset();
      return;
    }
    const { info, askedAt } = known;
    if (!info || consumer !== this.#consumer) return;
    this.#resendLostAcks(info, askedAt);
    const ranPast = await this.#ranPast.check(consumer, info, known.stored);
    if (!ranPast || consumer !== this.#consumer) return;
    this.log.warn(`${this.#source.label} consumer ran past jobs on its subject; replaced`);
    this.#stalled = true;
    await this.#messages?.close().catch(() => undefined);
  }

  /** Sends again the acknowledgements that the consumer's ack floor (read at `askedAt`) says were lost. */
  #resendLostAcks(info: ConsumerInfo, askedAt: number): void {
    const floor = info.ack_floor.stream_seq;
    // At or below the floor: arrived. Older than the ledger's bound: given up.
    this.#acked = this.#acked.filter((a) => a.seq > floor && a.at > askedAt - ACK_LEDGER_MAX_MS);
    let lowestHeld = Infinity;
    for (const seq of this.#held) lowestHeld = Math.min(lowestHeld, seq);
    const lost = this.#acked.filter(
      (a) => a.seq < lowestHeld && a.at <= askedAt - ACK_IN_FLIGHT_MS,
    );
    if (lost.length === 0) return;
    for (const a of lost) this.nc.publish(a.subject, ACK);
    this.log.warn(
      { ack_floor: floor, resent: lost.length, first: lost[0]!.seq },
      `${this.#source.label} acknowledgements lost; sent again`,
    );
  }

  #ending(): boolean {
    return this.#closed || this.draining();
  }

  async #run(): Promise<void> {
    const { jsm, log } = this;
    const source = this.#source;
    const js = jetstream(this.nc);
    while (!this.#ending()) {
      try {
        // First whether the shard is still this host's (read from the bucket's leader): a host
        // that lost it meanwhile must not delete the consumer its new owner made.
        if (!(await source.prepare())) {
          this.#closed = true;
          break;
        }
        if (this.#stalled) {
          // A consumer left without a leader (cluster node lost) is replaced; the jobs stay in
          // the stream, and one delivered twice cannot start twice. Replaced only once deleted:
          // the one kept would never send again what it sent into a connection that lost it
          // (its ack_wait is hours), and those jobs would wait in the stream for that long.
          await jsm.consumers
            .delete(source.stream, source.consumer.durable_name)
            .catch((err: unknown) => {
              if (!isConsumerNotFound(err)) throw err;
            });
          this.#stalled = false;
          // Acknowledgements sent to the consumer replaced went nowhere; its jobs not acknowledged
          // are delivered again by the new one.
          this.#acked = [];
        }
        // Re-declared each time: a new owner's takeover, or a stall, deleted it.
        await jsm.consumers.add(source.stream, source.consumer);
        const consumer = await js.consumers.get(source.stream, source.consumer.durable_name);
        this.#consumer = consumer;
        this.#messages = await consumer.consume(workConsumeOptions(512));
        // A close that came while this consume was being opened closed only the one before it.
        // Closed here, it ends where the loop below reads it (close() resolves only there).
        if (this.#ending()) void this.#messages.close();
        closeWhenStalled(this.#messages, log, source.label, () => {
          this.#stalled = true;
        });
        for await (const msg of this.#messages) {
          // A replaced consumer's copy of a job held here (waiting or running): the job is
          // already in its device's mailbox, and settling it settles this copy too. Delivered,
          // the copy would take a free slot of the device and, refused (the job runs here), be
          // acknowledged, taking the job's message off this subject while it still runs.
          if (this.#held.has(msg.seq)) continue;
          this.deliver(this.#tracked(msg));
        }
      } catch (err) {
        // A cluster node going away can end the consumer: consume again, never stop serving.
        // What the failed consume had taken and not handed over is lost with it: replaced too.
        this.#stalled = true;
        if (!this.#ending()) log.warn({ err }, `${source.label} consumer failed; consuming again`);
      }
      if (!this.#ending()) await sleep(500);
    }
  }
}

/** How often the consumers' ack floors and pending counts are checked against their subjects. */
const ACK_CHECK_MS = 5_000;
/** An acknowledgement sent this recently may not have reached the consumer when it answered. */
const ACK_IN_FLIGHT_MS = 2_000;
/** How long an acknowledgement is kept while the floor stays below it (a long job held). */
const ACK_LEDGER_MAX_MS = 10 * 60_000;
const ACK = new TextEncoder().encode('+ACK');

/** The subject a JetStream message is acknowledged on (the client keeps it as `reply`). */
function ackSubjectOf(msg: JsMsg): string | null {
  const reply = (msg as JsMsg & { reply?: unknown }).reply;
  return typeof reply === 'string' && reply.startsWith('$JS.ACK.') ? reply : null;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
