import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ClusterStatus } from '../cluster-status.js';

/** /healthcheck (permanent, unversioned, no authentication) and its /v2 alias. */
export function registerOperationRoutes(app: FastifyInstance, status: ClusterStatus): void {
  const health = async (_req: unknown, reply: FastifyReply) => {
    const record = await status.health();
    // Probes read the code: only a store outage is unhealthy; no_workers still serves reads.
    return reply.code(record.status === 'degraded' ? 503 : 200).send(record);
  };
  app.get('/healthcheck', health);
  app.get('/v2/healthcheck', health);
}
