import type { FastifySchema } from 'fastify';
import { Type, type TSchema } from 'typebox';
import {
  AskedCommandModeHeader,
  MessageBody,
  UUID_V4_PATTERN,
  ValidationErrorBody,
} from '@svc/proto';

/**
 * The building blocks of the route schemas, from which @fastify/swagger generates the OpenAPI
 * document: error answers with the specification's bodies, the response headers the gateway
 * sends, and the security of each route. The gateway's routes validate their input themselves
 * (to answer the specification's 422 for bad JSON too) through the same proto schemas these
 * schemas name, so the document describes exactly what is enforced.
 */

type Json = Record<string, unknown>;

/** A response header: its schema and what it means. */
const header = (schema: Json, description: string): Json => ({ ...schema, description });

/** Every response header the gateway sends, by name: one place for their meaning. */
export const HEADERS = {
  'X-Request-ID': header(
    { type: 'string', format: 'uuid' },
    'The correlation id of the request: its X-Request-ID when a UUID v4, else a fresh one; on a submission, the job id.',
  ),
  'Retry-After': header({ type: 'integer', minimum: 1 }, 'Seconds to wait before trying again.'),
  'X-RateLimit-Limit': header({ type: 'integer', minimum: 1 }, 'Requests allowed per minute.'),
  'X-RateLimit-Remaining': header({ type: 'integer', minimum: 0 }, 'Requests left this minute.'),
  'X-RateLimit-Reset': header({ type: 'integer', minimum: 1 }, 'Seconds until the window resets.'),
  'WWW-Authenticate': header(
    { type: 'string' },
    'The schemes accepted: `Basic realm="svc"` and/or `Bearer`.',
  ),
  Location: header(
    { type: 'string', format: 'uri-reference' },
    'Where the accepted resource is read: `/v2/jobs/{job_id}` (or `/v2/batches/{batch_id}`).',
  ),
  Deprecation: header(
    { type: 'string', pattern: '^@\\d+$' },
    'RFC 9745: when the v2 routes superseded this one (`@` and Unix seconds).',
  ),
  Sunset: header({ type: 'string' }, 'RFC 8594: the HTTP date after which v1 may be removed.'),
  Link: header(
    { type: 'string' },
    'The successor version: `</v2/openapi.json>; rel="successor-version"`.',
  ),
  'Cache-Control': header({ type: 'string', enum: ['no-store'] }, 'A token is never cached.'),
} as const;
type HeaderName = keyof typeof HEADERS;

/** Where a 202 points: the job (or batch) it accepted. */
export const jobLocation = (jobId: string): string => `/v2/jobs/${encodeURIComponent(jobId)}`;
export const batchLocation = (batchId: string): string =>
  `/v2/batches/${encodeURIComponent(batchId)}`;

/** Who may call a route. */
export type Access = 'caller' | 'admin' | 'none';

const SECURITY: Record<Access, Json[]> = {
  caller: [{ basic: [] }, { bearer: [] }],
  admin: [{ basic: [] }, { bearer: [] }],
  none: [],
};

/** References a schema registered with `addSchema` (every `$id` of `components`). */
export const ref = (schema: TSchema | string): Json => ({
  $ref: `${typeof schema === 'string' ? schema : String((schema as { $id?: string }).$id)}#`,
});

const MESSAGE_EXAMPLES: Record<number, string> = {
  400: 'job already finished',
  401: 'authentication required (Basic or Bearer)',
  403: 'this job belongs to another caller',
  404: 'job 3f1c9a4e-8d1b-4e53-9a51-2f7f3e1f0c11 not found',
  409: 'job already finished',
  415: 'Unsupported Media Type: text/plain',
  429: 'rate limit of 60 per minute reached; retry later',
  503: 'the job store is unavailable; retry later',
};

const ERROR_TEXT: Record<number, string> = {
  400: 'v1 only: the job had already finished',
  401: 'Missing or invalid credentials.',
  403: 'Role, context or ownership not permitted, or the device is locked out.',
  404: 'Not found.',
  409: 'Conflict with the current state.',
  415: 'A POST, PUT or PATCH without `Content-Type: application/json` (with or without a body).',
  422: 'Validation failure: every problem at once, with where (`loc`), what (`msg`) and `type`.',
  429: 'A rate limit, the brute-force limit, or the SSE connection limit was reached.',
  503: 'The queue is full or the store (NATS) is unavailable.',
};

