export { loadConfig } from './config-loader.js';
export type { ConfigCheck } from './config-loader.js';
