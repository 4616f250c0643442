import type { JsMsg } from '@nats-io/jetstream';
import {
  ACTOR_CAPABILITIES,
  missingCapabilities,
  ErrorCode,
  SvcError,
  MalformedMessage,
  encodeJson,
  isTerminal,
  type CommandStatus,
  type DeviceSecrets,
  type JobEnvelope,
  type JobRecord,
} from '@svc/proto';
import { AuditEvent, SpanKind, extractTraceContext, withSpan, type Logger } from '@svc/telemetry';
import { resolveHost } from '@svc/device-access';
import { Jobs, type StoredRecord } from '@svc/jobs';
import type { ActorContext, ParseOutputs } from './actor-context.js';
import {
  DeviceJobFailure,
  shownWholeOf,
  transportSecretsOf,
  type DeviceJob,
  type DeviceOutcome,
} from '../device/device-job.js';
import type { Admitted } from './device-admission.js';
import { DeviceClaim } from './device-claim.js';
import { Mailbox } from './mailbox.js';
import { refusedStart } from './refused-start.js';
import { redactSecrets } from '../device/redaction.js';
import type { ParsedOutputs } from './structured-output.js';
import { TranscriptRecorder } from '../device/transcript.js';

/** Starts of one copy refused by a record that allows it, before the message is tried later. */
const START_ATTEMPTS = 3;

/** One started job on its device: what its end needs, whichever way it ends. */
interface JobRun {
  started: StoredRecord;
  /** What the device layer runs. */
  job: DeviceJob;
  secrets: DeviceSecrets;
  /** Aborted by JOB_TIMEOUT or a cancel; its reason is the failure's code. */
  signal: AbortSignal;
  jlog: Logger;
  t0: number;
  /** How far the session got, reset when it runs again: what a failure is charged by. */
  progress: { reached: boolean; jumpsPassed: number };
  /** Stores the transcript when it is kept (asked for, or the job failed). */
  keepTranscript(failed: boolean, platform?: string): Promise<void>;
}

/** A job taken from a shard this host owns, and the message to settle once it has ended. */
export interface Delivery {
  envelope: JobEnvelope;
  msg: JsMsg;
  /**
   * The shard it came from (docs/architecture.md, job path). `owned` says whether the shard is
   * still this host's at the epoch it came with: a job not started when the shard is given up
   * stays in the stream for the next owner. `fence`: an earlier owner may hold it.
   */
  shard: { epoch: number; fence: boolean; owned: () => boolean };
}

/**
 * One device (context + canonical address + port): its mailbox runs the device's jobs one at a
 * time (DEVICE_MAX_SESSIONS) and in order. A job starts only through a compare-and-set from
 * `queued` to `started` on its record, so a redelivered or taken-over job that already started is
 * never run a second time; its end is one more compare-and-set, then its event, audit line and
 * webhook.
 */
export class DeviceActor {
  readonly #mailbox: Mailbox<Delivery>;

