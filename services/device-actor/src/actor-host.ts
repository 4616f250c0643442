import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type ConsumerMessages,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { Counter, Gauge } from 'prom-client';
import {
  AuditLog,
  Buckets,
  closeWhenStalled,
  workConsumeOptions,
  Consumers,
  ErrorCode,
  JobLifecycle,
  JobResults,
  JobStore,
  MetricsRegistry,
  jobFailureCounter,
  ACTOR_CAPABILITIES,
  Streams,
  Subjects,
  SubjectParsers,
  SvcError,
  decodeOrDrop,
  deviceKeyOf,
  drainHost,
  publishHandBack,
  encodeJson,
  ensureTopology,
  topologyFrom,
  type DeviceSecrets,
  JobEnvelope,
  type JobRecord,
  type Logger,
  type Sealer,
  type WorkerHeartbeat,
} from '@svc/proto';
import type { ActorContext, ParseOutputs } from './actor-context.js';
import type { DeviceActorConfig } from './config.js';
import { DeviceActor } from './device-actor.js';
import { DeviceAdmission } from './device-admission.js';
import { DeviceLocks } from './device-claim.js';
import type { RunDeviceJob } from './device-job.js';
import { Semaphore } from './mailbox.js';

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
  audit?: AuditLog;
  /** Where its metrics go (the process's registry); a private one when absent. */
  metrics?: MetricsRegistry;
}

export interface RunningActorHost {
  hostId: string;
  /** Jobs running now. */
  busy(): number;
  stop(): Promise<void>;
}

/**
 * An actor host: takes the jobs placed on it (its `svc.actor.<hostId>` subject), hands each to
 * the `DeviceActor` of its device, beats its heartbeat, forwards cancels, and on stop hands the
 * jobs that have not started back for placement elsewhere. The device work, its guards and the
 * job's state changes live in `DeviceActor`.
 */
