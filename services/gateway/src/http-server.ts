import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { TlsMaterial } from './tls.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
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

/** Methods that change state: they need `Content-Type: application/json`, body or not. */
const WRITES = new Set(['POST', 'PUT', 'PATCH']);
const requestIds = new WeakMap<FastifyRequest, string>();

/** The correlation id of a request: its X-Request-ID when a UUID v4, else a fresh one. */
export function requestIdOf(req: FastifyRequest): string {
  return requestIds.get(req) ?? 'unknown';
}

export interface HttpServerOptions {
  tls: TlsMaterial | null;
  bodyLimit: number;
}

/**
 * A Fastify instance with the service's conventions: bodies arrive as text (routes parse JSON
 * themselves so that bad JSON gets the same 422 as any bad input), `{message}` error bodies,
 * TLS 1.2 or newer, `X-Request-ID` on every response. Every POST, PUT and PATCH must say
 * `Content-Type: application/json`, with or without a body (415 otherwise): a page on another
 * site can send a bodiless POST, `text/plain`, form or multipart bodies with a browser's cached
 * Basic credentials, but not that header without a CORS preflight, which this service never
 * grants.
 */
export function createHttpServer(options: HttpServerOptions): FastifyInstance {
  // Both variants share one shape once built; the cast only merges their generic types.
  const app = (options.tls
    ? Fastify({
        logger: false,
        bodyLimit: options.bodyLimit,
        return503OnClosing: true,
        https: {
          key: options.tls.key,
          cert: options.tls.cert,
          minVersion: 'TLSv1.2',
          ciphers: TLS_CIPHERS,
          honorCipherOrder: true,
        },
      })
    : Fastify({
        logger: false,
        bodyLimit: options.bodyLimit,
        return503OnClosing: true,
      })) as unknown as FastifyInstance;
  // Route schemas document the API (the OpenAPI document is generated from them); the routes
  // validate input themselves through the same proto schemas, to answer bad JSON and bad fields
  // with one 422 body, and answers are sent as built. So Fastify compiles nothing from them.
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) =>
    done(null, body),
  );
  app.addHook('onRequest', (req, reply, done) => {
    const sent = req.headers['x-request-id'];
    const id = typeof sent === 'string' && UUID_V4.test(sent) ? sent.toLowerCase() : randomUUID();
    requestIds.set(req, id);
    // On the raw response so that hijacked (SSE) answers carry it too; a route's own
    // X-Request-ID (the job id of a submission) takes precedence.
    reply.raw.setHeader('X-Request-ID', id);
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
