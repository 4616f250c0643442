#!/usr/bin/env node
import { runServiceMain } from '@svc/proto';
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';

await runServiceMain(process, {
  service: 'gateway',
  loadConfig: loadGatewayConfig,
  needsSealer: true,
  start: (config, { nc, log, sealer, metrics }) =>
    startGateway(config, { nc, log, sealer: sealer!, metrics }),
});