export async function startActorHost(
  config: DeviceActorConfig,
  deps: ActorHostDeps,
): Promise<RunningActorHost> {
  const { nc, log } = deps;
  const hostId = config.ACTOR_HOST_ID || `${hostname()}-${process.pid}-${randomUUID().slice(0, 6)}`;
  const stores = await ensureTopology(nc, topologyFrom(config));
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const results = await JobResults.open(nc, config.SVC_MAX_RESULT_BYTES);
  const jobs = new JobStore(stores[Buckets.jobs], nc, undefined, undefined, results);
  const registry = deps.metrics ?? new MetricsRegistry();
  const lifecycle = new JobLifecycle(
    jobs,
    stores[Buckets.failed],
    stores[Buckets.dedup],
    jobFailureCounter(registry),
  );
  const admission = await DeviceAdmission.start(config, stores, log);
  const transcriptEverywhere = config.TRANSCRIPT_CONTEXTS.includes('*');
  const transcriptContexts = new Set(config.TRANSCRIPT_CONTEXTS);
  const sessions = new Semaphore(config.ACTOR_MAX_SESSIONS);
  const actors = new Map<string, DeviceActor>();
  const running = new Map<string, AbortController>();
  const startedAt = new Date().toISOString();
  let draining = false;
  let messages: ConsumerMessages | null = null;

  const ctx: ActorContext = {
    config,
    hostId,
    log,
    audit: deps.audit ?? new AuditLog('device-actor'),
    sealer: deps.sealer,
    jobs,
    lifecycle,
    admission,
    runner: deps.runner,
    parseOutputs: deps.parseOutputs,
    sessions,
    deviceLocks: new DeviceLocks(config.DEVICE_MAX_SESSIONS),
    running,
    transcripts: stores[Buckets.transcripts],
    transcriptWanted: (context) => transcriptEverywhere || transcriptContexts.has(context),
    results,
    jobsEnded: new Counter({
      name: 'svc_actor_jobs_total',
      help: 'Jobs this actor host ran to a terminal status, by status.',
      labelNames: ['status'] as const,
      registers: [registry],
    }),
    draining: () => draining,
    handBack: (envelope, placement) => publishHandBack(js, envelope, placement),
    onJobEnded: deps.onJobEnded,
  };

  // Per host (the gateway's svc_workers_* and svc_connection_pool_* are the cluster's sums).
  const hostGauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  hostGauge(
    'svc_actor_sessions_busy',
    'Device sessions of this actor host running a job now.',
    () => sessions.inUse,
  );
  hostGauge(
    'svc_actor_session_slots',
    'Device session slots of this actor host (ACTOR_MAX_SESSIONS).',
    () => config.ACTOR_MAX_SESSIONS,
  );
  hostGauge(
    'svc_actor_sessions_warm',
    'Warm SSH sessions this actor host keeps for reuse.',
    () => deps.poolStats?.().size ?? 0,
  );
  hostGauge('svc_actor_devices', 'Devices with a mailbox on this actor host.', () => actors.size);

  const beat = async () => {
    const pool = deps.poolStats?.() ?? { size: 0, hits: 0, misses: 0 };
    const hb: WorkerHeartbeat = {
      host_id: hostId,
      contexts: [...config.WORKER_CONTEXTS],
      capacity: config.ACTOR_MAX_SESSIONS,
      busy: sessions.inUse,
      active_jobs: running.size,
      started_at: startedAt,
      last_beat: new Date().toISOString(),
      pool_size: pool.size,
      pool_hits: pool.hits,
      pool_misses: pool.misses,
      draining,
      capabilities: [...ACTOR_CAPABILITIES],
    };
    await stores[Buckets.workers].put(hostId, encodeJson(hb));
  };

  const consumerConfig = {
    durable_name: Consumers.actor(hostId),
    filter_subject: Subjects.actor(hostId),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    // Jobs wait in device mailboxes until their turn; they are acked when they end.
    ack_wait: nanos(6 * 3600_000),
    max_ack_pending: 20_000,
  };
  await jsm.consumers.add(Streams.actor, consumerConfig);
  await beat();
  const heartbeat = setInterval(() => {
    beat().catch((err: unknown) => log.warn({ err }, 'heartbeat failed'));
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

  const deliver = (msg: JsMsg) => {
    const envelope = decodeOrDrop(JobEnvelope, msg.data, {
      consumer: 'actor_host',
      log,
      where: { subject: msg.subject, seq: msg.seq },
    });
    if (!envelope) {
      msg.term();
      return;
    }
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
    actor.push({ envelope, msg });
  };
  let stalled = false;
  const intake = (async () => {
    while (!draining) {
      try {
        if (stalled) {
          // A consumer left without a leader (cluster node lost) is replaced; the jobs stay in
          // the stream, and one delivered twice cannot start twice.
          await jsm.consumers.delete(Streams.actor, Consumers.actor(hostId)).catch(() => false);
          stalled = false;
        }
        // Re-declared each time: a reaper that took this host for dead deleted it.
        await jsm.consumers.add(Streams.actor, consumerConfig);
        const consumer = await js.consumers.get(Streams.actor, Consumers.actor(hostId));
        messages = await consumer.consume(workConsumeOptions(512));
        closeWhenStalled(messages, log, 'placement', () => {
          stalled = true;
        });
        for await (const msg of messages) deliver(msg);
      } catch (err) {
        // A cluster node going away can end the consumer: consume again, never stop serving.
        if (!draining) log.warn({ err }, 'placement consumer failed; consuming again');
      }
      if (!draining) await sleep(500);
    }
  })();
  log.info({ host_id: hostId, contexts: config.WORKER_CONTEXTS }, 'actor host started');

  return {
    hostId,
    busy: () => running.size,
    async stop() {
      draining = true;
      await beat().catch(() => undefined);
      await messages?.close().catch(() => undefined);
      await intake.catch(() => undefined);
      cancels.unsubscribe();
      // Jobs waiting in mailboxes never started: they go back for placement elsewhere.
      const waiting = [...actors.values()].flatMap((a) => a.takeWaiting());
      const deadline = Date.now() + config.SHUTDOWN_GRACE * 1000;
      while (running.size > 0 && Date.now() < deadline) await sleep(50);
      for (const c of running.values()) {
        c.abort(new SvcError(ErrorCode.WORKER_LOST, 'actor host shut down while the job ran'));
      }
      while (running.size > 0) await sleep(20);
      clearInterval(heartbeat);
      admission.stop();
      const drained = await drainHost(nc, lifecycle, hostId, {
        failStarted: true,
        reason: 'actor host shut down while the job ran',
        log,
      }).catch((err: unknown) => {
        log.error({ err }, 'hand-back failed; the reaper will re-place these jobs');
        return null;
      });
      if (drained) {
        log.info(
          { handed_back: drained.handedBack.length, waiting: waiting.length },
          'jobs handed back',
        );
        await stores[Buckets.workers].delete(hostId).catch(() => undefined);
      }
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
