import { randomUUID } from 'node:crypto';
import type { JetStreamClient } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import {
  AuditEvent,
  SendCommandRequest,
  SendCommandStructuredRequest,
  SendConfigRequest,
  Subjects,
  check,
  encodeJson,
  normalizeSubmission,
  type AuditLog,
  type EnqueueResponse,
  type JobEnvelope,
  type JobKind,
  type JobRecord,
  type JobSpec,
  type JobStore,
  type Sealer,
} from '@svc/proto';
import type { TSchema } from 'typebox';
import { mayUseContext, hasRole, type Caller } from './caller.js';
import { HttpError } from './http-errors.js';
import type { QueueDepth } from './queue-depth.js';

const SCHEMAS: Record<JobKind, TSchema> = {
  command: SendCommandRequest,
  config: SendConfigRequest,
  structured: SendCommandStructuredRequest,
};

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

export interface IntakeOptions {
  contexts: readonly string[];
  jobTimeoutSeconds: number;
  maxQueueDepth: number;
}

export interface SubmitRequest {
  kind: JobKind;
  /** The raw JSON text of the body. */
  body: string | undefined;
  caller: Caller;
  /** X-Request-ID as sent, if any. */
  requestId: string | undefined;
  /** Schema override (v1 routes accept retired fields). */
  schema?: TSchema;
  /** W3C trace context of the request, carried to the actor in message headers. */
  traceparent?: string;
}

/**
 * Turns a submission into a queued job: validation, the job record, the sealed envelope on the
 * context's stream. Nothing is queued unless every check passed.
 */
export class JobIntake {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jobs: JobStore,
    private readonly sealer: Sealer,
    private readonly depth: QueueDepth,
    private readonly audit: AuditLog,
    private readonly options: IntakeOptions,
  ) {}

  /** Validates X-Request-ID; returns the job id to use. */
  static jobIdFrom(requestId: string | undefined): string {
    if (requestId === undefined || requestId === '') return randomUUID();
    if (!UUID_V4.test(requestId)) {
      throw HttpError.validation([
        { loc: ['header', 'X-Request-ID'], msg: 'value is not a valid UUID version 4', type: 'uuid_parsing' },
      ]);
    }
    return requestId.toLowerCase();
  }

  async submit(req: SubmitRequest): Promise<EnqueueResponse> {
    const { caller, kind } = req;
    if (!hasRole(req.caller, 'operator')) {
      throw new HttpError(403, `role ${caller.role} may not submit jobs`);
    }
    const jobId = JobIntake.jobIdFrom(req.requestId);
    const parsed = parseJsonBody(req.body);
    const checked = check<SendConfigRequest & SendCommandStructuredRequest>(
      req.schema ?? SCHEMAS[kind],
      parsed,
      'body',
    );
    if (!checked.ok) throw HttpError.validation(checked.issues);
    const normalized = normalizeSubmission(checked.value, {
      kind,
      basic: caller.basic,
      contexts: this.options.contexts,
    });
    if (!normalized.ok) throw HttpError.validation(normalized.issues);
    const { spec, secrets } = normalized;
    if (!mayUseContext(caller, spec.context)) {
      throw new HttpError(403, `this key may not use context ${spec.context}`);
    }
    if (this.options.maxQueueDepth > 0) {
      const depth = await this.depth.forContext(spec.context);
      if (depth >= this.options.maxQueueDepth) {
        throw new HttpError(503, `queue of context ${spec.context} is full`, { 'Retry-After': '10' });
      }
    }
    return this.enqueue(jobId, spec, secrets.username, this.sealer.seal(secrets), caller, req.traceparent);
  }

  /** Writes the record and publishes the envelope. Used by submissions and replays. */
  async enqueue(
    jobId: string,
    spec: JobSpec,
    username: string,
    sealed: string,
    caller: Caller,
    traceparent?: string,
  ): Promise<EnqueueResponse> {
    const started = performance.now();
    const enqueuedAt = new Date().toISOString();
    const record: JobRecord = {
      job_id: jobId,
      status: 'queued',
      owner: caller.id,
      username,
      spec,
      enqueued_at: enqueuedAt,
      started_at: null,
      ended_at: null,
      results: null,
      error: null,
      error_code: null,
      error_retryable: null,
      detected_platform: null,
      actor_host: null,
      dedup_key: null,
    };
    try {
      await this.jobs.create(record);
    } catch (err) {
      if (/exists|wrong last sequence/i.test(String(err))) {
        throw new HttpError(409, `a job with id ${jobId} already exists`);
      }
      throw err;
    }
    const envelope: JobEnvelope = {
      v: 1,
      job_id: jobId,
      owner: caller.id,
      username,
      spec,
      sealed,
      enqueued_at: enqueuedAt,
      placement: 0,
    };
    const h = natsHeaders();
    if (traceparent) h.set('traceparent', traceparent);
    try {
      await this.js.publish(Subjects.jobs(spec.context), encodeJson(envelope), {
        msgID: jobId,
        headers: h,
      });
    } catch (err) {
      // Not queued: drop the record so that no job is left that will never run.
      await this.jobs.kv.delete(jobId).catch(() => undefined);
      throw err;
    }
    await this.jobs.publishEvent(record).catch(() => undefined);
    const position = await this.depth.forContext(spec.context).catch(() => 1);
    this.audit.emit(AuditEvent.jobSubmitted, {
      request_id: jobId,
      job_id: jobId,
      username,
      device_ip: spec.host,
      platform: spec.platform,
      status: 'queued',
      duration_ms: performance.now() - started,
    });
    return {
      job_id: jobId,
      message: 'job enqueued',
      queue_position: Math.max(1, position),
      enqueued_at: enqueuedAt,
      timeout: this.options.jobTimeoutSeconds,
      deduplicated: false,
      idempotent: false,
    };
  }
}

/** JSON text → value; a body that is not JSON is a 422 like any other bad input. */
export function parseJsonBody(body: string | undefined): unknown {
  if (body === undefined || body.trim() === '') {
    throw HttpError.validation([{ loc: ['body'], msg: 'a JSON body is required', type: 'missing' }]);
  }
  try {
    return JSON.parse(body) as unknown;
  } catch {
    throw HttpError.validation([{ loc: ['body'], msg: 'body is not valid JSON', type: 'json_invalid' }]);
  }
}
