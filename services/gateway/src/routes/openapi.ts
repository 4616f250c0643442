import type { FastifyInstance } from 'fastify';
import type { TSchema } from 'typebox';
import {
  BatchCreated,
  BatchRequest,
  BatchSummary,
  EnqueueResponse,
  HealthRecord,
  JobEvent,
  JobResult,
  MessageBody,
  SendCommandRequest,
  SendCommandStructuredRequest,
  SendConfigRequest,
  Transcript,
  TranscriptEntry,
  V1SendCommandRequest,
  V1SendCommandStructuredRequest,
  ValidationErrorBody,
} from '@svc/proto';
import type { GatewayContext } from '../gateway-context.js';
import {
  ContextList,
  ContextRecord,
  FailedJobItem,
  FailedJobList,
  JobList,
  JobSummary,
  Pagination,
} from './job-queries.js';
import { PlatformList, PlatformRecord } from './platforms.js';

/** Schemas published under components/schemas, by name; the names are their `$id`s. */
const COMPONENTS: Record<string, TSchema> = {
  SendCommandRequest,
  SendConfigRequest,
  SendCommandStructuredRequest,
  V1SendCommandRequest,
  V1SendCommandStructuredRequest,
  EnqueueResponse,
  BatchRequest,
  BatchCreated,
  BatchSummary,
  JobResult,
  JobSummary,
  Pagination,
  JobList,
  FailedJobItem,
  FailedJobList,
  ContextRecord,
  ContextList,
  PlatformRecord,
  PlatformList,
  JobEvent,
  Transcript,
  TranscriptEntry,
  HealthRecord,
  MessageBody,
  ValidationErrorBody,
};

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Operation = Record<string, Json>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const json = (name: string, description: string): Json => ({
  description,
  content: { 'application/json': { schema: ref(name) } },
});
const message = (description: string) => json('MessageBody', description);
const errors = (...codes: number[]): Record<string, Json> => {
  const text: Record<number, string> = {
    400: 'v1 only: the job had already finished',
    401: 'missing or invalid credentials',
    403: 'role, context or ownership not permitted, or device locked out',
    404: 'job id not found',
    409: 'conflict (already finished, or job id exists)',
    429: 'rate limit, or SSE connection limit reached',
    503: 'queue full, or the store is unavailable (Retry-After: 10)',
  };
  const out: Record<string, Json> = {};
  for (const c of codes)
    out[String(c)] =
      c === 422 ? json('ValidationErrorBody', 'validation failure') : message(text[c] ?? '');
  return out;
};
const jobIdParam: Json = {
  name: 'job_id',
  in: 'path',
  required: true,
  schema: { type: 'string' },
};
const batchIdParam: Json = {
  name: 'batch_id',
  in: 'path',
  required: true,
  schema: { type: 'string' },
};
const secured: Json = [{ basic: [] }, { bearer: [] }];

/** Replaces nested schemas that are components by a $ref and drops `$id` (OpenAPI names them). */
function component(schema: unknown, top = true): Json {
  if (Array.isArray(schema)) return schema.map((s) => component(s, false));
  if (schema === null || typeof schema !== 'object') return schema as Json;
  const obj = schema as Record<string, unknown>;
  const id = obj['$id'];
  if (!top && typeof id === 'string' && id in COMPONENTS) return ref(id);
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(obj)) if (k !== '$id') out[k] = component(v, false);
  return out;
}

function submit(summary: string, request: string, deprecated = false): Operation {
  return {
    summary,
    ...(deprecated ? { deprecated: true } : {}),
    security: secured,
    parameters: [
      {
        name: 'X-Request-ID',
        in: 'header',
        schema: { type: 'string', format: 'uuid' },
        description: 'UUID v4; becomes the job id',
      },
      { name: 'X-Idempotency-Key', in: 'header', schema: { type: 'string' } },
    ],
    requestBody: { required: true, content: { 'application/json': { schema: ref(request) } } },
    responses: {
      '202': json('EnqueueResponse', 'job accepted'),
      ...errors(401, 403, 409, 422, 429, 503),
    },
  };
}

function read(summary: string, deprecated = false): Operation {
  return {
    summary,
    ...(deprecated ? { deprecated: true } : {}),
    security: secured,
    parameters: [jobIdParam],
    responses: { '200': json('JobResult', 'the job record'), ...errors(401, 403, 404, 503) },
  };
}

const listParams: Json = [
  { name: 'page', in: 'query', schema: { type: 'integer', minimum: 1, default: 1 } },
  {
    name: 'per_page',
    in: 'query',
    schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  },
  {
    name: 'status',
    in: 'query',
    schema: { enum: ['queued', 'started', 'finished', 'failed', 'cancelled'] },
  },
  {
    name: 'tag',
    in: 'query',
    schema: { type: 'string', pattern: '^[A-Za-z0-9_:-]{1,64}:[A-Za-z0-9_:-]{1,64}$' },
    description: 'key:value',
  },
];

