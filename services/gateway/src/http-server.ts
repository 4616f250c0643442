import { randomUUID } from 'node:crypto';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import {
  BatchCreated,
  BatchSummary,
  EnqueueResponse,
  HealthRecord,
  MessageBody,
  ValidationErrorBody,
  isJobId,
} from '@svc/proto';
import type { Logger } from '@svc/telemetry';
import { buildRequestValidator, parseJsonBodies, schemaErrorFormatter } from './request-input.js';
import { BatchList } from './routes/batches.js';
import { ContextList, FailedJobList } from './routes/job-queries.js';
import { ApiKeyList, IssuedApiKey } from './routes/api-keys.js';
import { PlatformList } from './routes/platforms.js';
import { ref } from './routes/route-schemas.js';
import type { TlsMaterial } from './tls.js';

/**
 * TLS 1.2 suites: forward secrecy (ECDHE) with an AEAD (AES-GCM, ChaCha20-Poly1305) only, no
 * CBC or SHA-1; the TLS 1.3 suites are all AEAD.
 */
const TLS_CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');
/** One year, as HSTS preload lists expect. */
const HSTS = 'max-age=31536000';

/**
 * Answers serialized from their schema (fast-json-stringify), by the `$ref` of the response
 * schema: those whose every writer builds exactly the schema's fields, so that nothing a client
 * sees is dropped (test/response-serialization.test.ts round-trips each, complete):
 * JobIntake's enqueue answers; `sendValidation`, `sendMessage` and the server's own errors;
 * failed jobs (`sanitize`), contexts, the batch list, a batch's summary (`summarize`: GET and
 * DELETE) and its 202 (`Batches.create`), the platforms (`recordOf`), health
 * (`ClusterStatus.health`; the listeners waiting for NATS answer without a schema), an issued
 * API key (`issued`: create and rotate) and the key list (picked in its route). Every other answer is JSON.stringify'd as built:
 * fast-json-stringify drops what a schema does not name (and fails on a value no branch of a
 * union takes), while those answers carry store records as they were read, which keep a later
 * release's fields and values (a job's `command_status`, `checks` and `tags`, a transcript, a
 * pinned key), or results of any shape.
 * Built at the first route, not at load: the route modules import this one.
 */
let serialized: Set<string> | undefined;
const serializedRefs = (): Set<string> =>
  (serialized ??= new Set(
    [
      EnqueueResponse,
      MessageBody,
      ValidationErrorBody,
      FailedJobList,
      ContextList,
      BatchList,
      BatchSummary,
      BatchCreated,
      PlatformList,
      HealthRecord,
      IssuedApiKey,
      ApiKeyList,
    ].map((s) => String(ref(s).$ref)),
  ));

/**
 * One serializer per schema for the process: every route answers errors with the same schema,
 * and building one (fast-json-stringify checks and generates code) per route and status made a
 * gateway's start take seconds.
 */
const serializers = new Map<string, (data: unknown) => string>();

function buildSerializer(shared: unknown, options: unknown) {
  const compile = SerializerSelector()(shared, options as never);
  return (def: { method: string; url: string; httpStatus: string; schema?: unknown }) => {
    const ref = (def.schema as { $ref?: unknown } | undefined)?.$ref;
    if (typeof ref !== 'string' || !serializedRefs().has(ref)) {
      return (data: unknown) => JSON.stringify(data);
    }
    let serialize = serializers.get(ref);
    if (!serialize) {
      serialize = compile(def) as (data: unknown) => string;
      serializers.set(ref, serialize);
    }
    return serialize;
  };
}

/** Methods that change state: they need `Content-Type: application/json`, body or not. */
const WRITES = new Set(['POST', 'PUT', 'PATCH']);
const requestIds = new WeakMap<FastifyRequest, string>();
const deadlines = new WeakMap<FastifyRequest, number>();
/**
 * Routes not bounded by STORE_TIMEOUT as a whole: health and metrics have their own answers
 * while the store is away (`degraded`, the last values); a batch admits up to
 * BATCH_MAX_DEVICES jobs, each of them bounded by STORE_TIMEOUT itself.
 */
const UNBOUNDED_ROUTES = new Set([
  'GET /healthcheck',
  'GET /v2/healthcheck',
  'GET /metrics',
  'POST /v2/batches',
]);

/**
 * When a request is answered 503 at the latest (ms since the epoch): routes that write pass it
 * on, so that nothing starts after the answer. Infinity on a server without STORE_TIMEOUT.
 */
export function deadlineOf(req: FastifyRequest): number {
  return deadlines.get(req) ?? Number.POSITIVE_INFINITY;
}

const callers = new WeakMap<FastifyRequest, string>();

/** Scrapes by probes and Prometheus: logged at debug, they would drown the rest at info. */
const SCRAPES = new Set(['/healthcheck', '/v2/healthcheck', '/metrics']);

/** Names the authenticated caller of a request in its access-log line (see `createHttpServer`). */
export function noteCaller(req: FastifyRequest, callerId: string): void {
  callers.set(req, callerId);
}

/** The correlation id of a request: its X-Request-ID when a UUID v4, else a fresh one. */
export function requestIdOf(req: FastifyRequest): string {
  return requestIds.get(req) ?? 'unknown';
}

export interface HttpServerOptions {
  tls: TlsMaterial | null;
  bodyLimit: number;
  /**
   * STORE_TIMEOUT in ms: a request not answered by then gets 503 with Retry-After (SPEC's
   * answer to a store error) instead of waiting for the client's timeout. Streams (hijacked
   * replies) are not bounded. None when absent.
   */
  storeTimeoutMs?: number;
  /**
   * The access log (logger `svc.access`): one line per request once its answer is sent or the
   * connection closes. Absent: no access log (the OpenAPI document builder).
   */
  accessLog?: Logger;
}

