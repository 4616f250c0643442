import type { FastifyInstance } from 'fastify';
import type { GatewayContext } from './gateway-context.js';

/** Prometheus metrics of the cluster, served at /metrics (issue 7 fills this in). */
export interface GatewayMetrics {
  /** Adds /metrics and the request hooks to one HTTP server. */
  register(app: FastifyInstance): void;
  stop(): Promise<void>;
}

export function startGatewayMetrics(_ctx: GatewayContext): Promise<GatewayMetrics> {
  return Promise.resolve({ register: () => undefined, stop: () => Promise.resolve() });
}
