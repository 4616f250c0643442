#!/usr/bin/env node
import { localDataDir } from '@svc/proto';
import { createLogger } from '@svc/telemetry';
import { exitOnStartFailure } from '@svc/service-main';
import { startAll, type AllInOne } from './all-in-one.js';
import type { NatsServerProcess } from './nats-server-process.js';

const level = process.env['LOG_LEVEL'];
const log = createLogger('launcher', level);

// The local nats-server ends with this process on every path: a failed start (startAll stops
// it), a signal at any time, a crash, or any exit the code below does not foresee.
let nats: NatsServerProcess | null = null;
let svc: AllInOne | null = null;
let stopping = false;
process.on('exit', () => nats?.terminateNow());
const stop = async (code: number): Promise<never> => {
  if (!stopping) {
    stopping = true;
    // A stop that hangs must not keep the process (and its nats-server) alive.
    setTimeout(() => process.exit(code), 15_000).unref();
    await (svc ? svc.stop() : nats?.stop())?.catch((err: unknown) =>
      log.error({ err }, 'stop failed'),
    );
  }
  return process.exit(code);
};
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log.info({ signal }, 'stopping');
    void stop(0);
  });
}
process.on('uncaughtException', (err) => {
  log.error({ err }, 'svc crashed');
  void stop(1);
});

try {
  svc = await startAll({
    env: process.env,
    dataDir: localDataDir(process.env['SVC_DATA_DIR']),
    log: (service) => createLogger(service, level),
    onNatsServer: (server) => {
      nats = server;
    },
  });
  // The one line a person looks for (not when a signal came while starting: it is stopping).
  if (!stopping)
    process.stdout.write(
      `svc ready: ${svc.httpsUrl}${svc.httpUrl ? ` (plain HTTP: ${svc.httpUrl})` : ''}\n`,
    );
  // Where to follow job events from another terminal (docs/events.md); passwords stay in the file.
  if (svc.natsCredentialsFile && !stopping) {
    process.stdout.write(
      `svc NATS: ${svc.natsUrl} (credentials: ${svc.natsCredentialsFile}; events: user "events", subject "svc.events.>")\n`,
    );
  }
  // The secret stays in the file: `svc keys` and svc-mcp read it there for a loopback URL.
  if (svc.adminSecretFile && !stopping) {
    process.stdout.write(
      `svc admin secret: ${svc.adminSecretFile} (SVC_ADMIN_SECRET; read by \`svc keys\` on this machine)\n`,
    );
  }
} catch (err) {
  if (!stopping) exitOnStartFailure(process, log, 'svc', err);
}
