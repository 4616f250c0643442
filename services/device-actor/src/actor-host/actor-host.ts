import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Counter } from 'prom-client';
import {
  Buckets,
  ErrorCode,
  LockKeys,
  Subjects,
  SubjectParsers,
  SvcError,
  isTerminal,
  jobShardOf,
  topologyFrom,
  type DeviceSecrets,
  type JobRecord,
  type Sealer,
  withinMs,
} from '@svc/proto';
import { AuditLog, MetricsRegistry, jobFailureCounter, type Logger } from '@svc/telemetry';
import { ensureTopology, watchBucket } from '@svc/nats';
import { deviceKeyOf, envelopeOfMessage, envelopeSubjectOf } from '@svc/device-access';
import { Jobs } from '@svc/jobs';
import type { ActorContext, ParseOutputs } from './actor-context.js';
import type { DeviceActorConfig } from '../config.js';
import { DeviceActor } from './device-actor.js';
import { DeviceAdmission } from './device-admission.js';
import { DeviceLocks } from './device-claim.js';
import { ClusterClaims } from './cluster-claims.js';
import type { RunDeviceJob } from '../device/device-job.js';
import { Semaphore } from './mailbox.js';
import { RunningJobs } from './running-jobs.js';
import { heartbeatWriter, registerHostGauges, type HostState } from './host-status.js';
import { ShardOwnership, type ShardDelivery } from './shard-ownership.js';

export type { ParseOutputs } from './actor-context.js';

export interface ActorHostDeps {
  nc: NatsConnection;
  log: Logger;
  sealer: Sealer;
  runner: RunDeviceJob;
  parseOutputs?: ParseOutputs;
  /** Called once a job has ended (webhooks, metrics). Never awaited by the device path. */
  onJobEnded?: (record: JobRecord, secrets: DeviceSecrets) => void;
  /** Warm-session counters for heartbeats. */
  poolStats?: () => { size: number; hits: number; misses: number };
  /** Closes the idle warm sessions to a device (its claim is wanted by another host). */
  closeIdleSessions?: (device: string) => Promise<void>;
  /** Closes the warm sessions of the devices at the addresses `matches` says yes to. */
  closeWarmSessions?: (matches: (host: string, port: number) => boolean) => Promise<void>;
  audit?: AuditLog;
  /** Where its metrics go (the process's registry); a private one when absent. */
  metrics?: MetricsRegistry;
  /**
   * How long a job's state change is tried again through a store outage before the job's
   * message is sent back (`Jobs`' default, 60 s, when absent; tests of an outage shorten it).
   */
  storeRetryMs?: number;
}

export interface RunningActorHost {
  hostId: string;
  /** Jobs running now. */
  busy(): number;
  /** Jobs whose end this host could not store and may still have to fail (`ctx.unsettled`). */
  unsettled(): number;
  stop(): Promise<void>;
}

/**
 * An actor host: takes the jobs of the shards it owns (`ShardOwnership`), hands each to the
 * `DeviceActor` of its device, beats its heartbeat, forwards cancels, and on stop releases its
 * shards, the jobs that have not started left in them for the next owner. The device work, its
 * guards and the job's state changes live in `DeviceActor`.
 */