/** Extra headers of each error status. */
const ERROR_HEADERS: Record<number, HeaderName[]> = {
  401: ['WWW-Authenticate'],
  429: ['Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'],
  503: ['Retry-After'],
};

export interface ResponseDoc {
  description: string;
  /** A schema (or a registered one) of a JSON body; none: no body. */
  body?: TSchema | Json;
  /** Another media type than JSON, e.g. `text/event-stream`. */
  mediaType?: string;
  example?: unknown;
  headers?: HeaderName[];
}

export interface RouteDoc {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  access: Access;
  deprecated?: boolean;
  body?: TSchema | Json;
  bodyExample?: unknown;
  /** The body may be left out (the document says `required: false`). */
  bodyOptional?: boolean;
  params?: Record<string, TSchema>;
  querystring?: TSchema | Json;
  requestHeaders?: Record<string, TSchema>;
  /** Answers other than errors, by status. */
  ok: Record<number, ResponseDoc>;
  /** Error statuses beyond those every route of its access has. */
  errors?: number[];
}

function response(doc: ResponseDoc, always: HeaderName[]): Json {
  const names = [...new Set([...always, ...(doc.headers ?? [])])];
  const out: Json = {
    description: doc.description,
    headers: Object.fromEntries(names.map((n) => [n, HEADERS[n]])),
  };
  if (doc.body === undefined) return { ...out, type: 'null' };
  const media: Json = { schema: doc.body };
  if (doc.example !== undefined) media['example'] = doc.example;
  return { ...out, content: { [doc.mediaType ?? 'application/json']: media } };
}

function errorResponse(status: number, always: HeaderName[]): Json {
  if (status === 422)
    return response(
      {
        description: ERROR_TEXT[422] ?? '',
        body: ref(ValidationErrorBody),
        example: {
          message: 'validation failed',
          validation_error: {
            json: [{ loc: ['body', 'host'], msg: 'field required', type: 'missing' }],
          },
        },
      },
      always,
    );
  return response(
    {
      description: ERROR_TEXT[status] ?? 'Error.',
      body: ref(MessageBody),
      example: { message: MESSAGE_EXAMPLES[status] ?? 'error' },
      headers: ERROR_HEADERS[status] ?? [],
    },
    always,
  );
}

/**
 * The schema of a route: what @fastify/swagger turns into its operation. Every answer carries
 * X-Request-ID (and the deprecation headers on v1); authenticated routes may answer 401, 429
 * (brute-force limit) and 503 (store); routes with a body may answer 415.
 */
export function routeSchema(doc: RouteDoc): FastifySchema {
  const always: HeaderName[] = doc.deprecated
    ? ['X-Request-ID', 'Deprecation', 'Sunset', 'Link']
    : ['X-Request-ID'];
  const errors = new Set(doc.errors ?? []);
  if (doc.access !== 'none') for (const s of [401, 429, 503]) errors.add(s);
  if (doc.body !== undefined) errors.add(415);
  const responses: Json = {};
  for (const [status, r] of Object.entries(doc.ok)) responses[status] = response(r, always);
  for (const status of [...errors].sort((a, b) => a - b))
    responses[String(status)] = errorResponse(status, always);

  const schema: Json = {
    operationId: doc.operationId,
    summary: doc.summary,
    tags: doc.tags,
    security: SECURITY[doc.access],
    response: responses,
  };
  if (doc.description) schema['description'] = doc.description;
  if (doc.deprecated) schema['deprecated'] = true;
  if (doc.params) schema['params'] = Type.Object(doc.params);
  if (doc.querystring) schema['querystring'] = doc.querystring;
  if (doc.requestHeaders) schema['headers'] = Type.Object(doc.requestHeaders);
  if (doc.bodyOptional) schema[BODY_OPTIONAL] = true;
  if (doc.body !== undefined) {
    schema['body'] = {
      content: {
        'application/json': {
          schema: doc.body,
          ...(doc.bodyExample !== undefined ? { example: doc.bodyExample } : {}),
        },
      },
    };
  }
  return schema;
}

