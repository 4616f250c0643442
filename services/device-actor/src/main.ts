#!/usr/bin/env node
import { ConfigError, startTracing, Sealer, connectNats, createLogger } from '@svc/proto';
import { loadDeviceActorConfig } from './config.js';
import { startDeviceActorService } from './service.js';

const log = createLogger('device-actor', process.env['LOG_LEVEL']);
try {
  const config = loadDeviceActorConfig(process.env);
  const tracing = startTracing(config, 'device-actor');
  if (!config.SVC_ENCRYPTION_KEY) throw new ConfigError(['SVC_ENCRYPTION_KEY: required']);
  const nc = await connectNats(config.NATS_URL, 'svc-device-actor');
  const actor = await startDeviceActorService(config, {
    nc,
    log,
    sealer: Sealer.fromSetting(config.SVC_ENCRYPTION_KEY),
  });
  const shutdown = async (signal: string) => {
    log.info({ signal, host_id: actor.hostId }, 'stopping: handing back queued jobs');
    await actor.stop();
    await nc.drain();
    await tracing.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
} catch (err) {
  if (err instanceof ConfigError) log.error({ problems: err.problems }, 'invalid configuration');
  else log.error({ err }, 'device actor failed to start');
  process.exit(1);
}