export async function startActorHost(
  config: DeviceActorConfig,
  deps: ActorHostDeps,
): Promise<RunningActorHost> {
  const { nc, log } = deps;
  const hostId = config.ACTOR_HOST_ID || `${hostname()}-${process.pid}-${randomUUID().slice(0, 6)}`;
  const stores = await ensureTopology(nc, topologyFrom(config));
  const jsm = await jetstreamManager(nc);
  const registry = deps.metrics ?? new MetricsRegistry();
  const jobs = await Jobs.open(nc, stores, {
    maxResultBytes: config.SVC_MAX_RESULT_BYTES,
    onFailed: jobFailureCounter(registry),
    ...(deps.storeRetryMs !== undefined ? { transientRetryMs: deps.storeRetryMs } : {}),
  });
  const admission = await DeviceAdmission.start(config, stores, log);
  const transcriptEverywhere = config.TRANSCRIPT_CONTEXTS.includes('*');
  const transcriptContexts = new Set(config.TRANSCRIPT_CONTEXTS);
  const sessions = new Semaphore(config.ACTOR_MAX_SESSIONS);
  const actors = new Map<string, DeviceActor>();
  const running = new RunningJobs();
  const startedAt = new Date().toISOString();
  let draining = false;
  const hostGone = async (host: string): Promise<boolean> => {
    const entry = await stores[Buckets.workers].get(host).catch(() => undefined);
    return entry === null || (entry !== undefined && entry.operation !== 'PUT');
  };
  // A device's addresses may be on shards of other hosts: its claim is the cluster's.
  const locks = stores[Buckets.locks];
  const deviceClaims = new ClusterClaims({
    store: locks,
    watch: await watchBucket(locks, { key: LockKeys.deviceAll, log }),
    hostId,
    log,
    hostGone,
    closeIdle: deps.closeIdleSessions ?? (() => Promise.resolve()),
    recheckMs: Math.max(1000, 2 * config.HEARTBEAT_INTERVAL * 1000),
  });

  const ctx: ActorContext = {
    config,
    hostId,
    log,
    audit: deps.audit ?? new AuditLog('device-actor'),
    sealer: deps.sealer,
    jobs,
    admission,
    runner: deps.runner,
    parseOutputs: deps.parseOutputs,
    sessions,
    deviceLocks: new DeviceLocks(config.DEVICE_MAX_SESSIONS),
    deviceHolds: deviceClaims,
    running,
    unsettled: new Set(),
    hostGone,
    transcripts: stores[Buckets.transcripts],
    transcriptWanted: (context) => transcriptEverywhere || transcriptContexts.has(context),
    jobsEnded: new Counter({
      name: 'svc_actor_jobs_total',
      help: 'Jobs this actor host ran to a terminal status, by status.',
      labelNames: ['status'] as const,
      registers: [registry],
    }),
    draining: () => draining,
    onJobEnded: deps.onJobEnded,
  };

  const host: HostState = {
    hostId,
    config,
    sessions,
    running: () => running.size,
    devices: () => actors.size,
    poolStats: deps.poolStats,
    draining: () => draining,
    startedAt,
  };
  registerHostGauges(registry, host);

  const beat = heartbeatWriter(stores[Buckets.workers], host);

  /**
   * Settles what the host keeps of jobs whose bookkeeping failed here, read again: a job ended,
   * gone or started by another host (its shard moved, and its next owner ran it) is forgotten;
   * a job this host ran whose outcome it could not store is failed as such (`failOutcomeLost`),
   * as when its message comes back here: when its shard moved, the next owner waits for it as
   * long as this host beats. A job still queued may yet start here: it stays.
   */
  const settleUnsettled = async () => {
    for (const jobId of [...ctx.unsettled]) {
      // Unread (the store still away, or a record that is not one): looked at again next beat.
      const stored = await jobs.get(jobId).catch(() => undefined);
      if (stored === undefined) continue;
      const record = stored?.record;
      const startedHere = record?.status === 'started' && record.actor_host === hostId;
      if (startedHere && !running.has(jobId)) {
        const failed = await jobs.failOutcomeLost(jobId, hostId).catch(() => undefined);
        if (failed === undefined) continue; // tried again next beat
      } else if (
        record &&
        !isTerminal(record.status) &&
        (startedHere || record.status === 'queued')
      ) {
        continue;
      }
      ctx.unsettled.delete(jobId);
    }
  };
  let forgetting: Promise<void> | null = null;

  await beat();
  const heartbeat = setInterval(() => {
    beat().catch((err: unknown) => log.warn({ err }, 'heartbeat failed'));
    // Only when there is something to forget, and one pass at a time (a slow store).
    if (ctx.unsettled.size === 0 || forgetting) return;
    forgetting = settleUnsettled().finally(() => {
      forgetting = null;
    });
  }, config.HEARTBEAT_INTERVAL * 1000);

  const cancels: Subscription = nc.subscribe(Subjects.cancelAll, {
    callback: (_err, msg) => {
      const jobId = SubjectParsers.cancel(msg.subject);
      if (jobId === null) return;
      running
        .get(jobId)
        ?.abort(new SvcError(ErrorCode.CANCELLED, 'job cancelled by its submitter'));
    },
  });

  const deliver = (msg: JsMsg, shard: ShardDelivery) => {
    const envelope = envelopeOfMessage(msg, envelopeSubjectOf, { consumer: 'actor_host', log });
    if (!envelope) return;
    const key = deviceKeyOf(
      envelope.spec.context,
      envelope.address ?? envelope.spec.host,
      envelope.spec.port,
    );
    let actor = actors.get(key);
    if (!actor) {
      actor = new DeviceActor(ctx, () => actors.delete(key));
      actors.set(key, actor);
    }
    const { context, epoch } = shard;
    const owned = () => shards.owns(context, shard.shard, epoch);
    actor.push({ envelope, msg, shard: { epoch, fence: shard.fence, owned } });
  };
  // The shards of the contexts' jobs this host owns (docs/shards.md).
  const shards = await ShardOwnership.start({
    nc,
    jsm,
    locks: stores[Buckets.locks],
    hostId,
    contexts: config.WORKER_CONTEXTS,
    log,
    draining: () => draining,
    deliver,
    release: async (context, shard) => {
      const ofShard = [...actors].filter(
        ([key]) => key.startsWith(`${context}|`) && jobShardOf(key) === shard,
      );
      for (const [, actor] of ofShard) actor.takeWaiting();
      // A job pushed meanwhile (its turn sees the shard gone) is waited for as well.
      while (ofShard.some(([, actor]) => !actor.idle())) {
        await Promise.all(ofShard.map(([, actor]) => actor.whenIdle()));
      }
      // The shard's devices' warm sessions go too (idle devices' as well): the next owner's
      // session must be the device's only one (DESIGN invariant 3).
      await deps.closeWarmSessions?.(
        (host, port) => jobShardOf(deviceKeyOf(context, host, port)) === shard,
      );
    },
  });
  log.info({ host_id: hostId, contexts: config.WORKER_CONTEXTS }, 'actor host started');

  return {
    hostId,
    busy: () => running.size,
    unsettled: () => ctx.unsettled.size,
    async stop() {
      draining = true;
      await beat().catch(() => undefined);
      await shards.stop();
      cancels.unsubscribe();
      // Jobs waiting in mailboxes never started: they stay in their shards for the next owner.
      const waiting = [...actors.values()].flatMap((a) => a.takeWaiting());
      await withinMs(running.whenEmpty(), config.SHUTDOWN_GRACE * 1000);
      for (const c of running.values()) {
        c.abort(new SvcError(ErrorCode.WORKER_LOST, 'actor host shut down while the job ran'));
      }
      await running.whenEmpty();
      // No job runs here any more: its warm sessions close, which gives its device claims back
      // (waited for: before its heartbeat goes), and then its shards go to other hosts. Claims
      // wait for their sessions to close: in the other order every stop took their deadline.
      await deps.closeWarmSessions?.(() => true);
      await deviceClaims.stop();
      clearInterval(heartbeat);
      await forgetting;
      admission.stop();
      await shards.releaseAll();
      await jobs.batchEventsStored();
      // A job whose end this host could not store is failed now as at its heartbeat
      // (`settleUnsettled`: never run again); while one is left `started` the heartbeat stays,
      // so that the reaper fails it once it goes stale.
      let unsettled = 0;
      for (const jobId of [...ctx.unsettled]) {
        const failed = await jobs.failOutcomeLost(jobId, hostId).catch(() => undefined);
        if (failed === undefined) unsettled++;
        else ctx.unsettled.delete(jobId);
      }
      log.info({ waiting: waiting.length, unsettled }, 'actor host stopped');
      if (unsettled === 0) await stores[Buckets.workers].delete(hostId).catch(() => undefined);
    },
  };
}
