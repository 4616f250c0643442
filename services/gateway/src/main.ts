#!/usr/bin/env node
import { runServiceMain } from '@svc/service-main';
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';
import type { TlsMaterial } from './tls.js';
import { openWaitingListeners } from './waiting-listeners.js';

let tls: TlsMaterial | undefined;
await runServiceMain(process, {
  service: 'gateway',
  loadConfig: loadGatewayConfig,
  needsSealer: true,
  // Listening before NATS is up: probes and people get a 503 that says why, not a refusal.
  whileWaiting: async (config, log) => {
    const waiting = await openWaitingListeners(config, log);
    tls = waiting.tls;
    return waiting;
  },
  start: (config, { nc, log, sealer, metrics }) =>
    startGateway(config, { nc, log, sealer: sealer!, metrics, ...(tls ? { tls } : {}) }),
});