function list(summary: string, deprecated = false): Operation {
  return {
    summary,
    ...(deprecated ? { deprecated: true } : {}),
    security: secured,
    parameters: listParams,
    responses: {
      '200': json('JobList', "the caller's jobs, newest first"),
      ...errors(401, 422, 503),
    },
  };
}

const failed = (deprecated = false): Operation => ({
  summary: "The caller's failed jobs (sanitized, no credentials)",
  ...(deprecated ? { deprecated: true } : {}),
  security: secured,
  responses: { '200': json('FailedJobList', 'failed-job registry entries'), ...errors(401, 503) },
});

const contexts = (deprecated = false): Operation => ({
  summary: 'Routing contexts with live workers and queue depth',
  ...(deprecated ? { deprecated: true } : {}),
  security: secured,
  responses: { '200': json('ContextList', 'contexts the caller may use'), ...errors(401, 503) },
});

const platforms = (): Operation => ({
  summary: 'Platforms a job may name: built-in drivers and the driver files of SVC_DRIVERS_DIR',
  security: secured,
  responses: { '200': json('PlatformList', 'every platform, built in first'), ...errors(401, 503) },
});

const lastEventIdParam: Json = {
  name: 'Last-Event-ID',
  in: 'header',
  required: false,
  description: 'id of the last event the client has (sent by EventSource clients on reconnect)',
  schema: { type: 'string' },
};

const stream = (): Operation => ({
  summary: 'Server-Sent Events of a job: status, result, timeout',
  description:
    'Events: `status` (data: job_id, status) on every change; `result` (data: job_id, status, results, error, error_code, error_retryable) once at the terminal state, then the stream ends; `timeout` (data: job_id, message) after SSE_TIMEOUT (default 300 s). The stream starts with `retry:` (SSE_RETRY); `status` and `result` carry `id:` (queued 1, started 2, terminal status 3, result 4). With Last-Event-ID only later events are sent; 204 once the client has the result of an ended job. At most SSE_MAX_CONNECTIONS (default 100) streams per gateway process.',
  security: secured,
  parameters: [jobIdParam, lastEventIdParam],
  responses: {
    '200': {
      description: 'event stream',
      content: { 'text/event-stream': { schema: { type: 'string' } } },
    },
    '204': { description: 'the job ended and the client has its result (Last-Event-ID): stop' },
    ...errors(401, 403, 404, 429, 503),
  },
});

const replay = (deprecated = false): Operation => ({
  summary: 'Run a failed job again as a new job, with the caller’s current credentials',
  ...(deprecated ? { deprecated: true } : {}),
  security: secured,
  parameters: [jobIdParam],
  responses: {
    '202': json('EnqueueResponse', 'new job accepted'),
    ...errors(401, 403, 404, 409, 422, 503),
  },
});

const health: Operation = {
  summary: 'Health of the store, queue and workers (no authentication)',
  security: [],
  responses: {
    '200': json('HealthRecord', 'healthy or no_workers'),
    '503': json('HealthRecord', 'degraded: the store (NATS) is unreachable'),
  },
};

