import type { Logger, Stores } from '@svc/proto';
import type { BearerResolver } from './caller.js';
import type { GatewayConfig } from './config.js';

/** Bearer API keys: JWT verification, key metadata and revocations (issue 6 fills this in). */
export interface ApiKeys {
  resolve: BearerResolver;
  stop(): Promise<void>;
}

export function startApiKeys(_deps: {
  config: GatewayConfig;
  stores: Stores;
  log: Logger;
}): Promise<ApiKeys> {
  return Promise.resolve({ resolve: () => Promise.resolve(null), stop: () => Promise.resolve() });
}
