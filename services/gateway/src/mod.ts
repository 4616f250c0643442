export { buildOpenApiDocument, startGateway } from './gateway.js';
export type { GatewayDeps, RunningGateway } from './gateway.js';
export { GatewayConfig, loadGatewayConfig } from './config.js';
