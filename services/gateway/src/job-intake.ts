import { isDeepStrictEqual } from 'node:util';
import type { JetStreamClient } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import {
  requiredCapabilities,
  SendCommandRequest,
  SendCommandStructuredRequest,
  SendConfigRequest,
  MessageIds,
  JOBS_DUPLICATE_WINDOW_MARGIN_MS,
  JOBS_DUPLICATE_WINDOW_SECONDS,
  check,
  encodeJson,
  isTerminal,
  canonicalIp,
  normalizeSubmission,
  openWebhookUrl,
  type AddressPolicy,
  type CommandMode,
  type CommandPolicy,
  type DeviceInputLimits,
  type DeviceSecrets,
  type EnqueueResponse,
  type JobEnvelope,
  type JobKind,
  type JobRecord,
  type JobSpec,
  type Sealer,
  type ValidationIssue,
} from '@svc/proto';
import { BUILTIN_DRIVERS } from '@svc/drivers';
import { AuditEvent, injectTraceContext, type AuditLog } from '@svc/telemetry';
import {
  deviceKeyOf,
  envelopeSubjectOf,
  resolveHost,
  type HostKeyStore,
  type LockoutLedger,
} from '@svc/device-access';
import type { Enqueued, Jobs, StoredRecord } from '@svc/jobs';
import type { KV } from '@nats-io/kv';
import type { TSchema } from 'typebox';
import { mayUseContext, hasRole, type Caller } from './caller.js';
import { BatchBudget, RefusedAt } from './batch-admission.js';
import { KeyClaims } from './claims.js';
import { ConfigTemplates, renderTemplateRef, type RenderedTemplate } from './config-templates.js';
import { dedupKeyOf } from './dedup.js';
import { HttpError } from './http-errors.js';
import { idempotencyKeyOf } from './idempotency.js';
import type { QueueDepth } from './queue-depth.js';
import { RateLimiter, callerScope, deviceScope, type RateGrant } from './rate-limit.js';

/** 503 for a submission the store could not take within STORE_TIMEOUT (nothing was queued). */
function storeTimedOut(what = 'the job store did not answer in time'): HttpError {
  return new HttpError(503, `${what}; retry later`, { 'Retry-After': '10' });
}

/**
 * Failures after which the job may still run: its envelope may have been stored and its record
 * could not be removed. The keys such a job took stay with it (JobLifecycle frees them at its end).
 */
const mayRun = new WeakSet<object>();

/** Clock difference allowed between a gateway and the NATS server that timestamps key writes. */
const CLOCK_SKEW_MS = 1000;

/** 503 for a submission that the context's queue (MAX_QUEUE_DEPTH) has no room for. */
function queueFull(context: string): HttpError {
  return new HttpError(503, `queue of context ${context} is full`, { 'Retry-After': '10' });
}

const SCHEMAS: Record<JobKind, TSchema> = {
  command: SendCommandRequest,
  config: SendConfigRequest,
  structured: SendCommandStructuredRequest,
};

export interface IntakeOptions {
  contexts: readonly string[];
  /** Platform ids of the user drivers (SVC_DRIVERS_DIR). */
  userPlatforms?: readonly string[];
  jobTimeoutSeconds: number;
  maxQueueDepth: number;
  /** SVC_MAX_COMMANDS and SVC_MAX_COMMAND_LENGTH. Default the documented ones. */
  limits?: DeviceInputLimits;
  /** WEBHOOK_ALLOW_HTTP: accept http:// webhook URLs. Default false (HTTPS only). */
  webhookAllowHttp?: boolean;
  /** JOB_DEDUP_ENABLED. Default false here; the gateway passes its setting. */
  dedupEnabled?: boolean;
  /** RATE_LIMIT_PER_MINUTE: accepted submissions per caller per minute; 0 = unlimited. */
  ratePerMinute?: number;
  /** RATE_LIMIT_DEVICE_PER_MINUTE: accepted jobs per caller per device per minute; 0 = unlimited. */
  deviceRatePerMinute?: number;
  /** DEVICE_NETWORKS_*: device addresses given as IP literals are checked at submission. */
  devicePolicy?: AddressPolicy;
  /** Pinned host keys: the lockout is keyed by the device's key where one is pinned. */
  hostKeys?: HostKeyStore;
  /** COMMAND_POLICY and COMMAND_DENY_PATTERNS; absent: any command. */
  commandPolicy?: CommandPolicy;
  /** WEBHOOK_ALLOW_NETWORKS: webhook targets given as IP literals are checked at submission. */
  webhookPolicy?: AddressPolicy;
  /**
   * STORE_TIMEOUT in ms: a submission starts no write after this long, so an attempt that
   * claimed an idempotency key has written its record by then or never will. Default 5000.
   */
  storeTimeoutMs?: number;
}

