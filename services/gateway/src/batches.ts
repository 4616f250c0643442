import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KV } from '@nats-io/kv';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { BatchRequest } from '@svc/proto';
import {
  BatchKeys,
  ConfigBatchRequest,
  KeyedWindow,
  Streams,
  Subjects,
  SubjectParsers,
  MessageIds,
  check,
  decodeMessage,
  decodeOrDrop,
  HeldEnvelope,
  encodeJson,
  isTerminal,
  isWrongRevision,
  openWebhookUrl,
  toJobResult,
  type BatchCreated,
  type BatchJobRef,
  BatchRecord,
  type BatchSummary,
  type EnqueueResponse,
  type JobEnvelope,
  JobEvent,
  type JobRecord,
  type JobResult,
  type Rollout,
  type Sealer,
  type ValidationIssue,
} from '@svc/proto';
import { deviceKeyOf } from '@svc/device-access';
import { webhookSender, type WebhookAttempt, type WebhookSenderOptions } from '@svc/webhooks';
import { retryTransient, type KvMirror } from '@svc/nats';
import { type Logger } from '@svc/telemetry';
import type { Jobs } from '@svc/jobs';
import { hasRole, mayAccessJob, type Caller } from './caller.js';
import { HttpError } from './http-errors.js';
import { RefusedAt, type BatchBudget } from './batch-admission.js';
import { JobIntake, type PreparedJob } from './job-intake.js';

export interface BatchOptions {
  /** BATCH_MAX_DEVICES */
  maxDevices: number;
  /** BATCH_SWEEP_INTERVAL, milliseconds. */
  sweepIntervalMs: number;
  /** Seals the batch's webhook URL and secret in its record. */
  sealer: Sealer;
  /** WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_NETWORKS, WEBHOOK_TIMEOUT. */
  webhook: WebhookSenderOptions;
}

/** Fields of a device entry that override the shared field of the same name. */
const DEVICE_FIELDS = ['host', 'port', 'platform', 'username', 'password', 'enable', 'tags'];
const ROLLOUT_FIELDS = ['max_parallel', 'canary', 'stop_on_failure_ratio'] as const;
/** Fields of configuration workflows: config batches only. */
const CONFIG_FIELDS = ['template', 'dry_run', 'checks', 'error_patterns'] as const;
/** Job records read at once when a batch is counted. */
const READ_CHUNK = 64;
const CANCELLED_BY_SUBMITTER = 'cancelled by its submitter';
/** Devices checked at once before a batch is admitted. */
const PREPARE_CONCURRENCY = 32;
/**
 * Jobs of a batch admitted at once. Each admission waits on two NATS round trips; 32 keeps the
 * connection busy without flooding JetStream with one batch's publishes.
 */
const ADMIT_CONCURRENCY = 32;

/** What a drive and a summary read of a job: its status and how it ended. */
type JobProgress = Pick<JobRecord, 'job_id' | 'status' | 'ended_at' | 'error_code'>;

/** The jobs of one batch known to have ended (final: an ended job never changes again). */
interface EndedJobs {
  jobs: Map<string, JobProgress>;
  since: number;
}

/** A batch this gateway saw no record of for this long is forgotten (its admission failed). */
const ENDED_KEEP_MS = 120_000;
/**
 * How long a batch's end waits for its jobs' end events to be stored: their publishers retry
 * for 30 s, an election takes seconds.
 */
const BATCH_END_WAIT_MS = 35_000;
/** How often the stored end events are counted again meanwhile. */
const BATCH_END_RECHECK_MS = 250;

/**
 * Batches: one ordinary job per device under a batch id, admitted through the same intake as a
 * single job (ownership, guards, rate cost per device, dedup, lockout). The batch record and the
 * envelopes of waves not yet released live in `svc-batches`, so any gateway can drive a batch:
 * every gateway watches batch events and sweeps running batches, and every step is a
 * compare-and-set on the record or idempotent (a release is a publish deduplicated by job id).
 */
