#!/usr/bin/env node
import { ConfigError, startTracing, connectNats, createLogger } from '@svc/proto';
import { loadDispatcherConfig } from './config.js';
import { startDispatcher } from './dispatcher.js';

const log = createLogger('dispatcher', process.env['LOG_LEVEL']);
try {
  const config = loadDispatcherConfig(process.env);
  const tracing = startTracing(config, 'dispatcher');
  const nc = await connectNats(config.NATS_URL, 'svc-dispatcher');
  const dispatcher = await startDispatcher(config, { nc, log });
  const shutdown = async (signal: string) => {
    log.info({ signal }, 'stopping');
    await dispatcher.stop();
    await nc.drain();
    await tracing.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
} catch (err) {
  if (err instanceof ConfigError) log.error({ problems: err.problems }, 'invalid configuration');
  else log.error({ err }, 'dispatcher failed to start');
  process.exit(1);
}
