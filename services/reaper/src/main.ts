#!/usr/bin/env node
import { runServiceMain } from '@svc/service-main';
import { loadReaperConfig } from './config.js';
import { startReaper } from './reaper.js';

await runServiceMain(process, {
  service: 'reaper',
  loadConfig: loadReaperConfig,
  needsSealer: false,
  start: (config, { nc, log, metrics }) => startReaper(config, { nc, log, metrics }),
});
