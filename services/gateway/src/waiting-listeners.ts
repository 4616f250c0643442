import type { FastifyInstance } from 'fastify';
import { HealthStatus, type HealthRecord } from '@svc/proto';
import { publicNatsUrl } from '@svc/nats';
import { renamedLogger, type Logger } from '@svc/telemetry';
import type { GatewayConfig } from './config.js';
import { urlOf } from './gateway.js';
import { createHttpServer } from './http-server.js';
import { loadTls, type TlsMaterial } from './tls.js';

export interface WaitingListeners {
  /** The certificate the gateway keeps serving once NATS is up. */
  tls: TlsMaterial;
  /** Closes the listeners; the settings to start with listen on the ports they had. */
  ended(): Promise<GatewayConfig>;
}

/**
 * The gateway's listeners while NATS is not reached yet: a probe or a person gets an answer
 * (/healthcheck 503 `degraded`, anything else 503) naming what the gateway waits for, instead of
 * a refused connection. The full gateway takes over the same ports once NATS is up.
 */
export async function openWaitingListeners(
  config: GatewayConfig,
  log: Logger,
): Promise<WaitingListeners> {
  const tls = await loadTls(config.SVC_TLS_CERT, config.SVC_TLS_KEY, config.SVC_DATA_DIR, log);
  const message = `waiting for NATS at ${publicNatsUrl(config.NATS_URL)}`;
  const startedAt = Date.now();
  const accessLog = renamedLogger(log, 'svc.access');
  const open = (app: FastifyInstance): FastifyInstance => {
    const health = (): HealthRecord & { message: string } => ({
      status: HealthStatus.degraded,
      version: config.SVC_VERSION,
      uptime_seconds: Math.floor((Date.now() - startedAt) / 1000),
      components: {
        redis: { status: 'unhealthy' },
        queue: { status: 'unhealthy', depth: 0 },
        workers: { status: 'unhealthy', count: 0, active_jobs: 0 },
        failed_jobs: 0,
      },
      message,
    });
    app.get('/healthcheck', (_req, reply) => reply.code(503).send(health()));
    app.get('/v2/healthcheck', (_req, reply) => reply.code(503).send(health()));
    app.all('*', (_req, reply) => reply.code(503).header('Retry-After', '5').send({ message }));
    return app;
  };
  const https = open(createHttpServer({ tls, bodyLimit: config.SVC_BODY_LIMIT, accessLog }));
  await https.listen({ port: config.SVC_PORT, host: config.SVC_BIND || '0.0.0.0' });
  let http: FastifyInstance | null = null;
  if (config.SVC_HTTP_PORT >= 0) {
    http = open(createHttpServer({ tls: null, bodyLimit: config.SVC_BODY_LIMIT, accessLog }));
    await http.listen({ port: config.SVC_HTTP_PORT, host: config.SVC_BIND || '127.0.0.1' });
  }
  const portOf = (app: FastifyInstance) => {
    const addr = app.server.address();
    return addr && typeof addr === 'object' ? addr.port : 0;
  };
  log.info(
    {
      https: urlOf(https, 'https'),
      http: http ? urlOf(http, 'http') : null,
    },
    `gateway ${message}: answering 503 until NATS is up`,
  );
  return {
    tls,
    async ended() {
      const ports = { SVC_PORT: portOf(https), SVC_HTTP_PORT: http ? portOf(http) : -1 };
      await Promise.all([https.close(), http?.close()]);
      return { ...config, ...ports };
    },
  };
}
