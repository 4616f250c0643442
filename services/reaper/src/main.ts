#!/usr/bin/env node
import { ConfigError, connectNats, createLogger } from '@svc/proto';
import { loadReaperConfig } from './config.js';
import { startReaper } from './reaper.js';

const log = createLogger('reaper', process.env['LOG_LEVEL']);
try {
  const config = loadReaperConfig(process.env);
  const nc = await connectNats(config.NATS_URL, 'svc-reaper');
  const reaper = await startReaper(config, { nc, log });
  const shutdown = async (signal: string) => {
    log.info({ signal }, 'stopping');
    await reaper.stop();
    await nc.drain();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
} catch (err) {
  if (err instanceof ConfigError) log.error({ problems: err.problems }, 'invalid configuration');
  else log.error({ err }, 'reaper failed to start');
  process.exit(1);
}