/** Buckets of the submission guards (absent: the guard is off). */
export interface IntakeGuardStores {
  idempotency?: KV;
  dedup?: KV;
  rateLimit?: KV;
  /** `svc-templates`: send-config jobs from a stored template. */
  templates?: KV;
}

/** How long a repeat waits for the record of the job that holds its key (it may be mid-write). */
const HOLDER_WAIT_MS = 2000;

export interface SubmitRequest {
  kind: JobKind;
  /** The body, validated by its route's schema (v1 routes' accept retired fields). */
  body: unknown;
  caller: Caller;
  /** The job id: the request's X-Request-ID (validated by its route's schema) or a fresh one. */
  jobId: string;
  /** W3C trace context of the request, carried to the actor in message headers. */
  traceparent?: string;
  /** X-Idempotency-Key as sent, if any. */
  idempotencyKey?: string;
  /** Source address of the request (audit). */
  source?: string;
  /** When the request is answered 503 at the latest (ms since the epoch): no write starts after. */
  deadline?: number;
  /** What `X-Svc-Command-Policy` asks for (null: nothing): read-only for this request alone. */
  commandPolicy?: CommandMode | null;
}

/** A submission that passed every check that takes nothing (see `JobIntake.prepare`). */
export interface PreparedJob {
  spec: JobSpec;
  secrets: DeviceSecrets;
  /** The device's address as resolved once at submission. */
  address: string | null;
  caller: Caller;
}

export interface AdmitOptions {
  idempotencyKey?: string;
  /** Source address of the request (audit). */
  source?: string;
  traceparent?: string;
  /** The batch the job belongs to. */
  batchId?: string;
  /** The batch device entry's inventory name (kept on the record for its events). */
  deviceName?: string;
  /** Receives the envelope instead of publishing it (a rollout wave releases it later). */
  hold?: (envelope: JobEnvelope) => Promise<void>;
  /** The job's rate budget was taken already (a batch takes its jobs' budgets at once). */
  budgetTaken?: boolean;
  /** No write starts after this (ms since the epoch); STORE_TIMEOUT from now when absent. */
  deadline?: number;
}

/** Extra settings of one enqueue. */
export interface EnqueueExtras {
  /** The batch the job belongs to. */
  batchId?: string;
  /** The batch device entry's inventory name. */
  deviceName?: string;
  /** Receives the envelope instead of publishing it. */
  hold?: (envelope: JobEnvelope) => Promise<void>;
  /** `svc-dedup` key the job holds while in flight (released by JobLifecycle). */
  dedupKey?: string | null;
  /**
   * An idempotency key names the job: a repeat that finds it `queued` publishes its envelope
   * itself, so a failed publish here leaves the record to the reaper's enqueue check.
   */
  idempotent?: boolean;
  /** The device's address as resolved for this submission (resolved here when absent). */
  address?: string | null;
  /** Source address of the request (audit). */
  source?: string;
  /** The failed job a replay re-runs (audit). */
  replayOf?: string;
  /** Jobs ahead of this one, when the capacity check already read them fresh. */
  ahead?: number;
  /** No write starts after this (ms since the epoch). */
  deadline?: number;
}

/**
 * Turns a submission into a queued job: validation, the job record, the sealed envelope on the
 * context's stream. Nothing is queued unless every check passed.
 */
