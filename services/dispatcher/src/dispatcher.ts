import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type Consumer,
  type ConsumerMessages,
  type JsMsg,
} from '@nats-io/jetstream';
import { headers as natsHeaders, nanos, type NatsConnection } from '@nats-io/transport-node';
import {
  Buckets,
  Headers,
  KeyedWindow,
  Consumers,
  LockKeys,
  MessageIds,
  Streams,
  Subjects,
  decodeMessage,
  decodeOrDrop,
  encodeJson,
  isTerminal,
  JobEnvelope,
  JobRecord,
  WorkerHeartbeat,
  topologyFrom,
  DevicePlacementEntry,
  HostDrain,
  JOB_SHARDS,
  type ShardOwner,
  shardOwnerOf,
  ActorCapability,
} from '@svc/proto';
import {
  closeWhenStalled,
  isConsumerNotFound,
  workConsumeOptions,
  KvMirror,
  Lease,
  retryTransient,
  ensureTopology,
  RanPastWatch,
  watchBucket,
} from '@svc/nats';
import { deviceKeyOf } from '@svc/device-access';
import {
  type Logger,
  SpanKind,
  extractTraceContext,
  injectTraceContext,
  withSpan,
  MetricsRegistry,
} from '@svc/telemetry';
import { randomUUID } from 'node:crypto';
import { Counter, Gauge } from 'prom-client';
import type { DispatcherConfig } from './config.js';
import { Placement } from './placement.js';
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
 * Moves accepted jobs from each context's subject to the actor host that owns the device.
 * One dispatcher leads a context at a time (a lease in `svc-locks`) and handles its jobs one
 * by one in stream order, which is what keeps each device's jobs in order.
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
  const placement = new Placement(
    config.DISPATCH_HOST_LIVENESS * 1000,
    undefined,
    config.DISPATCH_REBALANCE_IDLE * 1000,
  );
  const jobRecords = stores[Buckets.jobs];
  /**
   * When a job ended (0: it has no record), or null while it has not: asked only when a
   * device's host is not live or the device is off its preferred host.
   */
  const endedAt = async (jobId: string): Promise<number | null> => {
    const entry = await jobRecords.get(jobId).catch(() => undefined);
    // The store did not answer: not known to have ended, so the device keeps its order.
    if (entry === undefined) return null;
    if (!entry || entry.operation !== 'PUT') return 0;
    let record: JobRecord;
    try {
      record = decodeMessage(JobRecord, entry.value);
    } catch {
      return null; // a record that is not one: not known to have ended either
    }
    if (!isTerminal(record.status)) return null;
    return record.ended_at ? Date.parse(record.ended_at) : 0;
  };
  const registry = deps.metrics ?? new MetricsRegistry();
  // Contexts come from SVC_CONTEXTS: bounded label values.
  const placed = new Counter({
    name: 'svc_dispatcher_jobs_placed_total',
    help: 'Jobs this dispatcher placed on an actor host, by context.',
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

  // Where each device's jobs were last placed, by whichever dispatcher led: a new leader keeps
  // devices there (their queued jobs first). Written only when a device's host changes.
  const locks = stores[Buckets.locks];
  const placements = await KvMirror.start(locks, LockKeys.placementAll, log);
  // Decoded once per stored value (it is read for every job placed), not at every read.
  const hostOfValue = new WeakMap<Uint8Array, string | null>();
  placement.knownHost = (deviceKey) => {
    const key = LockKeys.placement(deviceKey);
    const entry = placements.get(key);
    if (!entry) return null;
    let host = hostOfValue.get(entry.value);
    if (host === undefined) {
      const value = decodeOrDrop(DevicePlacementEntry, entry.value, {
        consumer: 'dispatcher_placements',
        log,
        where: { key },
      });
      host = value?.host ?? null;
      hostOfValue.set(entry.value, host);
    }
    return host;
  };
  const rememberHost = async (deviceKey: string, host: string): Promise<void> => {
    if (placement.knownHost(deviceKey) === host) return;
    const entry: DevicePlacementEntry = { device: deviceKey, host };
    await retryTransient(
      () => locks.put(LockKeys.placement(deviceKey), encodeJson(entry)),
      5000,
    ).catch((err: unknown) => log.warn({ err }, 'device placement not stored'));
  };

  // Live view of actor hosts from their heartbeats, judged as of when it was last whole.
  const watch = await watchBucket(stores[Buckets.workers], { log });
  placement.heartbeatsCurrentAt = () => watch.currentAt();
  void (async () => {
    for await (const e of watch) {
      // A heartbeat that is not one counts as none: nothing is placed on what it claims.
      const beat =
        e.operation === 'PUT'
          ? decodeOrDrop(WorkerHeartbeat, e.value, {
              consumer: 'dispatcher_heartbeats',
              log,
              where: { key: e.key },
            })
          : null;
      placement.update(e.key, beat);
    }
  })();

  // The reaper's drains of hosts: a device whose jobs a drain is handing back waits for them
  // even when the host beats again (Placement).
  const drainWatch = await watchBucket(locks, { key: LockKeys.drainAll, log });
  void (async () => {
    const hostOfKey = new Map<string, string>();
    for await (const e of drainWatch) {
      const drain =
        e.operation === 'PUT'
          ? decodeOrDrop(HostDrain, e.value, {
              consumer: 'dispatcher_drains',
              log,
              where: { key: e.key },
            })
          : null;
      const hostId = drain?.host_id ?? hostOfKey.get(e.key);
      if (drain) hostOfKey.set(e.key, drain.host_id);
      else hostOfKey.delete(e.key);
      if (hostId !== undefined) placement.drainUpdate(hostId, drain);
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
    for await (const e of shardWatch) {
      const owner =
        e.operation === 'PUT'
          ? shardOwnerOf(e.key, e.value, {
              consumer: 'dispatcher_shards',
              log,
              where: { key: e.key },
            })
          : null;
      if (e.operation === 'PUT') shardEntries.set(e.key, { owner, revision: e.revision });
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
        // Only hosts that consume shards (an earlier release's would never take one).
        placement.liveHosts(context, now, [ActorCapability.jobShards]),
        entries,
        new Set(placement.silentHosts(context, now)),
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
  for (const context of config.SVC_CONTEXTS) await ensureDispatchConsumer(context);

  let stopping = false;
  const loops = config.SVC_CONTEXTS.map((context) =>
    leadContext(context).catch((err: unknown) =>
      log.error({ err, context }, 'dispatch loop failed'),
    ),
  );
  log.info({ id, contexts: config.SVC_CONTEXTS }, 'dispatcher started');

  async function leadContext(context: string): Promise<void> {
    const lease = new Lease(
      stores[Buckets.locks],
      LockKeys.dispatcher(context),
      id,
      config.DISPATCH_LEASE * 1000,
    );
    const renewEvery = Math.max(250, (config.DISPATCH_LEASE * 1000) / 3);
    let stalled = false;
    // After another leader: the consumer is read for its deliveries before anything is consumed
    // (a read that fails is tried again; consuming meanwhile would deliver the later jobs first).
    let checkHeld = false;
    while (!stopping) {
      const leading = await lease.acquire().catch(() => false);
      if (!leading) {
        await sleep(renewEvery);
        continue;
      }
      log.info({ context }, 'leading context');
      // Another leader may have placed devices since this one last led (its own view stays
      // right when it only lost the lease for a while, the store not answering).
      const takenOver = lease.previousHolder !== id;
      if (takenOver) {
        placement.forgetDevices(context);
        checkHeld = true;
      }
      leadingGauge.set({ context }, 1);
      void planContext(context);
      const shardPlan = setInterval(() => void planContext(context), SHARD_PLAN_MS);
      let messages: ConsumerMessages;
      let consumer: Consumer;
      try {
        // Jobs the previous leader was given and did not place (it died, or stopped while they
        // waited for a host) would come again only after `ack_wait`, behind the device's later
        // jobs: a new consumer delivers them first, in stream order.
        if (checkHeld && !stalled) stalled = await heldByAnother(context);
        checkHeld = false;
        if (stalled) {
          // Delete and re-create: the work-queue stream keeps the jobs; unacked ones come again
          // and a job placed twice is dropped by the placement message id. Until the delete
          // succeeds nothing is consumed: the old consumer would deliver the later jobs first.
          await jsm.consumers
            .delete(Streams.jobs, Consumers.dispatch(context))
            .catch((err: unknown) => {
              if (!isConsumerNotFound(err)) throw err;
            });
          stalled = false;
        }
        await ensureDispatchConsumer(context);
        consumer = await js.consumers.get(Streams.jobs, Consumers.dispatch(context));
        messages = await consumer.consume(workConsumeOptions(256));
        closeWhenStalled(messages, log, `dispatch ${context}`, () => {
          stalled = true;
        });
      } catch (err) {
        // The stream may be electing a leader (cluster node lost): try again shortly.
        log.warn({ err, context }, 'cannot consume jobs yet');
        clearInterval(shardPlan);
        await sleep(500);
        continue;
      }
      // A stop that came while this consume was being opened closed only the ones it knew of.
      // Closed here, it ends where the loop below reads it (close() resolves only there).
      if (stopping) void messages.close();
      const renewal = setInterval(() => {
        lease.acquire().then(
          (still) => {
            if (!still) {
              log.warn({ context }, 'lost the context lease');
              void messages.close();
            }
          },
          () => undefined,
        );
      }, renewEvery);
      // A consumer whose ack floor two checks in a row find past the same job still on the
      // context's subject ran past it (`ranPastMessage`): replaced, the new one delivers the jobs
      // first, in order.
      const ranPast = new RanPastWatch(jsm, Streams.jobs, Subjects.jobs(context));
      const pastCheck = setInterval(() => {
        void ranPast.check(consumer).then((replace) => {
          if (!replace) return;
          log.warn({ context }, 'job consumer ran past jobs on its subject; replaced');
          stalled = true;
          void messages.close();
        });
      }, PAST_CHECK_MS);
      try {
        await dispatchAll(context, messages);
      } catch (err) {
        log.warn({ err, context }, 'job consumer failed; consuming again');
        await sleep(500);
      } finally {
        clearInterval(renewal);
        clearInterval(pastCheck);
        clearInterval(shardPlan);
      }
      leadingGauge.set({ context }, 0);
    }
    await lease.release().catch(() => undefined);
  }

  /** Whether the context's consumer has jobs delivered and not acknowledged (to another leader). */
  async function heldByAnother(context: string): Promise<boolean> {
    const info = await jsm.consumers
      .info(Streams.jobs, Consumers.dispatch(context))
      .catch((err: unknown) => {
        // None yet (made below): nothing held. Any other failure is not a "no".
        if (isConsumerNotFound(err)) return null;
        throw err;
      });
    if (info && info.num_ack_pending > 0) {
      log.info(
        { context, held: info.num_ack_pending },
        'jobs held by the previous leader: consuming them first',
      );
      return true;
    }
    return false;
  }

  /**
   * Places the context's jobs as they come, up to PLACEMENTS_IN_FLIGHT at once: one awaited
   * publish per job in turn made the dispatcher's throughput one job per round trip (and a write
   * for every step). A device's jobs still go one after the other, in stream order: each waits
   * for the placement of the one before it, so a retried publish is never overtaken.
   */
  async function dispatchAll(context: string, messages: ConsumerMessages): Promise<void> {
    activeMessages.add(messages);
    const window = new KeyedWindow(PLACEMENTS_IN_FLIGHT, (err) =>
      log.error({ err, context }, 'placement failed'),
    );
    try {
      for await (const m of messages) {
        // The reaper's probe for an envelope that never arrived (its message id is the job's):
        // it only holds that id in the stream's duplicate window.
        if (m.headers?.get(Headers.enqueueProbe)) {
          log.debug({ seq: m.seq, msg_id: m.headers.get(Headers.msgId) }, 'enqueue probe dropped');
          m.ack();
          continue;
        }
        const envelope = decodeOrDrop(JobEnvelope, m.data, {
          consumer: 'dispatcher',
          log,
          where: { subject: m.subject, seq: m.seq },
        });
        if (!envelope) {
          m.term();
          continue;
        }
        const deviceKey = deviceKeyOf(
          context,
          envelope.address ?? envelope.spec.host,
          envelope.spec.port,
        );
        // Handed-back jobs have a chain of their own: a device's new job may be waiting for
        // them (Placement), so they must not wait behind it.
        const chain = envelope.placement > 0 ? `${deviceKey}\0handed-back` : deviceKey;
        await window.add(chain, () => place(context, m, envelope, deviceKey));
        if (stopping) break;
      }
    } finally {
      // Placements under way end (placed, or left unacknowledged for the next leader when
      // stopping) before the consumer is given up.
      await window.drain();
      activeMessages.delete(messages);
    }
  }

  // One span per placement (waiting for a live host included), child of the gateway's span
  // carried in the message headers; the actor's span becomes its child.
  function place(
    context: string,
    m: JsMsg,
    envelope: JobEnvelope,
    deviceKey: string,
  ): Promise<void> {
    const parent = extractTraceContext(m.headers);
    const attributes = { 'svc.context': context, 'messaging.message.id': m.info.streamSequence };
    return withSpan('dispatch job', { parent, attributes, kind: SpanKind.CONSUMER }, () =>
      placeJob(context, m, envelope, deviceKey),
    );
  }

  async function placeJob(
    context: string,
    m: JsMsg,
    envelope: JobEnvelope,
    deviceKey: string,
  ): Promise<void> {
    const job = {
      id: envelope.job_id,
      handBack: envelope.placement > 0,
      ...(envelope.requires !== undefined ? { requires: envelope.requires } : {}),
    };
    // An address with a pinned host key prefers the host of that key: one device, one host.
    if (envelope.device !== undefined) placement.prefer(deviceKey, envelope.device);
    let host = await placement.place(context, deviceKey, job, endedAt);
    if (
      !host &&
      job.requires &&
      placement.liveHosts(context, Date.now(), job.requires).length === 0
    ) {
      // Operators see why a job does not start: every live host is of an earlier release.
      log.warn(
        { job_id: envelope.job_id, context, requires: job.requires },
        `job waits for an actor host with ${job.requires.join(', ')} (upgrade actor hosts)`,
      );
    }
    // No live host, or the device's earlier jobs are coming back from a host that left: hold
    // this message (keeping order) until it may go.
    while (!host && !stopping) {
      m.working();
      await sleep(250);
      host = await placement.place(context, deviceKey, job, endedAt);
    }
    if (!host) return; // stopping: the message is redelivered to the next leader
    const h = natsHeaders();
    injectTraceContext(h, m.headers?.get('traceparent'));
    // The device's job before this one (a handed-back copy keeps its first placement's): the
    // actor host starts this one once that one has ended, wherever it ran.
    const after = job.handBack
      ? m.headers?.get(Headers.after)
      : placement.jobBefore(deviceKey, envelope.job_id);
    if (after) h.set(Headers.after, after);
    // Same message id for the same placement attempt: a redelivered job placed twice is
    // dropped by the stream's duplicate window. A failed publish (the placement stream electing
    // a leader) is retried in place, never nak'ed: a later job for the same device must not
    // overtake this one.
    const msgID = MessageIds.placement(envelope.job_id, envelope.placement);
    for (let attempt = 0; !stopping; attempt++) {
      try {
        await js.publish(Subjects.actor(host), m.data, { msgID, headers: h });
        if (job.handBack) placement.handedBack(deviceKey, job, host);
        const now = placement.hostOf(deviceKey);
        if (now !== null) await rememberHost(deviceKey, now);
        m.ack();
        placed.inc({ context });
        log.debug({ job_id: envelope.job_id, host, seq: m.seq }, 'job placed');
        return;
      } catch (err) {
        if (attempt === 0)
          log.warn({ err, job_id: envelope.job_id }, 'placement publish failed; retrying');
        m.working();
        await sleep(Math.min(2000, 250 * 2 ** attempt));
      }
    }
  }

  const activeMessages = new Set<ConsumerMessages>();
  return {
    id,
    async stop() {
      stopping = true;
      for (const m of activeMessages) await m.close().catch(() => undefined);
      watch.stop();
      drainWatch.stop();
      shardWatch.stop();
      placements.stop();
      await Promise.allSettled(loops);
    },
  };
}

/** How often a leader checks that its job consumer has not run past jobs on its subject. */
const PAST_CHECK_MS = 5_000;

/** How often a leader plans its context's shards (and at once when it takes the lead). */
const SHARD_PLAN_MS = 1_000;

/** Placements of one context under way at once, at most. */
const PLACEMENTS_IN_FLIGHT = 64;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