/**
 * Marks an operation whose body is optional: @fastify/swagger copies `x-` keys of a route
 * schema onto its operation and always writes `requestBody.required: true`; the document's
 * final pass (openapi.ts) turns the mark into `required: false`.
 */
export const BODY_OPTIONAL = 'x-svc-body-optional';

/**
 * The wording of a schema's 422 issue where the generic one (`toIssues`) would say less, e.g.
 * a `pattern` that is a rule with a name. `name` replaces the last element of `loc` (a header's
 * canonical spelling). Ajv ignores the key; the document's final pass (openapi.ts) drops it.
 */
export const ISSUE = 'x-svc-issue';
export interface IssueText {
  msg: string;
  type: string;
  name?: string;
}

/** The 200 of an SSE route. */
export const SSE_ANSWER: ResponseDoc = {
  description: 'An event stream (`event:` and `data:` lines, data as JSON).',
  mediaType: 'text/event-stream',
  body: { type: 'string' },
  example:
    'event: status\ndata: {"job_id":"3f1c9a4e-8d1b-4e53-9a51-2f7f3e1f0c11","status":"started"}\n\n',
};

/** The request header of an SSE reconnect. */
export const LastEventIdHeader = {
  'last-event-id': Type.Optional(
    Type.String({
      description: 'The id of the last event the client has (EventSource sends it on reconnect).',
    }),
  ),
};

/** Path parameters used by several routes. */
export const JobIdParam = {
  job_id: Type.String({
    description: 'The job id (a UUID v4).',
    examples: ['3f1c9a4e-8d1b-4e53-9a51-2f7f3e1f0c11'],
  }),
};
export const BatchIdParam = {
  batch_id: Type.String({ description: 'The batch id.' }),
};

/** The optional headers of a submission (and of a replay or confirm: a new job). */
export const SubmitHeaders = {
  'x-request-id': Type.Optional(
    Type.String({
      // Empty: none sent (a fresh id is made). A pattern, not `format: uuid`: version 4 only.
      pattern: `^$|${UUID_V4_PATTERN}`,
      description: 'A UUID v4: the correlation id, and the job id.',
      [ISSUE]: {
        msg: 'value is not a valid UUID version 4',
        type: 'uuid_parsing',
        name: 'X-Request-ID',
      } satisfies IssueText,
    }),
  ),
  'x-idempotency-key': Type.Optional(
    Type.String({
      description:
        'Repeated within IDEMPOTENCY_TTL, returns the original job with idempotent true.',
    }),
  ),
  'x-svc-command-policy': Type.Optional(
    Type.String({
      ...AskedCommandModeHeader,
      [ISSUE]: {
        msg: 'value is not read-only or any',
        type: 'enum',
        name: 'X-Svc-Command-Policy',
      } satisfies IssueText,
    }),
  ),
};

/** An example job id and its enqueue answer, for the examples of the document. */
export const EXAMPLE_JOB_ID = '3f1c9a4e-8d1b-4e53-9a51-2f7f3e1f0c11';
export const ENQUEUE_EXAMPLE = {
  job_id: EXAMPLE_JOB_ID,
  message: 'job queued',
  queue_position: 1,
  enqueued_at: '2026-01-15T09:30:00.000Z',
  timeout: 300,
  deduplicated: false,
  idempotent: false,
};
export const JOB_RESULT_EXAMPLE = {
  job_id: EXAMPLE_JOB_ID,
  status: 'finished',
  results: { 'show version': 'Cisco IOS Software, Version 15.2(4)M' },
  command_status: [{ command: 'show version', status: 'ok' }],
  error: null,
  error_code: null,
  error_retryable: null,
  detected_platform: null,
  tags: null,
  enqueued_at: '2026-01-15T09:30:00.000Z',
  started_at: '2026-01-15T09:30:00.120Z',
  ended_at: '2026-01-15T09:30:01.480Z',
};