export class Batches {
  constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly kv: KV,
    private readonly mirror: KvMirror,
    private readonly jobs: Jobs,
    private readonly intake: JobIntake,
    private readonly log: Logger,
    private readonly options: BatchOptions,
  ) {
    this.sendWebhook = webhookSender(options.webhook);
  }

  private readonly sendWebhook: (
    target: string,
    body: string,
    secret: string | null,
  ) => Promise<WebhookAttempt>;

  private sub: Subscription | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private readonly pending = new Map<string, { timer: NodeJS.Timeout; full: boolean }>();
  /**
   * Per batch, its jobs known to have ended, from their events and from reads: a drive reads only
   * the others, and a drive set off by an event reads none (see `driveOnce`).
   */
  private readonly ended = new Map<string, EndedJobs>();
  private readonly running = new Set<string>();
  private stopped = false;

  /** Follows batch events and sweeps running batches until `stop`. */
  start(): void {
    this.sub = this.nc.subscribe(Subjects.batchEventsAll);
    const sub = this.sub;
    void (async () => {
      for await (const m of sub) {
        const parsed = SubjectParsers.batchEvent(m.subject);
        if (!parsed?.job) continue;
        const { batchId } = parsed;
        const status = parsed.status as JobEvent['status'];
        if (isTerminal(status)) {
          // An undecodable event is only not remembered (the next sweep reads that job's
          // record); it must not end this loop, which drives every batch of this gateway.
          const event = decodeOrDrop(JobEvent, m.data, {
            consumer: 'batch_driver',
            log: this.log,
            where: { subject: m.subject },
          });
          if (event) {
            this.noteEnded(batchId, {
              job_id: event.job_id,
              status,
              ended_at: event.ended_at ?? event.at,
              error_code: event.error_code ?? null,
            });
          }
        }
        if (status === 'started' || isTerminal(status)) this.schedule(batchId);
      }
    })();
    this.sweepTimer = setInterval(() => this.sweep(), this.options.sweepIntervalMs);
  }

  stop(): void {
    this.stopped = true;
    this.sub?.unsubscribe();
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const t of this.pending.values()) clearTimeout(t.timer);
    this.pending.clear();
    this.ended.clear();
  }

  async create(
    caller: Caller,
    /** The body, validated by its route's schema (BatchRequest). */
    req: BatchRequest,
    traceparent: string | undefined,
    source?: string,
  ): Promise<BatchCreated> {
    JobIntake.mustSubmit(caller);
    const issues: ValidationIssue[] = [];
    if (req.kind === 'config') {
      const strict = check<BatchRequest>(ConfigBatchRequest, req, 'body');
      if (!strict.ok) issues.push(...strict.issues);
    }
    if (req.devices.length > this.options.maxDevices) {
      issues.push({
        loc: ['body', 'devices'],
        msg: `at most ${this.options.maxDevices} devices per batch (BATCH_MAX_DEVICES)`,
        type: 'too_long',
      });
    }
    if (req.kind !== 'config' && req.commands === undefined) {
      issues.push({ loc: ['body', 'commands'], msg: 'field required', type: 'missing' });
    }
    for (const [i, device] of req.devices.entries()) {
      if (device.vars !== undefined && req.template === undefined) {
        issues.push({
          loc: ['body', 'devices', i, 'vars'],
          msg: 'vars need a template (config batches)',
          type: 'value_error',
        });
      }
    }
    for (const f of [...ROLLOUT_FIELDS, ...CONFIG_FIELDS]) {
      if (req[f] !== undefined && req.kind !== 'config') {
        issues.push({
          loc: ['body', f],
          msg: `${f} applies to config batches only`,
          type: 'value_error',
        });
      }
    }
    if (typeof req.commit === 'object' && req.kind !== 'config') {
      issues.push({
        loc: ['body', 'commit'],
        msg: 'commit options apply to config batches only',
        type: 'value_error',
      });
    }
    // The webhook belongs to the batch (one delivery at its end), not to each job.
    try {
      this.intake.checkWebhookUrl(req.webhook_url ?? null);
    } catch (err) {
      if (!(err instanceof HttpError) || !err.issues) throw err;
      issues.push(...err.issues);
    }
    if (issues.length > 0) throw HttpError.validation(issues);

    // Every device is checked before any is admitted: a bad device queues nothing.
    const {
      kind,
      devices,
      max_parallel,
      canary,
      stop_on_failure_ratio,
      webhook_url,
      webhook_secret,
      ...shared
    } = req;
    // Checked concurrently (a device name is resolved, a Basic caller's lockout read), then
    // judged in device order, so the answer is the one a check one by one would give.
    const outcomes: ({ ok: true; job: PreparedJob } | { ok: false; err: unknown })[] = [];
    const checking = new KeyedWindow(PREPARE_CONCURRENCY, () => undefined);
    /** Per device, its inventory name (none: undefined). */
    const names: (string | undefined)[] = [];
    for (const [i, device] of devices.entries()) {
      // The name is the caller's, not the job's: it is kept on the record and the batch only.
      const { vars, name, ...where } = device;
      names[i] = name;
      const jobBody: Record<string, unknown> = { ...shared, ...where };
      if (device.tags === undefined && shared.tags !== undefined) jobBody['tags'] = shared.tags;
      // The batch's vars, then the device's own (an inventory's host vars through the CLI).
      if (shared.template !== undefined) {
        jobBody['template'] = { ...shared.template, vars: { ...shared.template.vars, ...vars } };
      }
      await checking.add(String(i), async () => {
        outcomes[i] = await this.intake.prepare(kind, jobBody, caller).then(
          (job) => ({ ok: true as const, job }),
          (err: unknown) => ({ ok: false as const, err }),
        );
      });
    }
    await checking.drain();
    const prepared: PreparedJob[] = [];
    for (const [i, device] of devices.entries()) {
      const outcome = outcomes[i]!;
      if (outcome.ok) {
        prepared.push(outcome.job);
        continue;
      }
      const err = outcome.err;
      if (!(err instanceof HttpError)) throw err;
      if (!err.issues)
        throw new HttpError(err.status, `devices[${i}]: ${err.message}`, err.headers);
      for (const issue of err.issues) {
        const field = issue.loc[1];
        const variable = issue.loc[3];
        if (
          issue.type === 'undefined_variable' ||
          (issue.loc[2] === 'vars' &&
            typeof variable === 'string' &&
            device.vars !== undefined &&
            Object.hasOwn(device.vars, variable))
        ) {
          // A variable this device lacks, or a bad value it gave: named where the device gives it.
          issues.push({ ...issue, loc: ['body', 'devices', i, 'vars', ...issue.loc.slice(3)] });
          continue;
        }
        const perDevice =
          typeof field === 'string' &&
          DEVICE_FIELDS.includes(field) &&
          (field in device || field === 'host');
        const loc = perDevice ? ['body', 'devices', i, ...issue.loc.slice(1)] : issue.loc;
        if (
          !issues.some((x) => JSON.stringify(x.loc) === JSON.stringify(loc) && x.msg === issue.msg)
        ) {
          issues.push({ ...issue, loc });
        }
      }
    }
    if (issues.length > 0) throw HttpError.validation(issues);

    const rollout: Rollout | null =
      kind === 'config' &&
      (max_parallel !== undefined || (canary ?? 0) > 0 || stop_on_failure_ratio !== undefined)
        ? {
            max_parallel: max_parallel ?? null,
            canary: Math.min(canary ?? 0, devices.length),
            stop_on_failure_ratio: stop_on_failure_ratio ?? ((canary ?? 0) > 0 ? 0 : null),
          }
        : null;
    const total = prepared.length;
    const firstWave = rollout
      ? rollout.canary > 0
        ? rollout.canary
        : Math.min(rollout.max_parallel ?? total, total)
      : total;

    // Budgets and queue room for the whole batch first: a batch they refuse queues nothing.
    let budget: BatchBudget | null;
    try {
      budget = await this.intake.admitBatch(prepared);
    } catch (err) {
      throw err instanceof RefusedAt ? err.toHttp() : err;
    }
    const batchId = randomUUID();
    // Admitted concurrently (each job is a record create and an envelope publish, awaited), in
    // device order; the jobs of one device one after the other, so they queue in that order.
    const admitted: (EnqueueResponse | undefined)[] = new Array<EnqueueResponse | undefined>(total);
    let refused: { index: number; err: unknown } | null = null;
    const admitting = new KeyedWindow(ADMIT_CONCURRENCY, () => undefined);
    for (const [i, job] of prepared.entries()) {
      if (refused !== null) break;
      const hold =
        i < firstWave
          ? undefined
          : async (envelope: JobEnvelope) => {
              const held: HeldEnvelope = { envelope, traceparent: traceparent ?? null };
              await this.kv.put(BatchKeys.held(batchId, envelope.job_id), encodeJson(held));
            };
      const device = deviceKeyOf('', job.address ?? job.spec.host, job.spec.port);
      await admitting.add(device, async () => {
        try {
          const deviceName = names[i];
          admitted[i] = await this.intake.admit(job, randomUUID(), {
            batchId,
            ...(deviceName !== undefined ? { deviceName } : {}),
            ...(budget ? { budgetTaken: true } : {}),
            ...(source !== undefined ? { source } : {}),
            ...(traceparent !== undefined ? { traceparent } : {}),
            ...(hold ? { hold } : {}),
          });
        } catch (err) {
          if (refused === null || i < refused.index) refused = { index: i, err };
        }
      });
    }
    await admitting.drain();
    const refs: BatchJobRef[] = prepared.flatMap((job, i) => {
      const answer = admitted[i];
      const name = names[i];
      return answer
        ? [
            {
              job_id: answer.job_id,
              host: job.spec.host,
              port: job.spec.port,
              ...(name !== undefined ? { name } : {}),
            },
          ]
        : [];
    });
    if (refused !== null) {
      const { index, err } = refused as { index: number; err: unknown };
      // A device refused at admission (capacity, a store error): the batch is refused whole;
      // what was already admitted and has not started is cancelled, the budget given back.
      await this.cancelQueued(batchId, refs, `batch refused at ${index}: ${String(err)}`);
      await budget?.giveBack().catch(() => undefined);
      if (err instanceof HttpError && !err.issues) {
        throw new HttpError(err.status, `devices[${index}]: ${err.message}`, err.headers);
      }
      throw err;
    }
    // Entries answered by a job outside the batch (a dedup hit) took no job: no budget either.
    const hits = prepared.flatMap((_, i) => (admitted[i]?.deduplicated ? [i] : []));
    if (budget && hits.length > 0) await budget.giveBackFor(hits).catch(() => undefined);
    const record: BatchRecord = {
      batch_id: batchId,
      owner: caller.id,
      kind,
      context: prepared[0]!.spec.context,
      status: 'running',
      total,
      jobs: refs,
      created_at: new Date().toISOString(),
      ended_at: null,
      rollout,
      released: firstWave,
      stopped_reason: null,
      // Sealed: a URL may carry credentials (user info, a token in the query).
      webhook_url: webhook_url ? this.options.sealer.seal(webhook_url) : null,
      webhook_secret:
        webhook_url && webhook_secret ? this.options.sealer.seal(webhook_secret) : null,
    };
    await this.kv.create(batchId, encodeJson(record));
    this.schedule(batchId);
    return { batch_id: batchId, jobs: refs, total };
  }

  /** The caller's batch, or 404 / 403. */
  async read(caller: Caller, batchId: string): Promise<BatchRecord> {
    const stored = await this.get(batchId);
    if (!stored) throw new HttpError(404, `batch ${batchId} not found`);
    if (!mayAccessJob(caller, stored.record.owner, stored.record.context)) {
      throw new HttpError(403, 'this batch belongs to another caller');
    }
    return stored.record;
  }

  async summary(caller: Caller, batchId: string): Promise<BatchSummary> {
    const record = await this.read(caller, batchId);
    return summarize(record, await this.progress(batchId, record.jobs, true));
  }

  async page(
    caller: Caller,
    batchId: string,
    page: number,
    perPage: number,
  ): Promise<{
    batch_id: string;
    page: number;
    per_page: number;
    total: number;
    jobs: (JobResult & { host: string; port: number; name: string | null })[];
  }> {
    const record = await this.read(caller, batchId);
    const refs = record.jobs.slice((page - 1) * perPage, page * perPage);
    const records = await this.jobRecords(refs, true);
    return {
      batch_id: batchId,
      page,
      per_page: perPage,
      total: record.total,
      jobs: refs.map((ref) => {
        const r = records.get(ref.job_id);
        const where = { host: ref.host, port: ref.port, name: ref.name ?? null };
        return r
          ? { ...toJobResult(r), ...where }
          : { job_id: ref.job_id, status: 'queued', ...where };
      }),
    };
  }

  /** The caller's batches, newest first (records only; counts are per batch). */
  list(caller: Caller): Omit<BatchRecord, 'jobs' | 'rollout' | 'released' | 'owner' | 'context'>[] {
    const out: BatchRecord[] = [];
    for (const [key, entry] of this.mirror.entries()) {
      if (key.includes('.')) continue;
      const record = this.recordOf(key, entry.value);
      if (record?.owner === caller.id) out.push(record);
    }
    out.sort((a, b) => b.created_at.localeCompare(a.created_at));
    return out.map(({ batch_id, kind, status, total, created_at, ended_at, stopped_reason }) => ({
      batch_id,
      kind,
      status,
      total,
      created_at,
      ended_at,
      stopped_reason,
    }));
  }

  /** Cancels every job of the batch that has not started; started ones run to their end. */
  async cancel(caller: Caller, batchId: string): Promise<BatchSummary> {
    const record = await this.read(caller, batchId);
    if (!hasRole(caller, 'operator'))
      throw new HttpError(403, `role ${caller.role} may not cancel`);
    if (record.status !== 'running') throw new HttpError(409, `batch already ${record.status}`);
    await this.update(batchId, (r) =>
      r.stopped_reason === null ? { ...r, stopped_reason: CANCELLED_BY_SUBMITTER } : null,
    );
    await this.cancelQueued(batchId, record.jobs, CANCELLED_BY_SUBMITTER);
    await this.drive(batchId, true);
    return this.summary(caller, batchId);
  }

  /**
   * Drives a batch soon (events of one batch come in bursts: one drive per burst). `full`: the
   * drive reads every job not known to have ended (sweeps; events may be missed).
   */
  private schedule(batchId: string, delayMs = 100, full = false): void {
    if (this.stopped) return;
    const queued = this.pending.get(batchId);
    if (queued) {
      queued.full ||= full;
      return;
    }
    const entry = {
      full,
      timer: setTimeout(() => {
        this.pending.delete(batchId);
        void this.drive(batchId, entry.full).catch((err: unknown) =>
          this.log.warn({ err, batch_id: batchId }, 'batch drive failed'),
        );
      }, delayMs),
    };
    this.pending.set(batchId, entry);
  }

  private sweep(): void {
    for (const [key, entry] of this.mirror.entries()) {
      if (key.includes('.')) continue;
      if (this.recordOf(key, entry.value)?.status === 'running') this.schedule(key, 0, true);
    }
    // Batches that ended elsewhere, or whose admission failed, need no tracking here.
    for (const [batchId, known] of this.ended) {
      const entry = this.mirror.get(batchId);
      const running = entry ? this.recordOf(batchId, entry.value)?.status === 'running' : false;
      if (!running && (entry || Date.now() - known.since > ENDED_KEEP_MS)) {
        this.ended.delete(batchId);
      }
    }
  }

  /** Drives a batch now (see `driveOnce`); `full` as for `schedule`. */
  async drive(batchId: string, full = true): Promise<void> {
    if (this.running.has(batchId)) {
      this.schedule(batchId, 200, full);
      return;
    }
    this.running.add(batchId);
    try {
      await this.driveOnce(batchId, full);
    } finally {
      this.running.delete(batchId);
    }
  }

  /**
   * One step of a running batch: the failure-ratio rule, the next wave, releases left undone by
   * a gateway that died, and the end. Safe to run anywhere at any time.
   *
   * Every rule needs only which jobs ended and how (a job not known to have ended counts as in
   * flight), so a drive set off by an event reads no job record: the ended ones are known from
   * their events. A `full` drive (sweeps, cancel) reads the jobs not known to have ended, which
   * catches events this gateway missed within BATCH_SWEEP_INTERVAL.
   */
  private async driveOnce(batchId: string, full: boolean): Promise<void> {
    const stored = await this.get(batchId);
    if (!stored || stored.record.status !== 'running') {
      if (stored) this.ended.delete(batchId);
      return;
    }
    let record = stored.record;
    let records = await this.progress(batchId, record.jobs, full);
    const statusOf = (ref: BatchJobRef) => records.get(ref.job_id)?.status ?? 'queued';

    const rollout = record.rollout;
    if (rollout && record.stopped_reason === null && rollout.stop_on_failure_ratio !== null) {
      const ended = record.jobs.filter((j) => ['finished', 'failed'].includes(statusOf(j)));
      const failed = ended.filter((j) => statusOf(j) === 'failed').length;
      if (ended.length > 0 && failed / ended.length > rollout.stop_on_failure_ratio) {
        const reason = `stopped: ${failed} of ${ended.length} ended jobs failed (stop_on_failure_ratio ${rollout.stop_on_failure_ratio})`;
        const next = await this.update(batchId, (r) =>
          r.stopped_reason === null ? { ...r, stopped_reason: reason } : null,
        );
        if (next) record = next;
      }
    }
    if (record.stopped_reason !== null) {
      await this.cancelQueued(batchId, record.jobs, record.stopped_reason);
      records = await this.progress(batchId, record.jobs, true);
    } else if (rollout && record.released < record.total) {
      const inFlight = record.jobs
        .slice(0, record.released)
        .filter((j) => !isTerminal(statusOf(j))).length;
      const limit = rollout.max_parallel ?? record.total;
      const canaryRunning = rollout.canary > 0 && record.released <= rollout.canary && inFlight > 0;
      const room = canaryRunning ? 0 : Math.min(limit - inFlight, record.total - record.released);
      if (room > 0) {
        const from = record.released;
        const next = await this.update(batchId, (r) =>
          r.released === from ? { ...r, released: from + room } : null,
        );
        if (next) record = next;
      }
    }
    // Releases: idempotent, so a wave a dead gateway had decided is let go here.
    for (const ref of record.jobs.slice(0, record.released)) {
      const key = BatchKeys.held(batchId, ref.job_id);
      if (!this.mirror.get(key)) continue;
      const entry = await this.kv.get(key);
      // Not known to have ended is not known to be queued: its record says (once per job).
      const status = records.has(ref.job_id)
        ? statusOf(ref)
        : ((await this.jobs.get(ref.job_id))?.record.status ?? 'queued');
      if (entry?.operation === 'PUT' && status === 'queued') {
        const held = decodeOrDrop(HeldEnvelope, entry.value, {
          consumer: 'batches',
          log: this.log,
          where: { key },
        });
        if (held) await this.intake.publishEnvelope(held.envelope, held.traceparent ?? undefined);
      }
      await this.kv.delete(key);
    }

    if (!record.jobs.every((j) => isTerminal(statusOf(j)))) return;
    const endedAt =
      [...records.values()]
        .map((r) => r.ended_at)
        .filter((t): t is string => t !== null)
        .sort()
        .at(-1) ?? new Date().toISOString();
    const done = await this.update(batchId, (r) =>
      r.status === 'running'
        ? { ...r, status: r.stopped_reason === null ? 'finished' : 'cancelled', ended_at: endedAt }
        : null,
    );
    if (!done) return;
    this.ended.delete(batchId);
    const summary = summarize(done, records);
    // Only the gateway whose compare-and-set ended the batch gets here: one delivery. It is not
    // awaited (a slow receiver must not hold the batch) and not retried (SPEC: fire-and-forget).
    void this.deliverWebhook(done, summary);
    // After the jobs' events: a batch stream ends at the end.
    await this.jobEndsStored(batchId, done.total);
    // Retried through an election (a node lost): no other gateway sends it, and the batch's
    // streams and subscribers wait for it. The stream drops a repeat by its message id.
    await retryTransient(() =>
      this.js.publish(Subjects.batchEvent(batchId, done.status), encodeJson(summary), {
        msgID: MessageIds.batchEnd(batchId),
      }),
    );
  }

  /**
   * Returns once SVC_EVENTS holds an end event (finished, failed, cancelled) of every job of the
   * batch, or after `BATCH_END_WAIT_MS`. Each is published until stored (`Jobs`), the actor
   * hosts' too: one retried through an election could be stored after the batch's end, where
   * a batch stream, which ends at the summary, would never read it. Counted from the stream's
   * per-subject totals (one API call), this gateway's own pending ones (a cancel's) included.
   */
  private async jobEndsStored(batchId: string, total: number): Promise<void> {
    const deadline = Date.now() + BATCH_END_WAIT_MS;
    let told = false;
    for (;;) {
      const stored = await this.storedJobEnds(batchId).catch(() => null);
      if (stored !== null && stored >= total) return;
      if (Date.now() > deadline) {
        this.log.warn(
          { batch_id: batchId, stored, total },
          'batch end published without every job end stored',
        );
        return;
      }
      if (!told) {
        this.log.info({ batch_id: batchId, stored, total }, 'batch end waits for job events');
        told = true;
      }
      await sleep(BATCH_END_RECHECK_MS);
    }
  }

  /** How many end events of the batch's jobs SVC_EVENTS holds. */
  private async storedJobEnds(batchId: string): Promise<number> {
    const info = await this.jsm.streams.info(Streams.events, {
      subjects_filter: Subjects.batchJobEvents(batchId),
    });
    let ends = 0;
    for (const [subject, count] of Object.entries(info.state.subjects ?? {})) {
      const parsed = SubjectParsers.batchEvent(subject);
      if (parsed?.job && isTerminal(parsed.status as JobEvent['status'])) ends += count;
    }
    return ends;
  }

  /**
   * The batch webhook: its summary (the GET body: counts, no results, no credentials), signed
   * like a job's. At most once: a gateway that dies between the end transition and this POST
   * loses it, and no other gateway sends it (the record is already ended).
   */
  private async deliverWebhook(record: BatchRecord, summary: BatchSummary): Promise<void> {
    if (!record.webhook_url) return;
    const blog = this.log.child({ batch_id: record.batch_id });
    try {
      const { sealer } = this.options;
      const target = openWebhookUrl(sealer, record.webhook_url) ?? '';
      const secret = record.webhook_secret ? sealer.open<string>(record.webhook_secret) : null;
      const sent = await this.sendWebhook(target, JSON.stringify(summary), secret);
      if (sent.outcome === 'delivered') {
        blog.debug(
          { target: sent.target, status: sent.status, duration_ms: sent.durationMs },
          `batch ${record.batch_id} webhook delivered`,
        );
        return;
      }
      // Origin and reason only (the sender strips the URL's user info, query and secret).
      blog.warn(
        { target: sent.target ?? null, reason: sent.reason ?? sent.stage },
        `batch ${record.batch_id} webhook ${sent.outcome}`,
      );
    } catch (err) {
      blog.warn(
        { reason: err instanceof Error ? err.name : 'error' },
        `batch ${record.batch_id} webhook failed`,
      );
    }
  }

  /** Moves every queued job of the batch to cancelled and drops envelopes not yet released. */
  private async cancelQueued(batchId: string, refs: BatchJobRef[], reason: string): Promise<void> {
    for (let i = 0; i < refs.length; i += READ_CHUNK) {
      await Promise.all(
        refs.slice(i, i + READ_CHUNK).map(async (ref) => {
          await this.jobs.cancel(ref.job_id, `job cancelled: batch ${reason}`, ['queued']);
          if (this.mirror.get(BatchKeys.held(batchId, ref.job_id))) {
            await this.kv.delete(BatchKeys.held(batchId, ref.job_id)).catch(() => undefined);
          }
        }),
      );
    }
  }

  private async get(batchId: string): Promise<{ record: BatchRecord; revision: number } | null> {
    if (!/^[-\w]+$/.test(batchId)) return null;
    const entry = await this.kv.get(batchId);
    if (!entry || entry.operation !== 'PUT') return null;
    return { record: decodeMessage(BatchRecord, entry.value), revision: entry.revision };
  }

  /** A batch record from the mirror; null (logged, counted) when it is not one. */
  private recordOf(key: string, value: Uint8Array): BatchRecord | null {
    return decodeOrDrop(BatchRecord, value, { consumer: 'batches', log: this.log, where: { key } });
  }

  /** Compare-and-set on the batch record; null when `change` declined. */
  private async update(
    batchId: string,
    change: (r: BatchRecord) => BatchRecord | null,
  ): Promise<BatchRecord | null> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const stored = await this.get(batchId);
      if (!stored) return null;
      const next = change(stored.record);
      if (!next) return null;
      try {
        await this.kv.update(batchId, encodeJson(next), stored.revision);
        return next;
      } catch (err) {
        if (!isWrongRevision(err)) throw err;
      }
    }
    throw new Error(`batch record ${batchId} kept changing`);
  }

  /** The jobs' records; `withResults`: with results kept in the object store in place. */
  private async jobRecords(
    refs: BatchJobRef[],
    withResults = false,
  ): Promise<Map<string, JobRecord>> {
    const out = new Map<string, JobRecord>();
    const read = async (jobId: string) => {
      const stored = await this.jobs.get(jobId);
      if (!stored) return null;
      return withResults ? this.jobs.withResults(stored.record) : stored.record;
    };
    for (let i = 0; i < refs.length; i += READ_CHUNK) {
      const got = await Promise.all(refs.slice(i, i + READ_CHUNK).map((r) => read(r.job_id)));
      for (const g of got) if (g) out.set(g.job_id, g);
    }
    return out;
  }

  /** Records that the job of a batch ended (from its event or its record). */
  private noteEnded(batchId: string, job: JobProgress): void {
    if (this.stopped) return;
    let known = this.ended.get(batchId);
    if (!known) {
      known = { jobs: new Map(), since: Date.now() };
      this.ended.set(batchId, known);
    }
    const { job_id, status, ended_at, error_code } = job;
    known.jobs.set(job_id, { job_id, status, ended_at, error_code });
  }

  /**
   * The jobs known to have ended and, with `read`, the records of the others (those that ended
   * since are remembered). A job absent from the answer has not ended, or its record is gone.
   */
  private async progress(
    batchId: string,
    refs: BatchJobRef[],
    read: boolean,
  ): Promise<Map<string, JobProgress>> {
    const known = this.ended.get(batchId)?.jobs;
    const out = new Map<string, JobProgress>();
    const rest: BatchJobRef[] = [];
    for (const ref of refs) {
      const ended = known?.get(ref.job_id);
      if (ended) out.set(ref.job_id, ended);
      else rest.push(ref);
    }
    if (!read || rest.length === 0) return out;
    for (const [jobId, record] of await this.jobRecords(rest)) {
      out.set(jobId, record);
      if (isTerminal(record.status)) this.noteEnded(batchId, record);
    }
    return out;
  }
}

/** Counts per status and per error code. A job whose record is gone counts as queued. */
export function summarize(
  record: BatchRecord,
  records: ReadonlyMap<string, Pick<JobRecord, 'status' | 'error_code'>>,
): BatchSummary {
  const counts = { queued: 0, started: 0, finished: 0, failed: 0, cancelled: 0 };
  const errorCodes: Record<string, number> = {};
  for (const ref of record.jobs) {
    const r = records.get(ref.job_id);
    counts[r?.status ?? 'queued']++;
    if (r?.error_code) errorCodes[r.error_code] = (errorCodes[r.error_code] ?? 0) + 1;
  }
  return {
    batch_id: record.batch_id,
    kind: record.kind,
    status: record.status,
    total: record.total,
    counts,
    error_codes: errorCodes,
    created_at: record.created_at,
    ended_at: record.ended_at,
    stopped_reason: record.stopped_reason,
  };
}
