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
  AuditEvent,
  AuditLog,
  Buckets,
  CircuitBreaker,
  closeWhenStalled,
  workConsumeOptions,
  Consumers,
  ErrorCode,
  JobLifecycle,
  JobStore,
  KvMirror,
  MetricsRegistry,
  jobFailureCounter,
  LockoutLedger,
  retryTransient,
  Streams,
  Subjects,
  SvcError,
  decodeJson,
  deviceKeyOf,
  HostKeyStore,
  deviceNetworkPolicy,
  drainHost,
  hostKeyModes,
  sshProfiles,
  algorithmsFor,
  encodeJson,
  resolveHost,
  ensureTopology,
  topologyFrom,
  type BreakerVerdict,
  type DeviceSecrets,
  type JobEnvelope,
  type JobRecord,
  type Logger,
  type Sealer,
  type WorkerHeartbeat,
  SpanKind,
  extractTraceContext,
  withSpan,
} from '@svc/proto';
import type { DeviceActorConfig } from './config.js';
import {
  CommandsRejected,
  transportSecretsOf,
  type DeviceJob,
  type RunDeviceJob,
} from './device-job.js';
import { hostKeyVerifier } from './host-key-trust.js';
import type { SshAlgorithms, SshHop } from './ssh-session.js';
import { Mailbox, Semaphore } from './mailbox.js';
import { redactSecrets } from './redaction.js';
import { TranscriptRecorder } from './transcript.js';

/** Turns raw outputs of a structured job into parsed results (per command). */
export type ParseOutputs = (
  record: JobRecord,
  raw: Record<string, unknown>,
  platform: string,
) => Promise<Record<string, unknown>>;

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

interface Delivery {
  envelope: JobEnvelope;
  msg: JsMsg;
}

/**
 * An actor host: consumes the jobs placed on it, keeps one mailbox (actor) per device so that
 * a device's jobs run one at a time and in order, and runs each through the device layer.
 * A job starts only through a compare-and-set from `queued` to `started` on its record: a
 * redelivered or re-placed job that already started is never run a second time.
 */
