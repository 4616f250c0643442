import type { NatsConnection } from '@nats-io/transport-node';
import { communityTemplateDirs, loadDriverDir, localDataDir, type Sealer } from '@svc/proto';
import { type AuditLog, type Logger, type MetricsRegistry } from '@svc/telemetry';
import { startActorHost, type RunningActorHost } from './actor-host.js';
import type { DeviceActorConfig } from '../config.js';
import { createDeviceRunner } from '../device/device-runner.js';
import { installUserDrivers } from '@svc/drivers';
import { SessionPool } from '../device/session-pool.js';
import { createStructuredParser } from './structured-output.js';
import { createWebhookNotifier } from './webhook.js';

export interface DeviceActorServiceDeps {
  nc: NatsConnection;
  log: Logger;
  sealer: Sealer;
  audit?: AuditLog;
  metrics?: MetricsRegistry;
  /** See `ActorHostDeps.storeRetryMs`. */
  storeRetryMs?: number;
}

export interface RunningDeviceActorService extends RunningActorHost {
  pool: SessionPool | null;
}

/** An actor host with its device layer: drivers, warm sessions and template parsing. */
export async function startDeviceActorService(
  config: DeviceActorConfig,
  deps: DeviceActorServiceDeps,
): Promise<RunningDeviceActorService> {
  // Checked by the config loader already (every problem reported at start).
  installUserDrivers(loadDriverDir(config.SVC_DRIVERS_DIR).drivers);
  const pool = config.CONNECTION_POOL_ENABLED
    ? new SessionPool({
        idleTtlMs: config.CONNECTION_POOL_TTL * 1000,
        maxSize: config.CONNECTION_POOL_MAX_SIZE,
      })
    : null;
  const runner = createDeviceRunner({ pool, poolExclude: config.CONNECTION_POOL_EXCLUDE });
  const parser = createStructuredParser({
    textfsmDir: config.SVC_TEXTFSM_DIR || null,
    ttpDir: config.SVC_TTP_TEMPLATES_DIR || null,
    // What `svc templates install` put in the data dir, when those settings are empty.
    installed: communityTemplateDirs(localDataDir(config.SVC_DATA_DIR)),
    timeoutMs: config.SVC_PARSE_TIMEOUT_MS,
  });
  const notify = createWebhookNotifier(config, deps.log, deps.sealer);
  const host = await startActorHost(config, {
    ...deps,
    runner,
    parseOutputs: parser.parseOutputs,
    onJobEnded: (record, secrets) => void notify(record, secrets),
    ...(pool
      ? {
          poolStats: () => ({ size: pool.size, hits: pool.hits, misses: pool.misses }),
          closeIdleSessions: (device: string) => pool.closeDevice({ device }),
          closeWarmSessions: (matches) => pool.closeWhere(matches),
        }
      : {}),
  });
  return {
    ...host,
    pool,
    async stop() {
      await host.stop();
      await pool?.close();
      await parser.close();
    },
  };
}
