import type { FastifyInstance, FastifyReply } from 'fastify';
import { HealthRecord } from '@svc/proto';
import type { ClusterStatus } from '../cluster-status.js';
import { ref, routeSchema } from './route-schemas.js';

const HEALTH_EXAMPLE = {
  status: 'healthy',
  version: '0.1.0',
  uptime_seconds: 3600,
  components: {
    redis: { status: 'healthy' },
    queue: { status: 'healthy', depth: 0 },
    workers: { status: 'healthy', count: 2, active_jobs: 0 },
    failed_jobs: 0,
  },
};

/** /healthcheck (permanent, unversioned, no authentication) and its /v2 alias. */
export function registerOperationRoutes(app: FastifyInstance, status: ClusterStatus): void {
  const health = async (_req: unknown, reply: FastifyReply) => {
    const record = await status.health();
    // Probes read the code: only a store outage is unhealthy; no_workers still serves reads.
    return reply.code(record.status === 'degraded' ? 503 : 200).send(record);
  };
  const schema = (operationId: string) => ({
    schema: routeSchema({
      operationId,
      summary: 'Health of the store, queue and workers (no authentication)',
      tags: ['operations'],
      access: 'none',
      ok: {
        200: {
          description: 'healthy, or no_workers (reads are still served).',
          body: ref(HealthRecord),
          example: HEALTH_EXAMPLE,
        },
        503: {
          description: 'degraded: the store (NATS) is unreachable.',
          body: ref(HealthRecord),
        },
      },
    }),
  });
  app.get('/healthcheck', schema('getHealth'), health);
  app.get('/v2/healthcheck', schema('getHealthV2'), health);
}
