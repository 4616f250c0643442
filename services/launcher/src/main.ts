#!/usr/bin/env node
import { resolve } from 'node:path';
import { createLogger, exitOnStartFailure, stopOnSignals } from '@svc/proto';
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
  // Where to follow job events from another terminal (docs/events.md); passwords stay in the file.
  if (svc.natsCredentialsFile) {
    process.stdout.write(
      `svc NATS: ${svc.natsUrl} (credentials: ${svc.natsCredentialsFile}; events: user "events", subject "svc.events.>")\n`,
    );
  }
  stopOnSignals(process, log, () => svc.stop());
} catch (err) {
  exitOnStartFailure(process, log, 'svc', err);
}
