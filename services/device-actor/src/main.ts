#!/usr/bin/env node
import { runServiceMain } from '@svc/service-main';
import { loadDeviceActorConfig } from './config.js';
import { startDeviceActorService } from './actor-host/service.js';

// On SIGTERM the host stops taking jobs, finishes running ones and leaves queued ones in their
// shards for the next owner.
await runServiceMain(process, {
  service: 'device-actor',
  loadConfig: loadDeviceActorConfig,
  needsSealer: true,
  start: (config, { nc, log, sealer, metrics }) =>
    startDeviceActorService(config, { nc, log, sealer: sealer!, metrics }),
});
