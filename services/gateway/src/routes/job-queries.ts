import type { FastifyInstance } from 'fastify';
import type { GatewayContext } from '../gateway-context.js';

/** Placeholder until its issue lands: registers no route yet. */
export function registerJobQueryRoutes(_app: FastifyInstance, _ctx: GatewayContext): void {}
