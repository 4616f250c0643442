import Fastify, { type FastifyInstance } from 'fastify';
import type { TlsMaterial } from './tls.js';

export interface HttpServerOptions {
  tls: TlsMaterial | null;
  bodyLimit: number;
}

/**
 * A Fastify instance with the service's conventions: bodies arrive as text (routes parse JSON
 * themselves so that bad JSON gets the same 422 as any bad input), `{message}` error bodies,
 * TLS 1.2 or newer.
 */
export function createHttpServer(options: HttpServerOptions): FastifyInstance {
  // Both variants share one shape once built; the cast only merges their generic types.
  const app = (options.tls
    ? Fastify({
        logger: false,
        bodyLimit: options.bodyLimit,
        return503OnClosing: true,
        https: { key: options.tls.key, cert: options.tls.cert, minVersion: 'TLSv1.2' },
      })
    : Fastify({
        logger: false,
        bodyLimit: options.bodyLimit,
        return503OnClosing: true,
      })) as unknown as FastifyInstance;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
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