  constructor(
    private readonly ctx: ActorContext,
    onIdle: () => void,
  ) {
    this.#mailbox = new Mailbox<Delivery>(
      ctx.config.DEVICE_MAX_SESSIONS,
      (d) => this.#settle(d),
      onIdle,
    );
  }

  push(delivery: Delivery): void {
    this.#mailbox.push(delivery);
    // A job an earlier owner of its shard may hold is fenced at once, not only in its turn:
    // while this owner waits for a job that owner started, the owner, if it has not learned that
    // the shard moved, would start the device's later jobs once that one ends (docs/shards.md).
    if (delivery.shard.fence) void this.#fenceEarly(delivery);
  }

  /** Moves a taken-over job's queued record to this owner's epoch; its turn does it otherwise. */
  async #fenceEarly({ envelope, shard }: Delivery): Promise<void> {
    const { ctx } = this;
    const epoch = shard.epoch;
    try {
      const stored = await ctx.jobs.get(envelope.job_id);
      const placement = stored?.record.placement ?? 0;
      if (!stored || stored.record.status !== 'queued' || placement >= epoch) return;
      if (!shard.owned()) return;
      await ctx.jobs.fence(envelope.job_id, epoch, stored);
    } catch (err) {
      ctx.log.debug({ err, job_id: envelope.job_id }, 'taken-over job not fenced early');
    }
  }

  /** The jobs that have not started, dropped unacknowledged: they stay in their shard. */
  takeWaiting(): Delivery[] {
    return this.#mailbox.takeWaiting();
  }

  /** Whether none of the device's jobs is under way here (its shard may go to another host). */
  idle(): boolean {
    return this.#mailbox.running === 0;
  }

  /** Resolves once none of the device's jobs is under way here (at once when none is). */
  whenIdle(): Promise<void> {
    return this.#mailbox.whenIdle();
  }

  /** Runs one delivery in a host session slot and acks it once the job's end is stored. */
  async #settle(taken: Delivery): Promise<void> {
    const { ctx } = this;
    let delivery = taken;
    const given = () => ctx.draining() || !delivery.shard.owned();
    if (given()) return; // left in its shard for the next owner
    if (delivery.shard.fence) {
      const fenced = await this.#takeOver(delivery);
      if (fenced === 'ended') delivery.msg.ack();
      if (fenced === 'ended' || fenced === 'not-ours') return;
      delivery = fenced;
    }
    const { envelope, msg } = delivery;
    // One session per device whatever address reaches it: a device known by its pinned host
    // key waits here, still queued (no JOB_TIMEOUT, no host slot), while another address of it
    // holds its session. A first contact claims the key at the handshake instead.
    const claim = new DeviceClaim(ctx.deviceLocks, ctx.deviceHolds);
    const pinned =
      envelope.address !== undefined
        ? await ctx.admission.pinnedDeviceOf(envelope.spec, envelope.address)
        : null;
    if (pinned !== null && !(await this.#takeWhileMine(claim, pinned, given))) return;
    if (given()) {
      claim.release();
      return; // left in its shard for the next owner
    }
    await ctx.sessions.acquire();
    // A slot can take long to come (the host's sessions all busy): the host may have begun to
    // stop, or given the shard up, meanwhile. The job is then not started here.
    if (given()) {
      claim.release();
      ctx.sessions.release();
      return;
    }
    try {
      // The job's span continues the gateway's trace (the envelope's headers).
      const parent = extractTraceContext(msg.headers);
      const attributes = { 'svc.job_id': envelope.job_id, 'svc.platform': envelope.spec.platform };
      await withSpan('job run', { parent, attributes, kind: SpanKind.CONSUMER }, () =>
        this.#run(delivery, claim),
      );
      ctx.unsettled.delete(envelope.job_id);
      msg.ack();
    } catch (err) {
      if (err instanceof MalformedMessage) {
        // The job's record is not one: no retry makes it one (logged, never run).
        ctx.log.error({ err, job_id: envelope.job_id }, 'job record malformed; job dropped');
        msg.term();
        return;
      }
      // The store stayed unreachable past every retry: try the message again later. It stays
      // in its shard meanwhile, so it is never lost.
      ctx.log.error({ err, job_id: envelope.job_id }, 'job bookkeeping failed; will retry');
      ctx.unsettled.add(envelope.job_id);
      msg.nak(5000);
    } finally {
      claim.release();
      ctx.sessions.release();
    }
  }

  /**
   * Takes the device's claim for a job that has not started; false (nothing held) when the job
   * stops being this host's meanwhile (a stop, its shard given up): another host may hold the
   * device for long, and the shard's release waits for this job.
   */
  async #takeWhileMine(claim: DeviceClaim, device: string, given: () => boolean): Promise<boolean> {
    const gone = new AbortController();
    const check = setInterval(() => {
      if (given()) gone.abort();
    }, 200);
    try {
      await claim.take(device, gone.signal);
      return true;
    } catch (err) {
      if (gone.signal.aborted) return false;
      throw err;
    } finally {
      clearInterval(check);
    }
  }

  async #run(delivery: Delivery, claim: DeviceClaim): Promise<void> {
    const { envelope } = delivery;
    const { ctx } = this;
    const jobId = envelope.job_id;
    const jlog = ctx.log.child({ job_id: jobId });
    const t0 = performance.now();
    const startedStored = await this.#start(envelope, jlog);
    if (!startedStored) return;
    const started = startedStored.record;
    ctx.audit.emit(AuditEvent.jobStarted, auditFields(started, 'started', 0));
    jlog.info({ host: started.spec.host, platform: started.spec.platform }, `${jobId} started`);

    const secrets = ctx.sealer.open<DeviceSecrets>(envelope.sealed);
    // A job this host would misread (a dry run taken for a push) never reaches the device.
    const missing = missingCapabilities(envelope.requires, ACTOR_CAPABILITIES);
    const ended =
      missing.length > 0
        ? await ctx.jobs.fail(
            jobId,
            'started',
            new SvcError(
              ErrorCode.ACTOR_OUTDATED,
              `actor host ${ctx.hostId} cannot run this job: it lacks ${missing.join(', ')}; nothing was sent to the device (upgrade actor hosts before dispatchers and gateways)`,
            ),
          )
        : await this.#execute(startedStored, delivery, secrets, jlog, t0, claim);
    if (!ended) return;
    ctx.jobsEnded.inc({ status: ended.status });
    ctx.audit.emit(
      AuditEvent.jobCompleted,
      auditFields(ended, ended.status, performance.now() - t0),
    );
    jlog.info(
      {
        status: ended.status,
        error_code: ended.error_code,
        duration_ms: Math.round(performance.now() - t0),
      },
      `${jobId} ${ended.status}`,
    );
    ctx.onJobEnded?.(ended, secrets);
  }

  /**
   * A job an earlier owner of its shard may hold (docs/shards.md): its record moved to this
   * owner's epoch while `queued`, so that owner's start is refused, and the delivery to start
   * on it; `ended` when there is nothing to run; `not-ours` when a later owner fenced it. A job
   * the earlier owner started is waited for until it ends (the reaper fails it WORKER_LOST when
   * it reaps that host), or failed here once that host's heartbeat is gone: it never runs again.
   */
  async #takeOver(delivery: Delivery): Promise<Delivery | 'ended' | 'not-ours'> {
    const { ctx } = this;
    const { envelope } = delivery;
    const epoch = delivery.shard.epoch;
    const jobId = envelope.job_id;
    for (let pause = 50, told = false; ; pause = Math.min(2 * pause, 1000)) {
      if (ctx.draining() || !delivery.shard.owned()) return 'not-ours';
      const stored = await ctx.jobs.get(jobId).catch(() => undefined);
      const record = stored?.record;
      if (stored === null || stored?.archived || (record && isTerminal(record.status))) {
        return 'ended';
      }
      if (stored && record?.status === 'queued') {
        const placement = record.placement ?? 0;
        if (placement > epoch) return 'not-ours';
        if (placement === epoch) {
          // Started on the record as read (the one the gateway wrote is not the fenced one).
          const fenced: JobEnvelope = { ...envelope, placement: epoch };
          delete fenced.record_revision;
          return { ...delivery, envelope: fenced };
        }
        // By compare-and-set on the record read, from any earlier epoch (a shard taken over
        // before: the copy as stored may no longer move it): a start in between wins.
        const now = await ctx.jobs.fence(jobId, epoch, stored);
        // Fenced, or started or ended meanwhile: read again at once. Still queued below this
        // epoch (the record written meanwhile): again after a pause.
        if (now?.status !== 'queued' || (now.placement ?? 0) >= epoch) continue;
      }
      if (stored && record?.status === 'started') {
        const host = record.actor_host;
        if (host === ctx.hostId) return 'not-ours';
        // The reaper fails it (WORKER_LOST) when it reaps that host; a host reaped already, its
        // heartbeat gone, is failed here (the reaper may not have known of it).
        if (host && (await ctx.hostGone(host))) {
          await ctx.jobs.failLost(jobId, host, Jobs.lostHostReason(host));
          continue;
        }
        if (!told) {
          ctx.log.info(
            { job_id: jobId, host },
            'taken over while its earlier owner runs it; waits',
          );
          told = true;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /** `queued → started`, or null when the job must not run here (cancelled, started elsewhere). */
  async #start(envelope: JobEnvelope, jlog: Logger): Promise<StoredRecord | null> {
    const { ctx } = this;
    const jobId = envelope.job_id;
    for (let attempt = 1; ; attempt++) {
      // From the record as the gateway created it (no read unless a cancel came between); a
      // copy a later owner of its shard fenced never starts.
      const started = await ctx.jobs.start(envelope, ctx.hostId);
      if (started) return started;
      const current = await ctx.jobs.get(jobId);
      const why = refusedStart(
        current?.record ?? null,
        envelope,
        ctx.hostId,
        ctx.running.has(jobId),
      );
      switch (why.kind) {
        case 'retry':
          jlog.warn({ attempt }, 'start refused while the record lets this copy start; again');
          // Past a few tries the message is tried again later (`#settle` naks it): never dropped.
          if (attempt >= START_ATTEMPTS)
            throw new Error('start refused by a record that allows it');
          continue;
        case 'ended':
          jlog.debug('job ended already (cancelled, or its record expired); skipped');
          return null;
        case 'outcome-lost':
          // Started here, but its outcome never reached the store: it must not run again.
          await ctx.jobs.failOutcomeLost(jobId, ctx.hostId);
          return null;
        case 'started':
          jlog.debug('job started elsewhere; skipped');
          return null;
        case 'fenced':
          jlog.info(
            { placement: envelope.placement, record_placement: why.later },
            "job taken over by its shard's later owner; skipped",
          );
          return null;
      }
    }
  }

  /**
   * The device part of a started job: guards, session, parsing, then its end written by
   * compare-and-set. Returns the ended record, or null when someone else ended it (a cancel).
   */
  async #execute(
    startedStored: StoredRecord,
    { envelope, msg }: Delivery,
    secrets: DeviceSecrets,
    jlog: Logger,
    t0: number,
    claim: DeviceClaim,
  ): Promise<JobRecord | null> {
    const { ctx } = this;
    const { config } = ctx;
    const spec = startedStored.record.spec;
    const jobId = startedStored.record.job_id;
    const controller = new AbortController();
    ctx.running.set(jobId, controller);
    const timer = setTimeout(
      () =>
        controller.abort(
          new SvcError(ErrorCode.JOB_TIMEOUT, `job exceeded JOB_TIMEOUT (${config.JOB_TIMEOUT} s)`),
        ),
      config.JOB_TIMEOUT * 1000,
    );
    // Resolved once for the job (at submission when it could be): the guards and the session
    // all use this one address.
    const address = envelope.address ?? (await resolveHost(spec.host));
    const run = this.#runOf(startedStored, address, secrets, controller.signal, jlog, t0);
    // The job's claim on its device's key (taken before it started when the address is pinned).
    run.job.claim = claim;
    if (address !== null) run.job.verifyHostKey = this.#hostKeyCheck(spec, address, claim, jlog);
    // The guards key the device by its pinned host key, else by the address the job resolved.
    // Null while (or when) they have not admitted it: a failure then has nothing to charge.
    let admitted: Admitted | null = null;
    try {
      admitted = await ctx.admission.admit(run.job, run.started.record, secrets, address, jlog);
      const outcome = await withSpan(
        'device session',
        {
          attributes: {
            'server.address': spec.host,
            'server.port': spec.port,
            'svc.commands': spec.commands.length,
          },
        },
        () =>
          this.#runOnDevice(run.job, claim, () => {
            run.progress = { reached: false, jumpsPassed: 0 };
          }),
      );
      // The session is closed or warm in the pool by now: other addresses may have the device.
      claim.release();
      return await this.#endFinished(run, admitted, outcome, msg);
    } catch (err) {
      return await this.#endFailed(run, admitted, err);
    } finally {
      claim.release(); // idempotent: released early after a session, or here after a failure
      clearTimeout(timer);
      ctx.running.delete(jobId);
    }
  }

  /** A started job about to meet its device: the device layer's job and what its end needs. */
  #runOf(
    started: StoredRecord,
    address: string | null,
    secrets: DeviceSecrets,
    signal: AbortSignal,
    jlog: Logger,
    t0: number,
  ): JobRun {
    const { ctx } = this;
    const { job_id: jobId, spec } = started.record;
    // Every session is recorded (bounded): a failed job keeps its transcript even unasked.
    const recorder = new TranscriptRecorder(ctx.config.TRANSCRIPT_MAX_BYTES, [
      secrets.password,
      secrets.enable,
      secrets.webhook_secret,
    ]);
    const wantsTranscript = spec.transcript === true || ctx.transcriptWanted(spec.context);
    const run: JobRun = {
      started,
      secrets,
      signal,
      jlog,
      t0,
      progress: { reached: false, jumpsPassed: 0 },
      job: deviceJobOf(jobId, spec, address, secrets, signal, recorder, {
        onReached: () => {
          run.progress.reached = true;
        },
        onJumpPassed: (index) => {
          run.progress.jumpsPassed = index + 1;
        },
      }),
      // Stored before the job's end is written, so a reader told "failed" finds it. Redacted by
      // the syntax of `platform` (the detected one once known; autodetect: every family's).
      keepTranscript: async (failed, platform = spec.platform) => {
        if (recorder.isEmpty || !(failed || wantsTranscript)) return;
        await ctx.transcripts
          .put(
            jobId,
            encodeJson(recorder.toTranscript(jobId, transportSecretsOf(run.job), platform)),
          )
          .catch((err: unknown) => jlog.warn({ err }, `${jobId} transcript not stored`));
      },
    };
    return run;
  }

  /** The device answered: its outputs (parsed for a structured job) kept, `finished` written. */
  async #endFinished(
    run: JobRun,
    admitted: Admitted,
    outcome: DeviceOutcome,
    msg: JsMsg,
  ): Promise<JobRecord | null> {
    const { ctx } = this;
    const started = run.started.record;
    await ctx.admission.succeeded(admitted, run.jlog);
    const platform = outcome.detectedPlatform ?? started.spec.platform;
    let parsed: ParsedOutputs | null = null;
    if (started.spec.kind === 'structured' && ctx.parseOutputs) {
      try {
        parsed = await withSpan('parse output', {}, () =>
          ctx.parseOutputs!(started, outcome.results, platform),
        );
      } catch (err) {
        // The device answered: what it said is kept, unparsed, beside the template's failure.
        const failure = SvcError.from(err);
        throw new DeviceJobFailure(
          failure.code,
          failure.message,
          outcome.results,
          outcome.commandStatus,
          outcome.detectedPlatform,
        );
      }
    }
    // Inline, or in the object store with a pointer (a record is one NATS message).
    const stored = await ctx.jobs.keepResults(
      started.job_id,
      parsed ? parsed.results : outcome.results,
    );
    await run.keepTranscript(false, platform);
    // Written on the revision this actor started it with: no read unless a cancel came between.
    // The message is acknowledged once the end is stored, in the event's socket write.
    const said = {
      ...stored,
      command_status: withParseNotes(outcome.commandStatus, parsed),
      detected_platform: outcome.detectedPlatform,
    };
    const finished = await ctx.jobs.finish(
      run.started,
      { ...said, ...outcome.workflow },
      { withEvent: () => msg.ack() },
    );
    if (finished === null) await this.#keepOutputsOfEnded(run, said);
    return finished;
  }

  /**
   * The job ended elsewhere while its device ran it (cancelled, or failed WORKER_LOST by a reaper
   * that took this host for dead): what the device said is added beside that end.
   */
  async #keepOutputsOfEnded(run: JobRun, kept: Partial<JobRecord>): Promise<void> {
    const jobId = run.started.record.job_id;
    await this.ctx.jobs
      .keepOutputsOfEnded(jobId, kept)
      .catch((err: unknown) => run.jlog.warn({ err }, `${jobId} outputs of an ended job not kept`));
  }

  /**
   * The job failed (refused by its guards, on its device, by its timeout, or cancelled): the
   * failure charged to the device's guards, the outputs it gave kept, `failed` written (a
   * cancel's `cancelled` was written by the gateway).
   */
  async #endFailed(
    run: JobRun,
    admitted: Admitted | null,
    err: unknown,
  ): Promise<JobRecord | null> {
    const { ctx } = this;
    const started = run.started.record;
    const jobId = started.job_id;
    // A failure that kept outputs already carries the abort's code.
    const failure = SvcError.from(
      run.signal.aborted && !(err instanceof DeviceJobFailure) ? (run.signal.reason ?? err) : err,
    );
    const safe = new SvcError(
      failure.code,
      redactSecrets(failure.message, run.secrets, shownWholeOf(run.job)),
    );
    // A job refused by the guards themselves connected to nothing: nothing to charge.
    if (admitted !== null) await ctx.admission.failed(safe.code, run.progress, admitted, run.jlog);
    if (safe.code === ErrorCode.CANCELLED) {
      await run.keepTranscript(false);
      // The gateway already wrote `cancelled`; the outputs the device gave before are added.
      if (failure instanceof DeviceJobFailure && failure.commandStatus !== null) {
        const kept = await keptResults(failure, started, ctx.parseOutputs, ctx.jobs);
        await this.#keepOutputsOfEnded(run, kept);
      }
      return null;
    }
    await run.keepTranscript(true);
    const kept =
      failure instanceof DeviceJobFailure
        ? await keptResults(failure, started, ctx.parseOutputs, ctx.jobs)
        : {};
    const ended = await ctx.jobs.fail(jobId, 'started', safe, kept);
    if (ended === null && kept.command_status) await this.#keepOutputsOfEnded(run, kept);
    if (ended && isDeviceFailure(safe.code)) {
      ctx.audit.emit(
        AuditEvent.deviceFailure,
        auditFields(ended, 'failed', performance.now() - run.t0),
      );
    }
    return ended;
  }

  /**
   * The host-key check of a job's connection: its context's trust, then, at first contact
   * (nothing was pinned for this address), the claim on the device the key names.
   */
  #hostKeyCheck(
    spec: JobRecord['spec'],
    address: string,
    claim: DeviceClaim,
    jlog: Logger,
  ): NonNullable<DeviceJob['verifyHostKey']> {
    const { ctx } = this;
    const verify = ctx.admission.verifierFor(spec, address, jlog);
    return async (key) => {
      const refusal = await verify?.(key);
      if (refusal) return refusal;
      // First contact (nothing was pinned for this address): the key is known only now. A
      // device busy at another address is left before any credential is sent.
      const device = ctx.admission.deviceOfAcceptedKey(spec, key);
      if (device === null || (await claim.tryTake(device))) return null;
      return new SvcError(
        ErrorCode.INTERNAL,
        `${spec.host}:${spec.port} is busy at another address`,
      );
    };
  }

  /**
   * Runs the job on its device; when the handshake met a device another address holds, waits
   * for it (the host slot given up meanwhile) and runs again, `onRetry` first.
   */
  async #runOnDevice(
    job: DeviceJob,
    claim: DeviceClaim,
    onRetry: () => void,
  ): Promise<DeviceOutcome> {
    const { ctx } = this;
    for (;;) {
      try {
        return await ctx.runner(job);
      } catch (err) {
        if (claim.busy === null) throw err;
        // Met at the handshake a device that another address holds: wait, then again.
        const busy = claim.busy;
        claim.busy = null;
        onRetry();
        // Its host slot is free meanwhile: a job holding the key may be waiting for one.
        ctx.sessions.release();
        try {
          await claim.take(busy, job.signal);
        } finally {
          await ctx.sessions.acquire();
        }
      }
    }
  }
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

