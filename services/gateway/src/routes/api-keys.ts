import type { FastifyInstance } from 'fastify';
import type { ApiKeys } from '../api-keys.js';
import type { GatewayContext } from '../gateway-context.js';

/** Placeholder until its issue lands: registers no route yet. */
export function registerApiKeyRoutes(
  _app: FastifyInstance,
  _ctx: GatewayContext,
  _keys: ApiKeys,
): void {}
