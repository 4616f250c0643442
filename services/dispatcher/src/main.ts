#!/usr/bin/env node
import { runServiceMain } from '@svc/service-main';
import { loadDispatcherConfig } from './config.js';
import { startDispatcher } from './dispatcher.js';

await runServiceMain(process, {
  service: 'dispatcher',
  loadConfig: loadDispatcherConfig,
  needsSealer: false,
  start: (config, { nc, log, metrics }) => startDispatcher(config, { nc, log, metrics }),
});