/**
 * What a job that failed on its device keeps, whatever ended it: every output the device gave
 * (parsed for structured jobs, the rejected commands' texts as the device printed them), each
 * command's status and the detected platform, large outputs in the object store. Outputs a
 * template failed on are kept as the device gave them; outputs that cannot be kept (too large)
 * leave only the statuses.
 */
async function keptResults(
  failure: DeviceJobFailure,
  record: JobRecord,
  parseOutputs: ParseOutputs | undefined,
  store: Jobs,
): Promise<Partial<JobRecord>> {
  let status = failure.commandStatus;
  if (status === null) return { detected_platform: failure.detectedPlatform };
  let results: Record<string, unknown> | null = failure.results;
  if (record.spec.kind === 'structured' && parseOutputs) {
    const okStatus = status;
    const ok = Object.fromEntries(
      Object.entries(failure.results).filter(([cmd]) =>
        okStatus.some((s) => s.command === cmd && s.status === 'ok'),
      ),
    );
    // A template that failed on these outputs already is not run on them again.
    const parsed =
      failure.code === ErrorCode.TEMPLATE_ERROR
        ? null
        : await parseOutputs(record, ok, failure.detectedPlatform ?? record.spec.platform).catch(
            () => null,
          );
    if (parsed !== null) results = { ...failure.results, ...parsed.results };
    status = withParseNotes(status, parsed ?? { results: {}, notes: {} });
  }
  // Past SVC_MAX_RESULT_BYTES (or with the store unreachable) only the statuses are kept.
  const kept = await store.keepResults(record.job_id, results).catch(() => ({ results: null }));
  return { ...kept, command_status: status, detected_platform: failure.detectedPlatform };
}

