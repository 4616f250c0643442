import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type ConsumerMessages,
  type JsMsg,
} from '@nats-io/jetstream';
import { headers as natsHeaders, nanos, type NatsConnection } from '@nats-io/transport-node';
import {
  ActorCapability,
  Buckets,
  Headers,
  Consumers,
  LockKeys,
  MessageIds,
  Streams,
  Subjects,
  decodeOrDrop,
  encodeJson,
  WorkerHeartbeat,
  topologyFrom,
  JOB_SHARDS,
  type DropContext,
  type ShardOwner,
  shardOwnerOf,
} from '@svc/proto';
import {
  closeWhenStalled,
  isConsumerNotFound,
  workConsumeOptions,
  Lease,
  decodedEntries,
  ensureTopology,
  watchBucket,
} from '@svc/nats';
import { envelopeOfMessage, envelopeSubjectOf } from '@svc/device-access';
import { type Logger, injectTraceContext, MetricsRegistry } from '@svc/telemetry';
import { randomUUID } from 'node:crypto';
import { Counter, Gauge } from 'prom-client';
import type { DispatcherConfig } from './config.js';
import { HostView } from './host-view.js';
import { planShards, type ShardEntry } from './shard-assignment.js';

export interface DispatcherDeps {
  nc: NatsConnection;
  log: Logger;
  /** Where its metrics go (the process's registry); a private one when absent. */
  metrics?: MetricsRegistry;
}

export interface RunningDispatcher {
  /** Identity of this dispatcher in leases. */
  id: string;
  stop(): Promise<void>;
}

/**
 * Assigns the shards of each context's jobs to live actor hosts (docs/architecture.md, job
 * path): a job goes from the gateway to its shard subject and from there to the shard's owner,
 * never through the dispatcher. One dispatcher leads a context at a time (a lease in
 * `svc-locks`); the leader also forwards to their shard subjects the jobs that gateways of an
 * earlier release store on the context's own subject, one at a time in stream order.
 */