export async function startActorHost(
  config: DeviceActorConfig,
  deps: ActorHostDeps,
): Promise<RunningActorHost> {
  const { nc, log, sealer, runner } = deps;
  const audit = deps.audit ?? new AuditLog('device-actor');
  const hostId = config.ACTOR_HOST_ID || `${hostname()}-${process.pid}-${randomUUID().slice(0, 6)}`;
  const stores = await ensureTopology(nc, topologyFrom(config));
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const jobs = new JobStore(stores[Buckets.jobs], js);
  const registry = deps.metrics ?? new MetricsRegistry();
  const lifecycle = new JobLifecycle(
    jobs,
    stores[Buckets.failed],
    stores[Buckets.dedup],
    jobFailureCounter(registry),
  );
  const breakerMirror = await KvMirror.start(stores[Buckets.breakers]);
  const lockoutMirror = await KvMirror.start(stores[Buckets.lockout]);
  const breaker = new CircuitBreaker(
    stores[Buckets.breakers],
    config.BREAKER_THRESHOLD,
    config.BREAKER_OPEN_SECONDS * 1000,
    breakerMirror,
  );
  const lockout = new LockoutLedger(
    stores[Buckets.lockout],
    config.LOCKOUT_THRESHOLD,
    config.LOCKOUT_WINDOW * 1000,
    lockoutMirror,
  );
  const reachable = deviceNetworkPolicy(config);
  const hostKeys = new HostKeyStore(stores[Buckets.hostKeys]);
  const transcripts = stores[Buckets.transcripts];
  const transcriptEverywhere = config.TRANSCRIPT_CONTEXTS.includes('*');
  const transcriptContexts = new Set(config.TRANSCRIPT_CONTEXTS);
  const hostKeyMode = hostKeyModes(config.HOST_KEY_POLICY);
  for (const context of config.WORKER_CONTEXTS) {
    if (hostKeyMode(context) === 'off')
      log.warn({ context }, 'host keys are not checked in this context (HOST_KEY_POLICY off)');
  }
  const sshProfile = sshProfiles(config.SSH_PROFILE);
  const sessions = new Semaphore(config.ACTOR_MAX_SESSIONS);
  // The server's message size limit, less room for the rest of the record.
  const maxResultBytes = (nc.info?.max_payload ?? 1_048_576) - 32 * 1024;
  const mailboxes = new Map<string, Mailbox<Delivery>>();
  const running = new Map<string, AbortController>();
  const startedAt = new Date().toISOString();
  let draining = false;
  let messages: ConsumerMessages | null = null;

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
  hostGauge(
    'svc_actor_devices',
    'Devices with a mailbox on this actor host.',
    () => mailboxes.size,
  );
  const jobsEnded = new Counter({
    name: 'svc_actor_jobs_total',
    help: 'Jobs this actor host ran to a terminal status, by status.',
    labelNames: ['status'] as const,
    registers: [registry],
  });

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
      const jobId = msg.subject.split('.').pop() ?? '';
      running
        .get(jobId)
        ?.abort(new SvcError(ErrorCode.CANCELLED, 'job cancelled by its submitter'));
    },
  });

  const deliver = (msg: JsMsg) => {
    let envelope: JobEnvelope;
    try {
      envelope = decodeJson<JobEnvelope>(msg.data);
    } catch {
      log.error({ seq: msg.seq }, 'dropping a message that is not a job envelope');
      msg.term();
      return;
    }
    const key = deviceKeyOf(
      envelope.spec.context,
      envelope.address ?? envelope.spec.host,
      envelope.spec.port,
    );
    let box = mailboxes.get(key);
    if (!box) {
      box = new Mailbox<Delivery>(
        config.DEVICE_MAX_SESSIONS,
        (d) => runDelivery(d),
        () => mailboxes.delete(key),
      );
      mailboxes.set(key, box);
    }
    box.push({ envelope, msg });
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

  async function runDelivery({ envelope, msg }: Delivery): Promise<void> {
    if (draining) return; // handed back on stop
    await sessions.acquire();
    try {
      // The job's span continues the gateway's trace (headers forwarded by the dispatcher).
      const parent = extractTraceContext(msg.headers);
      const attributes = { 'svc.job_id': envelope.job_id, 'svc.platform': envelope.spec.platform };
      await withSpan('job run', { parent, attributes, kind: SpanKind.CONSUMER }, () =>
        runJob(envelope),
      );
      msg.ack();
    } catch (err) {
      // The store stayed unreachable past every retry: try the message again later. It stays
      // on this host's subject meanwhile, so it is never lost.
      log.error({ err, job_id: envelope.job_id }, 'job bookkeeping failed; will retry');
      msg.nak(5000);
    } finally {
      sessions.release();
    }
  }

  async function runJob(envelope: JobEnvelope): Promise<void> {
    const jobId = envelope.job_id;
    const jlog = log.child({ job_id: jobId });
    const t0 = performance.now();
    // The timestamp marks this attempt: if a write of ours went through but its answer was lost
    // (a cluster electing a leader), the retry recognises its own record instead of refusing.
    const startedAt = new Date().toISOString();
    const started = await jobs.transition(jobId, (current) =>
      current.status === 'queued'
        ? { ...current, status: 'started', started_at: startedAt, actor_host: hostId }
        : ownWrite(current, 'started', startedAt, current.started_at),
    );
    if (!started) {
      const current = await jobs.get(jobId);
      if (
        current?.record.status === 'started' &&
        current.record.actor_host === hostId &&
        !running.has(jobId)
      ) {
        // Started here, but its outcome never reached the store: it must not run again.
        await lifecycle.fail(
          jobId,
          'started',
          new SvcError(ErrorCode.INTERNAL, 'the outcome of this job could not be stored'),
        );
      }
      jlog.debug('job not queued any more (cancelled or started elsewhere); skipped');
      return;
    }
    await jobs.publishEvent(started).catch(() => undefined);
    audit.emit(AuditEvent.jobStarted, auditFields(started, 'started', 0));
    jlog.info({ host: started.spec.host, platform: started.spec.platform }, `${jobId} started`);

    const secrets = sealer.open<DeviceSecrets>(envelope.sealed);
    const controller = new AbortController();
    running.set(jobId, controller);
    const timer = setTimeout(
      () =>
        controller.abort(
          new SvcError(ErrorCode.JOB_TIMEOUT, `job exceeded JOB_TIMEOUT (${config.JOB_TIMEOUT} s)`),
        ),
      config.JOB_TIMEOUT * 1000,
    );
    const spec = started.spec;
    // Resolved once for the job (at submission when it could be): the guards and the session
    // all use this one address.
    const address = envelope.address ?? (await resolveHost(spec.host));
    let reached = false;
    // Every session is recorded (bounded): a failed job keeps its transcript even unasked.
    const recorder = new TranscriptRecorder(config.TRANSCRIPT_MAX_BYTES, [
      secrets.password,
      secrets.enable,
      secrets.webhook_secret,
    ]);
    const wantsTranscript =
      spec.transcript === true || transcriptEverywhere || transcriptContexts.has(spec.context);
    /** Stored before the job's end is written, so a reader told "failed" finds it. */
    const keepTranscript = async (failed: boolean): Promise<void> => {
      if (recorder.isEmpty || !(failed || wantsTranscript)) return;
      await transcripts
        .put(jobId, encodeJson(recorder.toTranscript(jobId, transportSecretsOf(job))))
        .catch((err: unknown) => jlog.warn({ err }, `${jobId} transcript not stored`));
    };
    const job: DeviceJob = {
      jobId,
      kind: spec.kind,
      host: spec.host,
      address: address ?? spec.host,
      port: spec.port,
      platform: spec.platform,
      username: secrets.username,
      password: secrets.password,
      enable: secrets.enable,
      commands: spec.commands,
      connTimeoutMs: spec.conn_timeout * 1000,
      readTimeoutMs: spec.read_timeout * 1000,
      expectString: spec.expect_string,
      saveConfig: spec.save_config,
      commit: spec.commit,
      stopOnError: spec.stop_on_error ?? false,
      ...(spec.answers !== undefined ? { answers: spec.answers } : {}),
      textfsmTemplate: spec.textfsm_template,
      ttpTemplate: spec.ttp_template,
      signal: controller.signal,
      onReached: () => {
        reached = true;
      },
      recorder,
    };
    if (address !== null) {
      job.verifyHostKey = hostKeyVerifier(
        hostKeys,
        hostKeyMode(spec.context),
        { context: spec.context, host: spec.host, address, port: spec.port },
        jlog,
      );
    }
    let ended: JobRecord | null;
    const deviceKey = deviceKeyOf(spec.context, job.address, spec.port);
    try {
      if (address === null) {
        throw new SvcError(
          ErrorCode.HOST_UNREACHABLE,
          `host unreachable: the name ${spec.host} did not resolve`,
        );
      }
      // Checked on the address the session will connect to, before any guard or connection.
      const verdict = reachable.check(spec.context, spec.host, address);
      if (!verdict.allowed) throw new SvcError(ErrorCode.ADDRESS_NOT_ALLOWED, verdict.reason);
      // The SSH profile: the job's, else its context's; jump hosts resolved and checked alike.
      const algorithms = algorithmsFor(
        spec.ssh?.profile ?? sshProfile(spec.context),
        spec.ssh?.algorithms ?? null,
      );
      // Names were checked against SSH_ALGORITHM_NAMES at submission; one the library does not
      // know fails the login with SSH_NEGOTIATION_FAILED.
      if (Object.keys(algorithms).length > 0) job.algorithms = algorithms as SshAlgorithms;
      job.privateKey = secrets.private_key ?? null;
      job.passphrase = secrets.passphrase ?? null;
      if (spec.ssh !== undefined && spec.ssh.jump_hosts.length > 0) {
        job.jumpHosts = await jumpHostsOf(spec, secrets, jlog);
      }
      // Bearer callers are exempt from device-account lockout (SPEC, authentication rule 5).
      // The guards fail open: a store hiccup (a cluster electing a leader) must not fail a job.
      const lockedOut = started.owner.startsWith('key:')
        ? false
        : await lockout.isLockedOut(started.username, deviceKey).catch(() => false);
      if (lockedOut) {
        throw new SvcError(
          ErrorCode.DEVICE_LOCKED_OUT,
          `user ${started.username} is locked out of ${spec.host} after repeated failed logins`,
        );
      }
      const breakerVerdict = await breaker
        .admit(deviceKey, jobId)
        .catch((): BreakerVerdict => ({ allowed: true, probe: false, clean: true }));
      if (!breakerVerdict.allowed) {
        throw new SvcError(
          ErrorCode.CIRCUIT_OPEN,
          `circuit breaker open for ${spec.host}:${spec.port} until ${new Date(breakerVerdict.retryAtMs).toISOString()}`,
        );
      }
      const outcome = await withSpan(
        'device session',
        {
          attributes: {
            'server.address': spec.host,
            'server.port': spec.port,
            'svc.commands': spec.commands.length,
          },
        },
        () => runner(job),
      );
      if (!breakerVerdict.clean) await breaker.recordSuccess(deviceKey);
      const platform = outcome.detectedPlatform ?? spec.platform;
      const results =
        spec.kind === 'structured' && deps.parseOutputs
          ? await withSpan('parse output', {}, () =>
              deps.parseOutputs!(started, outcome.results, platform),
            )
          : outcome.results;
      // A record must fit in one NATS message; say so plainly rather than fail the write.
      const size = Buffer.byteLength(JSON.stringify(results));
      if (size > maxResultBytes) {
        throw new SvcError(
          ErrorCode.INTERNAL,
          `results of ${size} bytes exceed the ${maxResultBytes}-byte limit of a job record`,
        );
      }
      await keepTranscript(false);
      const endedAt = new Date().toISOString();
      ended = await jobs.transition(jobId, (current) =>
        current.status !== 'started'
          ? ownWrite(current, 'finished', endedAt, current.ended_at)
          : {
              ...current,
              status: 'finished',
              ended_at: endedAt,
              results,
              command_status: outcome.commandStatus,
              detected_platform: outcome.detectedPlatform,
            },
      );
      const finished = ended;
      if (finished) {
        await retryTransient(() => lifecycle.releaseDedup(finished)).catch(() => undefined);
      }
    } catch (err) {
      const failure = SvcError.from(
        controller.signal.aborted ? (controller.signal.reason ?? err) : err,
      );
      const safe = new SvcError(failure.code, redactSecrets(failure.message, secrets));
      // Only a device that could not be reached counts: a session the device ended after the
      // handshake (a `logout` job) says nothing about its health.
      if (!reached && isConnectionFailure(safe.code))
        await breaker.recordFailure(deviceKey).catch(() => false);
      if (safe.code === ErrorCode.AUTH_FAILED) {
        await lockout.recordFailure(started.username, deviceKey).catch(() => undefined);
      }
      if (safe.code === ErrorCode.CANCELLED) {
        await keepTranscript(false);
        ended = null; // the gateway already wrote `cancelled`
      } else {
        await keepTranscript(true);
        ended = await lifecycle.fail(
          jobId,
          'started',
          safe,
          failure instanceof CommandsRejected
            ? await keptResults(failure, started, deps.parseOutputs, maxResultBytes)
            : {},
        );
        if (ended && isDeviceFailure(safe.code)) {
          audit.emit(
            AuditEvent.deviceFailure,
            auditFields(ended, 'failed', performance.now() - t0),
          );
        }
      }
    } finally {
      clearTimeout(timer);
      running.delete(jobId);
    }
    if (!ended) return;
    jobsEnded.inc({ status: ended.status });
    await jobs.publishEvent(ended).catch(() => undefined);
    audit.emit(AuditEvent.jobCompleted, auditFields(ended, ended.status, performance.now() - t0));
    jlog.info(
      {
        status: ended.status,
        error_code: ended.error_code,
        duration_ms: Math.round(performance.now() - t0),
      },
      `${jobId} ${ended.status}`,
    );
    deps.onJobEnded?.(ended, secrets);
  }

  /**
   * The jump hosts of a job as session hops: each resolved once, held to the context's
   * reachability policy, checked against its own pinned host key, with its own credentials.
   */
  async function jumpHostsOf(
    spec: JobRecord['spec'],
    secrets: DeviceSecrets,
    jlog: Logger,
  ): Promise<SshHop[]> {
    const hops: SshHop[] = [];
    for (const [i, jump] of (spec.ssh?.jump_hosts ?? []).entries()) {
      const where = `jump host ${jump.host}:${jump.port}`;
      const jumpAddress = await resolveHost(jump.host);
      if (jumpAddress === null) {
        throw new SvcError(
          ErrorCode.HOST_UNREACHABLE,
          `host unreachable: the name of the ${where} did not resolve`,
        );
      }
      const verdict = reachable.check(spec.context, jump.host, jumpAddress);
      if (!verdict.allowed) {
        throw new SvcError(ErrorCode.ADDRESS_NOT_ALLOWED, `${where}: ${verdict.reason}`);
      }
      const own = secrets.jump_hosts?.[i];
      hops.push({
        host: jump.host,
        address: jumpAddress,
        port: jump.port,
        username: jump.username,
        password: own?.password ?? '',
        privateKey: own?.private_key ?? null,
        passphrase: own?.passphrase ?? null,
        verifyHostKey: hostKeyVerifier(
          hostKeys,
          hostKeyMode(spec.context),
          { context: spec.context, host: jump.host, address: jumpAddress, port: jump.port },
          jlog,
        ),
      });
    }
    return hops;
  }

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
      const waiting = [...mailboxes.values()].flatMap((b) => b.takeWaiting());
      const deadline = Date.now() + config.SHUTDOWN_GRACE * 1000;
      while (running.size > 0 && Date.now() < deadline) await sleep(50);
      for (const c of running.values()) {
        c.abort(new SvcError(ErrorCode.WORKER_LOST, 'actor host shut down while the job ran'));
      }
      while (running.size > 0) await sleep(20);
      clearInterval(heartbeat);
      breakerMirror.stop();
      lockoutMirror.stop();
      const drained = await drainHost(nc, lifecycle, hostId, {
        failStarted: true,
        reason: 'actor host shut down while the job ran',
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

/** The record as it is when it already holds this attempt's own write, else null (refuse). */
function ownWrite(
  current: JobRecord,
  status: JobRecord['status'],
  stamp: string,
  currentStamp: string | null,
): JobRecord | null {
  return current.status === status && currentStamp === stamp ? current : null;
}

/** Failures that say the device is unreachable: they count towards its breaker. */
function isConnectionFailure(code: string): boolean {
  return [
    'CONNECTION_TIMEOUT',
    'CONNECTION_REFUSED',
    'HOST_UNREACHABLE',
    'SESSION_DROPPED',
  ].includes(code);
}

function isDeviceFailure(code: string): boolean {
  return ['CONNECTION_TIMEOUT', 'CONNECTION_REFUSED', 'HOST_UNREACHABLE', 'AUTH_FAILED'].includes(
    code,
  );
}

function auditFields(record: JobRecord, status: string, durationMs: number) {
  return {
    request_id: record.job_id,
    job_id: record.job_id,
    username: record.username,
    device_ip: record.spec.host,
    platform: record.spec.platform,
    status,
    duration_ms: durationMs,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * What a failed show job keeps: every output the device gave (parsed for structured jobs, the
 * rejected commands' texts as the device printed them) and each command's status. Outputs that
 * cannot be kept (too large, a template failure) leave only the statuses.
 */
async function keptResults(
  failure: CommandsRejected,
  record: JobRecord,
  parseOutputs: ParseOutputs | undefined,
  maxResultBytes: number,
): Promise<Partial<JobRecord>> {
  const status = failure.commandStatus;
  let results: Record<string, unknown> | null = failure.results;
  if (record.spec.kind === 'structured' && parseOutputs) {
    const ok = Object.fromEntries(
      Object.entries(failure.results).filter(([cmd]) =>
        status.some((s) => s.command === cmd && s.status === 'ok'),
      ),
    );
    const parsed = await parseOutputs(
      record,
      ok,
      failure.detectedPlatform ?? record.spec.platform,
    ).catch(() => null);
    results = parsed === null ? null : { ...failure.results, ...parsed };
  }
  if (results !== null && Buffer.byteLength(JSON.stringify(results)) > maxResultBytes)
    results = null;
  return { results, command_status: status, detected_platform: failure.detectedPlatform };
}