/**
 * A structured job's command statuses with, per command, whether a template parsed its output
 * and which; a command with no parsed output (not run, failed, no template) says parsed false.
 * Other jobs' statuses are returned as they are.
 */
function withParseNotes(
  status: CommandStatus[] | null,
  parsed: ParsedOutputs | null,
): CommandStatus[] | null {
  if (status === null || parsed === null) return status;
  return status.map((s) => {
    const note = parsed.notes[s.command] ?? { parsed: false, template: null };
    return { ...s, parsed: note.parsed, template: note.template };
  });
}

/** What the device layer is asked to do for a started job (its spec, address and secrets). */
function deviceJobOf(
  jobId: string,
  spec: JobRecord['spec'],
  address: string | null,
  secrets: DeviceSecrets,
  signal: AbortSignal,
  recorder: TranscriptRecorder,
  progress: Pick<DeviceJob, 'onReached' | 'onJumpPassed'>,
): DeviceJob {
  return {
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
    ...(spec.error_patterns !== undefined ? { errorPatterns: spec.error_patterns } : {}),
    ...(spec.dry_run === true ? { dryRun: true } : {}),
    ...(spec.commit_options !== undefined ? { commitOptions: spec.commit_options } : {}),
    ...(spec.confirm_of !== undefined ? { confirmOf: spec.confirm_of } : {}),
    ...(spec.checks !== undefined ? { checks: spec.checks } : {}),
    textfsmTemplate: spec.textfsm_template,
    ttpTemplate: spec.ttp_template,
    signal,
    ...progress,
    recorder,
  };
}