/** The OpenAPI 3.1 document of the API, built from the proto schemas. Pure: no I/O. */
export function buildOpenApi(version: string): Record<string, Json> {
  const schemas: Record<string, Json> = {};
  for (const [name, schema] of Object.entries(COMPONENTS)) schemas[name] = component(schema);
  const paths: Record<string, Record<string, Json>> = {
    '/v2/send-command': { post: submit('Run read-only commands', 'SendCommandRequest') },
    '/v2/send-command/{job_id}': {
      get: read('A job submitted with send-command'),
      delete: {
        summary: 'Cancel a queued or running job (best effort)',
        security: secured,
        parameters: [jobIdParam],
        responses: { '204': { description: 'cancelled' }, ...errors(401, 403, 404, 409, 503) },
      },
    },
    '/v2/send-config': { post: submit('Push configuration commands', 'SendConfigRequest') },
    '/v2/send-command-structured': {
      post: submit('Run commands and parse their output', 'SendCommandStructuredRequest'),
    },
    '/v2/send-command-structured/{job_id}': { get: read('A structured job') },
    '/v2/jobs': { get: list("List the caller's jobs (admin keys: all jobs)") },
    '/v2/jobs/failed': { get: failed() },
    '/v2/jobs/{job_id}': { get: read('A job with full results') },
    '/v2/jobs/{job_id}/replay': { post: replay() },
    '/v2/jobs/{job_id}/transcript': {
      get: {
        summary:
          'The device session transcript of a job (its submitter only): kept for failed jobs, on request, or per context',
        security: secured,
        parameters: [jobIdParam],
        responses: {
          '200': json('Transcript', 'what was sent and received, redacted and size-capped'),
          ...errors(401, 403, 404, 503),
        },
      },
    },
    '/v2/jobs/{job_id}/stream': { get: stream() },
    '/v2/send-command/{job_id}/stream': { get: stream() },
    '/v2/contexts': { get: contexts() },
    '/v2/platforms': { get: platforms() },
    '/v2/batches': {
      post: {
        summary: 'Run one job per device (command, config or structured), with rollout control',
        security: secured,
        requestBody: {
          required: true,
          content: { 'application/json': { schema: ref('BatchRequest') } },
        },
        responses: {
          '202': json('BatchCreated', 'batch accepted: one job per device'),
          ...errors(401, 403, 422, 429, 503),
        },
      },
      get: {
        summary: "The caller's batches, newest first",
        security: secured,
        responses: {
          '200': {
            description: '{ batches: [{ batch_id, kind, status, total, created_at, ended_at }] }',
            content: { 'application/json': { schema: { type: 'object' } } },
          },
          ...errors(401, 503),
        },
      },
    },
    '/v2/batches/{batch_id}': {
      get: {
        summary: 'A batch: status, counts per job status and per error code',
        security: secured,
        parameters: [batchIdParam],
        responses: { '200': json('BatchSummary', 'the batch'), ...errors(401, 403, 404, 503) },
      },
      delete: {
        summary: 'Cancel the jobs of a batch that have not started',
        security: secured,
        parameters: [batchIdParam],
        responses: {
          '200': json('BatchSummary', 'the batch after the cancellation'),
          ...errors(401, 403, 404, 409, 503),
        },
      },
    },
    '/v2/batches/{batch_id}/jobs': {
      get: {
        summary: 'The jobs of a batch with their results, in device order',
        security: secured,
        parameters: [
          batchIdParam,
          { name: 'page', in: 'query', schema: { type: 'integer', minimum: 1, default: 1 } },
          {
            name: 'per_page',
            in: 'query',
            schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
          },
        ],
        responses: {
          '200': {
            description: '{ batch_id, page, per_page, total, jobs: [JobResult + host, port] }',
            content: { 'application/json': { schema: { type: 'object' } } },
          },
          ...errors(401, 403, 404, 422, 503),
        },
      },
    },
    '/v2/batches/{batch_id}/stream': {
      get: {
        summary: 'Server-Sent Events of a batch: one `job` per device event, then `summary`',
        description:
          'Events: `job` (data: job_id, host, status, error_code; id: its SVC_EVENTS sequence) for every status change of every device, from the start of the batch; `summary` (data: the GET body; id: `end`) once the batch ended, then the stream ends; `timeout` after SSE_TIMEOUT. With Last-Event-ID only later events are sent; 204 once the client has the summary. Counts against SSE_MAX_CONNECTIONS.',
        security: secured,
        parameters: [batchIdParam, lastEventIdParam],
        responses: {
          '200': {
            description: 'event stream',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          '204': { description: 'the batch ended and the client has its summary: stop' },
          ...errors(401, 403, 404, 429, 503),
        },
      },
    },
    '/v1/send_command': {
      post: submit('Deprecated: use /v2/send-command', 'V1SendCommandRequest', true),
    },
    '/v1/send_command/{job_id}': {
      get: read('Deprecated: use GET /v2/send-command/{job_id}', true),
      delete: {
        summary: 'Deprecated cancel: 200 on success, 404 unknown, 400 already finished',
        deprecated: true,
        security: secured,
        parameters: [jobIdParam],
        responses: { '200': message('cancelled'), ...errors(400, 401, 403, 404, 503) },
      },
    },
    '/v1/send_command_structured': {
      post: submit(
        'Deprecated: use /v2/send-command-structured',
        'V1SendCommandStructuredRequest',
        true,
      ),
    },
    '/v1/send_command_structured/{job_id}': {
      get: read('Deprecated: use /v2/send-command-structured/{job_id}', true),
    },
    '/v1/jobs': { get: list('Deprecated: use /v2/jobs', true) },
    '/v1/jobs/failed': { get: failed(true) },
    '/v1/jobs/{job_id}/replay': { post: replay(true) },
    '/v1/contexts': { get: contexts(true) },
    '/healthcheck': { get: health },
    '/v2/healthcheck': { get: health },
    '/metrics': {
      get: {
        summary: 'Prometheus metrics (no authentication)',
        security: [],
        responses: {
          '200': {
            description: 'Prometheus text format',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
        },
      },
    },
    '/v2/openapi.json': {
      get: {
        summary: 'This document (no authentication)',
        security: [],
        responses: {
          '200': {
            description: 'OpenAPI 3.1',
            content: { 'application/json': { schema: { type: 'object' } } },
          },
        },
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc: network device command service',
      version,
      description:
        'Asynchronous HTTPS API in front of SSH-reachable network devices. Every /v1 answer carries Deprecation and Sunset headers.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: secured,
    paths,
    components: {
      schemas,
      securitySchemes: {
        basic: { type: 'http', scheme: 'basic', description: 'the device credentials' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'an API key' },
      },
    },
  };
}

/** GET /v2/openapi.json, no authentication; built once per server. */
export function registerOpenApiRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const doc = JSON.stringify(buildOpenApi(ctx.config.SVC_VERSION));
  app.get('/v2/openapi.json', (_req, reply) =>
    reply.code(200).header('content-type', 'application/json; charset=utf-8').send(doc),
  );
}