export class JobIntake {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jobs: Jobs,
    private readonly sealer: Sealer,
    private readonly depth: QueueDepth,
    private readonly audit: AuditLog,
    private readonly options: IntakeOptions,
    private readonly lockout: LockoutLedger | null = null,
    guards: IntakeGuardStores = {},
  ) {
    this.idem = guards.idempotency ? new KeyClaims(guards.idempotency) : null;
    this.dedup = guards.dedup && options.dedupEnabled ? new KeyClaims(guards.dedup) : null;
    this.limiter = guards.rateLimit ? new RateLimiter(guards.rateLimit) : null;
    this.templates = guards.templates ? new ConfigTemplates(guards.templates) : null;
  }

  private readonly templates: ConfigTemplates | null;

  private readonly idem: KeyClaims | null;
  private readonly dedup: KeyClaims | null;
  private readonly limiter: RateLimiter | null;

  /** 403 unless the caller's role may submit jobs. */
  static mustSubmit(caller: Caller): void {
    if (!hasRole(caller, 'operator')) {
      throw new HttpError(403, `role ${caller.role} may not submit jobs`);
    }
  }

  async submit(req: SubmitRequest): Promise<EnqueueResponse> {
    const prepared = await this.prepare(req.kind, req.body, req.caller, {
      askedPolicy: req.commandPolicy,
      validated: true,
    });
    return this.admit(prepared, req.jobId, req);
  }

  /** STORE_TIMEOUT in ms. */
  get storeTimeoutMs(): number {
    return this.options.storeTimeoutMs ?? 5000;
  }

  /**
   * Every check of a submission that takes nothing: role, schema, normalization, context,
   * address policy, lockout, webhook URL. Throws the HttpError to answer; queues nothing.
   * Batches call it once per device before any device is admitted.
   */
  async prepare(
    kind: JobKind,
    parsed: unknown,
    caller: Caller,
    options: {
      /** The mode the request asks for (X-Svc-Command-Policy, judged by its route's schema). */
      askedPolicy?: CommandMode | null;
      /** The body passed its route's schema already (a submission); a batch's device has not. */
      validated?: boolean;
    } = {},
  ): Promise<PreparedJob> {
    JobIntake.mustSubmit(caller);
    const asked = options.askedPolicy ?? null;
    type Body = SendConfigRequest & SendCommandStructuredRequest;
    const checked = options.validated
      ? { ok: true as const, value: parsed as Body }
      : check<Body>(SCHEMAS[kind], parsed, 'body');
    if (!checked.ok) throw HttpError.validation(checked.issues);
    const fromTemplate = kind === 'config' ? await this.renderedLines(checked.value, caller) : null;
    const body = fromTemplate ? { ...checked.value, commands: fromTemplate.lines } : checked.value;
    const normalized = normalizeSubmission(body, {
      kind,
      basic: caller.basic,
      contexts: this.options.contexts,
      builtinDrivers: BUILTIN_DRIVERS,
      userPlatforms: this.options.userPlatforms ?? [],
      ...(this.options.limits ? { limits: this.options.limits } : {}),
    });
    if (!normalized.ok) throw HttpError.validation(normalized.issues);
    const { secrets } = normalized;
    const spec: JobSpec = fromTemplate
      ? { ...normalized.spec, template: fromTemplate.template }
      : normalized.spec;
    if (!mayUseContext(caller, spec.context)) {
      throw new HttpError(403, `this key may not use context ${spec.context}`);
    }
    // An address is judged here; a name is judged by the actor on what it resolves to.
    const literal = canonicalIp(spec.host);
    const verdict =
      literal !== null ? this.options.devicePolicy?.check(spec.context, spec.host, literal) : null;
    const refused: ValidationIssue[] = [];
    if (verdict && !verdict.allowed) {
      const field = (checked.value as { host?: string | null }).host != null ? 'host' : 'ip';
      refused.push({ loc: ['body', field], msg: verdict.reason, type: 'address_not_allowed' });
    }
    // Jump hosts are reached by the service too: the same policy holds for each of them.
    for (const [i, jump] of (spec.ssh?.jump_hosts ?? []).entries()) {
      const jumpLiteral = canonicalIp(jump.host);
      const jumpVerdict =
        jumpLiteral !== null
          ? this.options.devicePolicy?.check(spec.context, jump.host, jumpLiteral)
          : null;
      if (jumpVerdict && !jumpVerdict.allowed) {
        refused.push({
          loc: ['body', 'ssh', 'jump_hosts', i, 'host'],
          msg: jumpVerdict.reason,
          type: 'address_not_allowed',
        });
      }
    }
    refused.push(...this.commandRefusals(spec, asked));
    if (refused.length > 0) throw HttpError.validation(refused);
    // Resolved once: every guard below and the actor see the same device, and the actor
    // connects to exactly this address.
    const address = await resolveHost(spec.host);
    await this.checkLockout(caller, spec, secrets.username, address);
    this.checkWebhookUrl(spec.webhook_url);
    // Checked in clear; from here on (record, envelope, replays) only the sealed form exists.
    const sealedSpec =
      spec.webhook_url === null
        ? spec
        : { ...spec, webhook_url: this.sealer.seal(spec.webhook_url) };
    return { spec: sealedSpec, secrets, address, caller };
  }

  /**
   * Under read-only (the context's mode now, or asked for by the request), each command of a
   * send-command job that the policy refuses, named at its index. Submissions and replays alike:
   * a job accepted under a laxer policy is judged again when it is replayed.
   */
  private commandRefusals(spec: JobSpec, asked: CommandMode | null): ValidationIssue[] {
    const policy = this.options.commandPolicy;
    if (spec.kind === 'config' || policy?.modeFor(spec.context, asked) !== 'read-only') return [];
    const refused: ValidationIssue[] = [];
    for (const [i, command] of spec.commands.entries()) {
      const why = policy.readOnlyRefusal(command, spec.platform);
      if (why !== null) {
        refused.push({
          loc: ['body', 'commands', i],
          msg: `command "${command}" is refused: context ${spec.context} runs read-only commands here and ${why}`,
          type: 'command_not_allowed',
        });
      }
    }
    return refused;
  }

  /**
   * A send-config's lines: null when it gives `commands`; rendered from its `template` (a stored
   * one of the job's context, or inline text) otherwise. Both or neither: 422.
   */
  private async renderedLines(
    body: SendConfigRequest,
    caller: Caller,
  ): Promise<RenderedTemplate | null> {
    if (body.template !== undefined && body.commands !== undefined) {
      throw HttpError.validation([
        {
          loc: ['body', 'template'],
          msg: 'give commands or template, not both',
          type: 'value_error',
        },
      ]);
    }
    if (body.template === undefined) {
      if (body.commands !== undefined) return null;
      throw HttpError.validation([
        { loc: ['body', 'commands'], msg: 'field required (or template)', type: 'missing' },
      ]);
    }
    const context = body.context ?? 'default';
    if (!this.options.contexts.includes(context)) {
      throw HttpError.validation([
        {
          loc: ['body', 'context'],
          msg: `unknown context ${JSON.stringify(context)}; valid: ${this.options.contexts.join(', ')}`,
          type: 'value_error',
        },
      ]);
    }
    if (!mayUseContext(caller, context)) {
      throw new HttpError(403, `this key may not use context ${context}`);
    }
    if (!this.templates) throw new Error('configuration templates are not available');
    return renderTemplateRef(this.templates, body.template, context, ['body', 'template']);
  }

  /**
   * The guards that take something (idempotency key, dedup key, rate budget, queue capacity),
   * then the record and the envelope. Each later refusal gives back what earlier steps took.
   */
  async admit(
    prepared: PreparedJob,
    jobId: string,
    opts: AdmitOptions = {},
  ): Promise<EnqueueResponse> {
    const { spec, secrets, address, caller } = prepared;
    const deadline = opts.deadline ?? Date.now() + this.storeTimeoutMs;
    // Idempotency, then dedup, then budget, then capacity: each later refusal gives back what the
    // earlier steps took, so a refused request leaves no key behind and eats no budget.
    const idem = this.idem;
    const idemKey =
      idem && opts.idempotencyKey !== undefined && opts.idempotencyKey !== ''
        ? idempotencyKeyOf(caller, opts.idempotencyKey)
        : null;
    if (idem && idemKey) {
      const repeat = await this.claimIdempotency(idem, idemKey, jobId, deadline, {
        prepared,
        ...(opts.traceparent !== undefined ? { traceparent: opts.traceparent } : {}),
      });
      if (repeat) return repeat;
    }
    try {
      let dedupKey: string | null = null;
      if (this.dedup) {
        const key = dedupKeyOf(caller, spec, secrets.username);
        const holder = await this.claimDedup(key, jobId);
        if (holder !== null) {
          if (idem && idemKey) await idem.repoint(idemKey, holder);
          return await this.existing(holder, { deduplicated: true });
        }
        dedupKey = key;
      }
      let grant: RateGrant | null = null;
      try {
        if (!opts.budgetTaken) grant = await this.takeBudget(caller, spec, address);
        const ahead = await this.checkCapacity(spec.context);
        return await this.enqueue(
          jobId,
          spec,
          secrets.username,
          this.sealer.seal(secrets),
          caller,
          opts.traceparent,
          {
            dedupKey,
            idempotent: idemKey !== null,
            address,
            deadline,
            ...(ahead !== null ? { ahead } : {}),
            ...(opts.batchId !== undefined ? { batchId: opts.batchId } : {}),
            ...(opts.deviceName !== undefined ? { deviceName: opts.deviceName } : {}),
            ...(opts.hold !== undefined ? { hold: opts.hold } : {}),
            ...(opts.source !== undefined ? { source: opts.source } : {}),
          },
        );
      } catch (err) {
        // Refused after the budget was taken (a full queue, a store error): nothing was queued.
        await grant?.giveBack().catch(() => undefined);
        if (dedupKey && this.dedup && !mayRun.has(err as object)) {
          this.dedup.releaseReliably(dedupKey, jobId);
        }
        throw err;
      }
    } catch (err) {
      // Given back only when the job surely cannot run; else the key keeps naming it and a
      // retry is answered with that job.
      if (idem && idemKey && !mayRun.has(err as object)) idem.releaseReliably(idemKey, jobId);
      throw err;
    }
  }

  /**
   * Takes the idempotency key for `jobId`, or answers the repeat: a 202 only for a job whose
   * record was read. A key whose job has no record once the attempt that wrote it is past its
   * STORE_TIMEOUT (it writes no record after that) is taken over by compare-and-set on the
   * key's revision, and this request runs the whole admission as that key's job. A holder still
   * `queued` gets its envelope from this repeat too (`republish`) before the 202.
   */
  private async claimIdempotency(
    idem: KeyClaims,
    key: string,
    jobId: string,
    deadline: number,
    repeat: { prepared: PreparedJob; traceparent?: string },
  ): Promise<EnqueueResponse | null> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const claim = await idem.claim(key, jobId);
      if (claim.claimed) return null;
      const holderDone = claim.writtenAt + this.storeTimeoutMs + CLOCK_SKEW_MS;
      const holder = await this.waitForStored(claim.jobId, Math.min(holderDone, deadline));
      if (holder) {
        await this.republish(holder, repeat.prepared, deadline, repeat.traceparent);
        return this.existing(claim.jobId, { idempotent: true }, holder.record);
      }
      if (Date.now() < holderDone) {
        throw storeTimedOut('an earlier request with this idempotency key is still being admitted');
      }
      if (await idem.takeOver(key, jobId, claim.revision)) return null;
    }
    throw new Error('idempotency key kept changing');
  }

  /**
   * The guards of a submission that a replay runs too (command policy as it is now, lockout,
   * budget, queue depth); returns the device's resolved address.
   */
  async admitReplay(
    caller: Caller,
    spec: JobSpec,
    username: string,
    askedPolicy: CommandMode | null = null,
  ): Promise<string | null> {
    const refused = this.commandRefusals(spec, askedPolicy);
    if (refused.length > 0) throw HttpError.validation(refused);
    const address = await resolveHost(spec.host);
    await this.checkLockout(caller, spec, username, address);
    const grant = await this.takeBudget(caller, spec, address);
    await this.checkCapacity(spec.context).catch(async (err: unknown) => {
      await grant?.giveBack().catch(() => undefined);
      throw err;
    });
    return address;
  }

  /** The device key of the host key pinned for the job's address, or null (none, no store). */
  private async pinnedDeviceOf(spec: JobSpec, address: string | null): Promise<string | null> {
    const hostKeys = this.options.hostKeys;
    if (!hostKeys) return null;
    return hostKeys.pinnedDeviceOf(spec.context, address ?? spec.host, spec.port);
  }

  /** 403 while the Basic caller's device user is locked out of the device. */
  private async checkLockout(
    caller: Caller,
    spec: JobSpec,
    username: string,
    address: string | null,
  ): Promise<void> {
    // Bearer callers are exempt from device lockout (SPEC, authentication rule 5).
    if (caller.kind !== 'basic' || !this.lockout) return;
    // Keyed like the actor's: by the pinned host key when the device has one.
    const where = address ?? spec.host;
    const deviceKey =
      (await this.options.hostKeys?.guardKeyOf(spec.context, where, spec.port)) ??
      deviceKeyOf(spec.context, where, spec.port);
    if (await this.lockout.isLockedOut(username, deviceKey)) {
      throw new HttpError(403, `user ${username} is locked out of ${spec.host}; retry later`);
    }
  }

  /**
   * 503 when the context's queue holds MAX_QUEUE_DEPTH jobs. Returns the backlog it read fresh
   * (the jobs ahead of this one), or null when no limit is set and nothing was read.
   */
  private async checkCapacity(context: string): Promise<number | null> {
    if (this.options.maxQueueDepth <= 0) return null;
    const depth = await this.depth.forContext(context);
    if (depth >= this.options.maxQueueDepth) throw queueFull(context);
    return depth;
  }

  /**
   * Takes one unit of the caller's submission budget and of its per-device budget, or throws 429
   * having taken nothing. Replays go through this too. The grant gives the units back when a
   * later guard refuses the request (a full queue).
   */
  async takeBudget(
    caller: Caller,
    spec: JobSpec,
    address: string | null = null,
  ): Promise<RateGrant | null> {
    if (!this.limiter) return null;
    // One device whatever address reaches it: its pinned host key when it has one.
    const device =
      (await this.pinnedDeviceOf(spec, address)) ??
      deviceKeyOf('', address ?? spec.host, spec.port);
    // The narrower counter first: a burst at one device is refused there and never holds units
    // of the caller's budget, even for a moment (which could refuse the caller elsewhere).
    return this.limiter.take([
      { scope: deviceScope(caller.id, device), limit: this.options.deviceRatePerMinute ?? 0 },
      { scope: callerScope(caller.id), limit: this.options.ratePerMinute ?? 0 },
    ]);
  }

  /**
   * Before a batch is admitted: its rate budgets at once (`BatchBudget`; null when no limit is
   * set), and room for all its jobs under MAX_QUEUE_DEPTH (each job is still checked as it is
   * admitted). Throws `RefusedAt` naming the entry admission in device order would have been
   * refused at, having taken nothing.
   */
  async admitBatch(jobs: readonly PreparedJob[]): Promise<BatchBudget | null> {
    // An entry repeating an earlier one will be a dedup hit on its job and takes no budget.
    const seen = new Set<string>();
    const counted = jobs.map((j) => {
      if (!this.dedup) return true;
      const key = dedupKeyOf(j.caller, j.spec, j.secrets.username);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    const full = await this.batchRoom(jobs[0]?.spec.context, jobs.length);
    const limits = {
      caller: this.options.ratePerMinute ?? 0,
      device: this.options.deviceRatePerMinute ?? 0,
    };
    // Keyed like a single job's budget: by the pinned host key where the device has one.
    const entries = await Promise.all(
      (full ? jobs.slice(0, full.index) : jobs).map(async (j) => ({
        ...j,
        device: await this.pinnedDeviceOf(j.spec, j.address),
      })),
    );
    const budget =
      this.limiter && entries.length > 0
        ? await BatchBudget.take(this.limiter, entries, counted, limits)
        : null;
    if (!full) return budget;
    // The budget held up to the entry where the queue is full: the queue refuses there.
    await budget?.giveBack();
    throw full;
  }

  /** The refusal at the entry where `count` more jobs would fill the queue, or null. */
  private async batchRoom(context: string | undefined, count: number): Promise<RefusedAt | null> {
    const max = this.options.maxQueueDepth;
    if (max <= 0 || context === undefined) return null;
    const depth = await this.depth.forContext(context);
    if (depth + count <= max) return null;
    return new RefusedAt(Math.max(0, max - depth), queueFull(context));
  }

  /** HTTPS only unless WEBHOOK_ALLOW_HTTP; the actor checks again before it sends. */
  checkWebhookUrl(url: string | null): void {
    if (url === null) return;
    let parsed: URL | null;
    try {
      parsed = new URL(url);
    } catch {
      parsed = null;
    }
    const allowed = this.options.webhookAllowHttp ? ['https:', 'http:'] : ['https:'];
    if (!parsed || !allowed.includes(parsed.protocol) || parsed.hostname === '') {
      throw HttpError.validation([
        {
          loc: ['body', 'webhook_url'],
          msg: this.options.webhookAllowHttp
            ? 'value is not a valid http(s) URL'
            : 'webhook_url must be an https:// URL (WEBHOOK_ALLOW_HTTP=true allows http://)',
          type: 'url_scheme',
        },
      ]);
    }
    const literal = canonicalIp(parsed.hostname);
    const verdict =
      literal !== null ? this.options.webhookPolicy?.check('', literal, literal) : null;
    if (verdict && !verdict.allowed) {
      throw HttpError.validation([
        { loc: ['body', 'webhook_url'], msg: verdict.reason, type: 'address_not_allowed' },
      ]);
    }
  }

  /**
   * Takes the dedup key for `jobId`, or returns the in-flight job that holds it. A key left by a
   * job that already ended (cancelled, or its record expired) is stale and is taken over.
   */
  private async claimDedup(key: string, jobId: string): Promise<string | null> {
    const dedup = this.dedup;
    if (!dedup) return null;
    for (let attempt = 0; attempt < 10; attempt++) {
      const claim = await dedup.claim(key, jobId);
      if (claim.claimed) return null;
      const holder = await this.waitForRecord(claim.jobId);
      if (holder && !isTerminal(holder.status)) return claim.jobId;
      await dedup.dropStale(key, claim.revision);
    }
    throw new Error('dedup key kept changing');
  }

  /** The record of a job holding a key; the request that took the key may still be writing it. */
  private async waitForRecord(
    jobId: string,
    deadline = Date.now() + HOLDER_WAIT_MS,
  ): Promise<JobRecord | null> {
    return (await this.waitForStored(jobId, deadline))?.record ?? null;
  }

  /** `waitForRecord` with the record's revision. */
  private async waitForStored(jobId: string, deadline: number): Promise<StoredRecord | null> {
    for (;;) {
      const stored = await this.jobs.get(jobId);
      if (stored) return stored;
      if (Date.now() > deadline) return null;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * An idempotent repeat of a job still `queued`: its envelope may never have been stored (the
   * first attempt's publish failed or is still in flight), so the repeat publishes it itself,
   * built from its own request as the first attempt built it, under the same message id
   * (JetStream stores it once), and its 202 waits for the ack. A publish that fails is a 503.
   * Not for a job that left `queued` (it has its envelope), a batch job (its envelope waits for
   * its wave), a repeat whose request differs (the key names the job, not a content), or a record
   * older than the duplicate window less its margin (a second envelope could run the job twice).
   */
  private async republish(
    stored: StoredRecord,
    prepared: PreparedJob,
    deadline: number,
    traceparent?: string,
  ): Promise<void> {
    const { record } = stored;
    if (stored.archived || record.status !== 'queued' || record.batch_id != null) return;
    const age = Date.now() - Date.parse(record.enqueued_at);
    const window = JOBS_DUPLICATE_WINDOW_SECONDS * 1000 - JOBS_DUPLICATE_WINDOW_MARGIN_MS;
    if (!(age < window - CLOCK_SKEW_MS) || !this.sameJob(record, prepared)) return;
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw storeTimedOut();
    const { caller, secrets, address } = prepared;
    const envelope = this.envelopeOf(record.job_id, record.spec, record.username, {
      sealed: this.sealer.seal(secrets),
      caller,
      address,
      enqueuedAt: record.enqueued_at,
      dedupKey: record.dedup_key ?? null,
    });
    envelope.record_revision = stored.revision;
    const device = await this.pinnedDeviceOf(record.spec, address).catch(() => null);
    if (device !== null) envelope.device = device;
    try {
      await this.publishEnvelope(envelope, traceparent, Math.max(1, deadline - Date.now()));
    } catch {
      throw storeTimedOut('the job queue did not take the job in time');
    }
  }

  /** Whether a repeat asks for the job `record` holds (webhook URLs compared unsealed). */
  private sameJob(record: JobRecord, prepared: PreparedJob): boolean {
    if (record.owner !== prepared.caller.id || record.username !== prepared.secrets.username) {
      return false;
    }
    const plain = (spec: JobSpec): unknown =>
      JSON.parse(
        JSON.stringify({ ...spec, webhook_url: openWebhookUrl(this.sealer, spec.webhook_url) }),
      );
    try {
      return isDeepStrictEqual(plain(record.spec), plain(prepared.spec));
    } catch {
      return false; // a webhook URL sealed under a key no longer held
    }
  }

  /** A job's envelope, as the first attempt and an idempotent repeat build it. */
  private envelopeOf(
    jobId: string,
    spec: JobSpec,
    username: string,
    parts: {
      sealed: string;
      caller: Caller;
      address: string | null;
      enqueuedAt: string;
      dedupKey: string | null;
      batchId?: string;
      deviceName?: string;
    },
  ): JobEnvelope {
    const envelope: JobEnvelope = {
      v: 1,
      job_id: jobId,
      owner: parts.caller.id,
      username,
      spec,
      sealed: parts.sealed,
      ...(parts.address !== null ? { address: parts.address } : {}),
      enqueued_at: parts.enqueuedAt,
      placement: 0,
      dedup_key: parts.dedupKey,
      ...(parts.batchId !== undefined ? { batch_id: parts.batchId } : {}),
      ...(parts.deviceName !== undefined ? { device_name: parts.deviceName } : {}),
    };
    // A host that would misread the job (a dry run pushed for real) never runs it.
    const requires = requiredCapabilities(spec);
    if (requires.length > 0) envelope.requires = requires;
    return envelope;
  }

  /** The 202 answer for a job that already exists (idempotent repeat or dedup hit). */
  private async existing(
    jobId: string,
    flags: { idempotent?: boolean; deduplicated?: boolean },
    known?: JobRecord,
  ): Promise<EnqueueResponse> {
    const record = known ?? (await this.waitForRecord(jobId));
    const position =
      record?.status === 'queued'
        ? await this.depth.forContext(record.spec.context).catch(() => 1)
        : 1;
    return {
      job_id: jobId,
      message: flags.idempotent
        ? 'job already submitted with this idempotency key'
        : 'identical job already in flight',
      queue_position: Math.max(1, position),
      enqueued_at: record?.enqueued_at ?? new Date().toISOString(),
      timeout: this.options.jobTimeoutSeconds,
      deduplicated: flags.deduplicated ?? false,
      idempotent: flags.idempotent ?? false,
    };
  }

  /** Writes the record and publishes the envelope. Used by submissions and replays. */
  async enqueue(
    jobId: string,
    spec: JobSpec,
    username: string,
    sealed: string,
    caller: Caller,
    traceparent?: string,
    extras: EnqueueExtras = {},
  ): Promise<EnqueueResponse> {
    const started = performance.now();
    // Jobs ahead of this one (waiting or running), counted before it joins them: the capacity
    // check's fresh read when it made one, else the shared recent read; it runs alongside the
    // record's creation, which does not change the count.
    const aheadRead =
      extras.ahead !== undefined
        ? Promise.resolve(extras.ahead)
        : this.depth.ahead(spec.context).catch(() => 0);
    const enqueuedAt = new Date().toISOString();
    const address = extras.address !== undefined ? extras.address : await resolveHost(spec.host);
    // Placement prefers the host of the device's pinned key: its addresses meet on one host.
    // Read alongside the record's creation (the record does not hold it).
    const deviceRead = this.pinnedDeviceOf(spec, address).catch(() => null);
    const envelope = this.envelopeOf(jobId, spec, username, {
      sealed,
      caller,
      address,
      enqueuedAt,
      dedupKey: extras.dedupKey ?? null,
      ...(extras.batchId !== undefined ? { batchId: extras.batchId } : {}),
      ...(extras.deviceName !== undefined ? { deviceName: extras.deviceName } : {}),
    });
    const deadline = extras.deadline ?? Number.POSITIVE_INFINITY;
    // Past the bound the request is answered 503: no write may start after that.
    if (Date.now() >= deadline) throw storeTimedOut();
    // The queued event goes out on this connection before the envelope: NATS keeps one
    // connection's messages in order, so no follower sees `started` before `queued`. Issued in
    // the same turn as the envelope's publish, the two leave in one socket write (the client
    // flushes once per turn; a write costs more than the bytes in it). A held job (a batch's
    // later wave) announces it once its envelope is held.
    const held = extras.hold !== undefined;
    let queued: Enqueued;
    try {
      let device: string | null;
      // The record is the envelope's queued form (one definition, shared with the actor, which
      // starts the job by a compare-and-set on this revision without reading the record).
      [queued, device] = await Promise.all([
        this.jobs.enqueue(envelope, { announce: false }),
        deviceRead,
        aheadRead,
      ]);
      envelope.record_revision = queued.revision;
      if (device !== null) envelope.device = device;
    } catch (err) {
      if (/exists|wrong last sequence/i.test(String(err))) {
        throw new HttpError(409, `a job with id ${jobId} already exists`);
      }
      throw err;
    }
    let sent = false;
    try {
      if (Date.now() >= deadline) throw storeTimedOut();
      sent = true;
      if (extras.hold) await extras.hold(envelope);
      else {
        queued.announce();
        await this.publishEnvelope(envelope, traceparent);
      }
    } catch (err) {
      // Not queued (or not known to be). With an idempotency key, a repeat may have read the
      // queued record and published the envelope itself (its 202 waits for that ack): the record
      // stays `queued` and the key keeps naming the job. The reaper's enqueue check settles it
      // after ENQUEUE_GRACE: it finds the envelope (this late publish or a repeat's) or fails the
      // job NOT_ENQUEUED, which a later repeat then reports.
      if (extras.idempotent && !held) {
        if (typeof err === 'object' && err !== null) mayRun.add(err);
        throw err;
      }
      // Without a key no one else can have read the record: it is dropped (compare-and-delete on
      // the revision we created). With a dedup key only, a dedup hit may have answered 202 for
      // this job: it ends `queued → failed` NOT_ENQUEUED instead. Either way a job that started
      // meanwhile keeps its record, and a record left behind without its message is failed by
      // the reaper.
      const settled = extras.dedupKey
        ? (await this.jobs
            .failNotEnqueued(jobId, 'its admission failed before its message was queued')
            .catch(() => null)) !== null
        : await this.jobs.discard(jobId, queued.revision);
      if (sent && !settled && typeof err === 'object' && err !== null) mayRun.add(err);
      throw err;
    }
    const ahead = await aheadRead;
    this.depth.noteQueued(spec.context);
    // A held job (a batch's later wave) is queued now all the same: its record says so.
    if (held) queued.announce();
    this.audit.emit(AuditEvent.jobSubmitted, {
      request_id: jobId,
      job_id: jobId,
      username,
      device_ip: spec.host,
      platform: spec.platform,
      status: 'queued',
      duration_ms: performance.now() - started,
      caller: caller.id,
      source_ip: extras.source ?? null,
      context: spec.context,
      ...(extras.replayOf !== undefined ? { replay_of: extras.replayOf } : {}),
    });
    return {
      job_id: jobId,
      message: 'job enqueued',
      queue_position: ahead + 1,
      enqueued_at: enqueuedAt,
      timeout: this.options.jobTimeoutSeconds,
      deduplicated: false,
      idempotent: false,
    };
  }

  /**
   * Queues an envelope on its device's shard of its context's jobs; JetStream drops a repeat of
   * the same job id (the duplicate window is the stream's, whatever the subject).
   */
  async publishEnvelope(
    envelope: JobEnvelope,
    traceparent?: string,
    timeoutMs?: number,
  ): Promise<void> {
    const h = natsHeaders();
    injectTraceContext(h, traceparent); // the route's span; the caller's traceparent when off
    await this.js.publish(envelopeSubjectOf(envelope), encodeJson(envelope), {
      msgID: MessageIds.envelope(envelope.job_id),
      headers: h,
      ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
    });
  }
}