/**
 * A Fastify instance with the service's conventions: input judged by the route schemas with the
 * project's Ajv, answered by the handlers in their turn (request-input.ts: bad JSON gets the
 * same 422 as any bad input, after authentication), `{message}` error bodies,
 * TLS 1.2 or newer, `X-Request-ID` on every response. Every POST, PUT and PATCH must say
 * `Content-Type: application/json`, with or without a body (415 otherwise): a page on another
 * site can send a bodiless POST, `text/plain`, form or multipart bodies with a browser's cached
 * Basic credentials, but not that header without a CORS preflight, which this service never
 * grants.
 */
export function createHttpServer(options: HttpServerOptions): FastifyInstance {
  // Both variants share one shape once built; the cast only merges their generic types.
  // Fastify's own request lines would log the request headers (Authorization among them) and
  // two lines per request: the access line below is written instead.
  const common = {
    ...(options.accessLog ? { loggerInstance: options.accessLog } : { logger: false }),
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: options.bodyLimit,
    return503OnClosing: true,
    // Fastify's types name Ajv's compile signature here, not the route-schema compiler it calls.
    schemaController: {
      compilersFactory: {
        buildValidator: buildRequestValidator as never,
        buildSerializer: buildSerializer as never,
      },
    },
    schemaErrorFormatter,
  };
  const app = (options.tls
    ? Fastify({
        ...common,
        https: {
          key: options.tls.key,
          cert: options.tls.cert,
          minVersion: 'TLSv1.2',
          ciphers: TLS_CIPHERS,
          honorCipherOrder: true,
        },
      })
    : Fastify(common)) as unknown as FastifyInstance;
  // Fastify validates each request against its route schema but answers nothing itself: the
  // handler answers 401/403 first, then each part's 422 in its turn (`validInput`).
  app.addHook('onRoute', (route) => {
    route.attachValidation = true;
  });
  parseJsonBodies(app);
  app.addHook('onRequest', (req, reply, done) => {
    const sent = req.headers['x-request-id'];
    const id = typeof sent === 'string' && isJobId(sent) ? sent.toLowerCase() : randomUUID();
    requestIds.set(req, id);
    // On the raw response so that hijacked (SSE) answers carry it too; a route's own
    // X-Request-ID (the job id of a submission) takes precedence.
    reply.raw.setHeader('X-Request-ID', id);
    const bound = options.storeTimeoutMs;
    const route = `${req.method} ${req.routeOptions.url ?? ''}`;
    if (bound !== undefined && !UNBOUNDED_ROUTES.has(route)) {
      deadlines.set(req, Date.now() + bound);
      const timer = setTimeout(() => {
        if (reply.sent || reply.raw.headersSent) return;
        void reply
          .code(503)
          .header('Retry-After', '10')
          .send({ message: 'the job store did not answer in time; retry later' });
        // One answer a request: the route's own, when its work ends later, is not sent (Fastify
        // would log "Reply was already sent" for it), whichever route it is.
        reply.send = () => reply;
      }, bound);
      timer.unref();
      reply.raw.once('close', () => clearTimeout(timer));
    }
    const log = options.accessLog;
    if (log) {
      const started = performance.now();
      // On the raw response's close: hijacked (SSE) and aborted answers are logged too.
      reply.raw.once('close', () => {
        const path = req.url.split('?')[0] ?? '';
        const sentId = reply.raw.getHeader('X-Request-ID');
        const fields = {
          method: req.method,
          // Without the query string: a client may put a secret there.
          path,
          status: reply.raw.statusCode,
          duration_ms: Math.round((performance.now() - started) * 10) / 10,
          request_id: typeof sentId === 'string' ? sentId : id,
          caller: callers.get(req) ?? null,
          source_ip: req.ip,
          ...(reply.raw.writableFinished ? {} : { aborted: true }),
        };
        if (SCRAPES.has(path)) log.debug(fields, 'request');
        else log.info(fields, 'request');
      });
    }
    // A browser that once reached the service over HTTPS never falls back to plain HTTP.
    if (options.tls) reply.raw.setHeader('Strict-Transport-Security', HSTS);
    done();
  });
  // In preParsing, after the routes' own onRequest hooks (v1's deprecation headers), before
  // any handler: nothing a refused request asks for is done. Unknown routes stay 404.
  app.addHook('preParsing', (req, reply, _payload, done) => {
    if (WRITES.has(req.method) && req.routeOptions.url !== undefined) {
      const type = req.headers['content-type'];
      if (!isJson(type)) {
        void reply.code(415).send({
          message: `Unsupported Media Type: ${type === undefined || type === '' ? 'none' : type.split(';')[0]!.trim()}; ${req.method} requests need Content-Type: application/json`,
        });
        return;
      }
    }
    done();
  });
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({ message: `no route ${req.method} ${req.url.split('?')[0] ?? ''}` }),
  );
  app.setErrorHandler((err: { statusCode?: number; message?: string }, _req, reply) => {
    const status =
      err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    return reply
      .code(status)
      .send({ message: status < 500 ? (err.message ?? 'bad request') : 'internal error' });
  });
  return app;
}

/** `application/json`, parameters (`charset`) allowed, case-insensitive. */
function isJson(type: string | undefined): boolean {
  return type !== undefined && type.split(';')[0]!.trim().toLowerCase() === 'application/json';
}