export async function startDispatcher(
  config: DispatcherConfig,
  deps: DispatcherDeps,
): Promise<RunningDispatcher> {
  const { nc, log } = deps;
  const id = `dispatcher-${randomUUID().slice(0, 8)}`;
  const stores = await ensureTopology(nc, topologyFrom(config));
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const hosts = new HostView(config.DISPATCH_HOST_LIVENESS * 1000);
  const locks = stores[Buckets.locks];
  const registry = deps.metrics ?? new MetricsRegistry();
  // Contexts come from SVC_CONTEXTS: bounded label values.
  const shardsAssigned = new Counter({
    name: 'svc_dispatcher_shards_assigned_total',
    help: 'Shards of a context this dispatcher assigned to an actor host, by context.',
    labelNames: ['context'] as const,
    registers: [registry],
  });
  const forwarded = new Counter({
    name: 'svc_dispatcher_jobs_forwarded_total',
    help: 'Jobs of gateways of an earlier release forwarded to their shard subject, by context.',
    labelNames: ['context'] as const,
    registers: [registry],
  });
  const leadingGauge = new Gauge({
    name: 'svc_dispatcher_leading',
    help: '1 while this dispatcher leads the context (holds its lease), else 0.',
    labelNames: ['context'] as const,
    registers: [registry],
  });
  for (const context of config.SVC_CONTEXTS) leadingGauge.set({ context }, 0);

  // Live view of actor hosts from their heartbeats, judged as of when it was last whole.
  const watch = await watchBucket(stores[Buckets.workers], { log });
  hosts.heartbeatsCurrentAt = () => watch.currentAt();
  void (async () => {
    // A heartbeat that is not one counts as none: no shard goes to what it claims.
    const beatOf = (_key: string, value: Uint8Array, drop: DropContext) =>
      decodeOrDrop(WorkerHeartbeat, value, drop);
    for await (const e of decodedEntries(watch, beatOf, {
      consumer: 'dispatcher_heartbeats',
      log,
    })) {
      hosts.update(e.key, e.decoded);
    }
  })();

  // Who owns each shard of each context's jobs (docs/shards.md), as the leader last read it, by
  // key: an entry deleted is gone from here too, so that the next plan creates it afresh; one
  // that is not an owner (null) is planned as none and overwritten on its revision.
  type KnownShard = { owner: ShardOwner | null; revision: number };
  const shardEntries = new Map<string, KnownShard>();
  const shardsOpenedAt = Date.now();
  const shardWatch = await watchBucket(locks, { key: LockKeys.shardAll, log });
  void (async () => {
    for await (const e of decodedEntries(shardWatch, shardOwnerOf, {
      consumer: 'dispatcher_shards',
      log,
    })) {
      if (e.operation === 'PUT')
        shardEntries.set(e.key, { owner: e.decoded, revision: e.revision });
      else shardEntries.delete(e.key);
    }
  })();

  /**
   * Assigns the context's shards to its live hosts (`planShards`), each change written by
   * compare-and-set on the revision read: a change another leader made meanwhile wins, and the
   * next plan starts from it. Only once both watched copies (heartbeats, owners) were whole.
   */
  const planning = new Set<string>();
  async function planContext(context: string): Promise<void> {
    if (planning.has(context)) return;
    if (watch.currentAt() <= shardsOpenedAt || shardWatch.currentAt() <= shardsOpenedAt) return;
    planning.add(context);
    try {
      const now = Date.now();
      const known = new Map<number, KnownShard>();
      for (let shard = 0; shard < JOB_SHARDS; shard++) {
        const entry = shardEntries.get(LockKeys.shard(context, shard));
        if (entry) known.set(shard, entry);
      }
      const entries = new Map<number, ShardEntry>();
      for (const [shard, { owner }] of known) {
        if (!owner) continue;
        const { host, epoch, state, to } = owner;
        entries.set(shard, { host, epoch, state, ...(to !== undefined ? { to } : {}) });
      }
      const changes = planShards(
        JOB_SHARDS,
        // Only hosts that consume shards: one of an earlier release takes no shard.
        hosts.liveHosts(context, now, [ActorCapability.jobShards]),
        entries,
        new Set(hosts.silentHosts(context, now)),
      );
      for (const change of changes) {
        const key = LockKeys.shard(context, change.shard);
        const before = known.get(change.shard);
        const value: ShardOwner =
          change.kind === 'assign'
            ? {
                context,
                shard: change.shard,
                epoch: change.epoch,
                host: change.host,
                state: 'owned',
              }
            : { ...before!.owner!, state: 'releasing', to: change.to };
        try {
          if (before) await locks.update(key, encodeJson(value), before.revision);
          else await locks.create(key, encodeJson(value));
          if (change.kind === 'assign') shardsAssigned.inc({ context });
          log.info(
            { context, ...change },
            change.kind === 'assign' ? 'shard assigned' : 'shard release asked',
          );
        } catch (err) {
          log.debug(
            { err, context, shard: change.shard },
            'shard change not written; planned again',
          );
        }
      }
    } finally {
      planning.delete(context);
    }
  }

  async function ensureDispatchConsumer(context: string): Promise<void> {
    const durable = Consumers.dispatch(context);
    await jsm.consumers
      .add(Streams.jobs, {
        durable_name: durable,
        filter_subject: Subjects.jobs(context),
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: nanos(30_000),
        max_ack_pending: 1000,
      })
      .catch(async (err: unknown) => {
        // Exists already (another dispatcher made it): fine, as long as it is there.
        await jsm.consumers.info(Streams.jobs, durable).catch(() => {
          throw err;
        });
      });
  }

  let stopping = false;
  const closing = new Set<() => void>();
  const loops = config.SVC_CONTEXTS.map((context) =>
    leadContext(context).catch((err: unknown) =>
      log.error({ err, context }, 'dispatch loop failed'),
    ),
  );
  log.info({ id, contexts: config.SVC_CONTEXTS }, 'dispatcher started');

  /** Holds the context's lease while it can: plans its shards, forwards what needs it. */
  async function leadContext(context: string): Promise<void> {
    const lease = new Lease(locks, LockKeys.dispatcher(context), id, config.DISPATCH_LEASE * 1000);
    const renewEvery = Math.max(250, (config.DISPATCH_LEASE * 1000) / 3);
    while (!stopping) {
      const leading = await lease.acquire().catch(() => false);
      if (!leading) {
        await sleep(renewEvery);
        continue;
      }
      log.info({ context }, 'leading context');
      leadingGauge.set({ context }, 1);
      void planContext(context);
      const shardPlan = setInterval(() => void planContext(context), SHARD_PLAN_MS);
      let lost: () => void = () => undefined;
      const leadLost = new Promise<void>((resolve) => (lost = resolve));
      closing.add(lost);
      const renewal = setInterval(() => {
        lease.acquire().then(
          (still) => {
            if (!still) {
              log.warn({ context }, 'lost the context lease');
              lost();
            }
          },
          () => undefined,
        );
      }, renewEvery);
      try {
        await forwardEarlierGateways(context, leadLost);
      } finally {
        clearInterval(renewal);
        clearInterval(shardPlan);
        closing.delete(lost);
      }
      leadingGauge.set({ context }, 0);
    }
    await lease.release().catch(() => undefined);
  }

  /**
   * While leading: forwards each job a gateway of an earlier release stored on the context's own
   * subject to its shard subject, in stream order, one at a time (an upgrade's brief overlap:
   * docs/operations.md). The envelope keeps its trace; stored under `MessageIds.forwarded`, so a
   * job forwarded twice (a leader that died before its acknowledgement) is stored once. A failed
   * consume is opened again (its unacknowledged jobs come first in a new consumer); it ends when
   * the lead is lost or the dispatcher stops.
   */
  async function forwardEarlierGateways(context: string, leadLost: Promise<void>): Promise<void> {
    let ended = false;
    // The consume open now: closed when the lead is lost (one handler, not one per consume).
    let open: ConsumerMessages | null = null;
    void leadLost.then(() => {
      ended = true;
      void open?.close();
    });
    while (!ended && !stopping) {
      try {
        // A new consumer delivers every job not yet acknowledged first, in order: one delivered
        // to a leader that died comes again before the later ones.
        await jsm.consumers
          .delete(Streams.jobs, Consumers.dispatch(context))
          .catch((err: unknown) => {
            if (!isConsumerNotFound(err)) throw err;
          });
        await ensureDispatchConsumer(context);
        const consumer = await js.consumers.get(Streams.jobs, Consumers.dispatch(context));
        const messages = await consumer.consume(workConsumeOptions(64));
        open = messages;
        if (ended || stopping) void messages.close();
        closeWhenStalled(messages, log, `forward ${context}`, () => undefined);
        for await (const m of messages) {
          await forward(context, m);
          if (ended || stopping) break;
        }
      } catch (err) {
        if (!ended && !stopping) log.warn({ err, context }, 'cannot forward jobs yet');
      }
      if (!ended && !stopping) await Promise.race([sleep(500), leadLost]);
    }
  }

  async function forward(context: string, m: JsMsg): Promise<void> {
    // The reaper's probe there is a reaper's of an earlier release.
    const envelope = envelopeOfMessage(m, (e) => Subjects.jobs(e.spec.context), {
      consumer: 'dispatcher',
      log,
    });
    if (!envelope) return;
    const h = natsHeaders();
    injectTraceContext(h, m.headers?.get(Headers.traceparent));
    // Retried in place, never nak'ed: a device's later job must not overtake this one.
    for (let attempt = 0; !stopping; attempt++) {
      try {
        await js.publish(envelopeSubjectOf(envelope), m.data, {
          msgID: MessageIds.forwarded(envelope.job_id),
          headers: h,
        });
        m.ack();
        forwarded.inc({ context });
        log.debug({ job_id: envelope.job_id, seq: m.seq }, 'job forwarded to its shard');
        return;
      } catch (err) {
        if (attempt === 0) log.warn({ err, job_id: envelope.job_id }, 'forward failed; retrying');
        m.working();
        await sleep(Math.min(2000, 250 * 2 ** attempt));
      }
    }
  }

  return {
    id,
    async stop() {
      stopping = true;
      for (const lost of closing) lost();
      watch.stop();
      shardWatch.stop();
      await Promise.allSettled(loops);
    },
  };
}

/** How often a leader plans its context's shards (and at once when it takes the lead). */
const SHARD_PLAN_MS = 1_000;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
