#!/usr/bin/env node
import { resolve } from 'node:path';
import { ConfigError, createLogger } from '@svc/proto';
import { startAll } from './all-in-one.js';

const level = process.env['LOG_LEVEL'];
const log = createLogger('launcher', level);
try {
  const svc = await startAll({
    env: process.env,
    dataDir: resolve(process.env['SVC_DATA_DIR'] ?? '.svc-data'),
    log: (service) => createLogger(service, level),
  });
  // The one line a person looks for.
  process.stdout.write(
    `svc ready: ${svc.httpsUrl}${svc.httpUrl ? ` (plain HTTP: ${svc.httpUrl})` : ''}\n`,
  );
  const shutdown = async (signal: string) => {
    log.info({ signal }, 'stopping');
    await svc.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
} catch (err) {
  if (err instanceof ConfigError) log.error({ problems: err.problems }, 'invalid configuration');
  else log.error({ err }, 'svc failed to start');
  process.exit(1);
}
