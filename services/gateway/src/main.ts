#!/usr/bin/env node
import { ConfigError, startTracing, Sealer, connectNats, createLogger } from '@svc/proto';
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';

const log = createLogger('gateway', process.env['LOG_LEVEL']);
try {
  const config = loadGatewayConfig(process.env);
  const tracing = startTracing(config, 'gateway');
  if (!config.SVC_ENCRYPTION_KEY) throw new ConfigError(['SVC_ENCRYPTION_KEY: required']);
  const nc = await connectNats(config.NATS_URL, 'svc-gateway');
  const gateway = await startGateway(config, {
    nc,
    sealer: Sealer.fromSetting(config.SVC_ENCRYPTION_KEY),
    log,
  });
  const shutdown = async (signal: string) => {
    log.info({ signal }, 'stopping');
    await gateway.stop();
    await nc.drain();
    await tracing.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
} catch (err) {
  if (err instanceof ConfigError) log.error({ problems: err.problems }, 'invalid configuration');
  else log.error({ err }, 'gateway failed to start');
  process.exit(1);
}
