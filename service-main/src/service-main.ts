import type { NatsConnection } from '@nats-io/transport-node';
import { ConfigError, Sealer } from '@svc/proto';
import {
  createLogger,
  type Logger,
  createMetricsRegistry,
  startMetricsServer,
  type MetricsRegistry,
  type MetricsServer,
  startTracing,
  type TracingSettings,
} from '@svc/telemetry';
import { connectNats, type NatsCredentials } from '@svc/nats';

/** The parts of `process` a service's entry point hands over (only `main.ts` touches process). */
export interface ProcessHandle {
  env: Readonly<Record<string, string | undefined>>;
  once(signal: 'SIGTERM' | 'SIGINT', listener: () => void): unknown;
  exit(code: number): never;
}

export interface ServiceDeps {
  nc: NatsConnection;
  log: Logger;
  /** Present when the service asked for one (it handles device secrets). */
  sealer: Sealer | null;
  /** The process's metrics registry (default Node.js metrics and svc_build_info in it). */
  metrics: MetricsRegistry;
}

/**
 * The common life of a service process: read its settings (every bad one reported, exit 1),
 * start tracing and metrics, connect to NATS, start, and on SIGTERM/SIGINT stop, drain NATS and
 * exit 0.
 */
export async function runServiceMain<
  C extends TracingSettings &
    NatsCredentials & {
      NATS_URL: string;
      SVC_ENCRYPTION_KEY: string;
      SVC_BUILD_COMMIT: string;
      SVC_METRICS_PORT?: number;
      SVC_METRICS_BIND?: string;
    },
>(
  proc: ProcessHandle,
  options: {
    service: string;
    loadConfig: (env: Readonly<Record<string, string | undefined>>) => C;
    needsSealer: boolean;
    /**
     * Runs before the NATS connection is attempted (the gateway opens its listeners to answer
     * 503 meanwhile); its `ended` runs once NATS is up and gives the settings to start with.
     */
    whileWaiting?: (config: C, log: Logger) => Promise<{ ended(): Promise<C> }>;
    start: (config: C, deps: ServiceDeps) => Promise<{ stop(): Promise<void> }>;
  },
): Promise<void> {
  const log = createLogger(options.service, proc.env['LOG_LEVEL']);
  try {
    const { config, sealer } = readServiceSettings(proc.env, options);
    const tracing = await startTracing(config, options.service);
    const metrics = createMetricsRegistry(options.service, config.SVC_BUILD_COMMIT);
    // Services without an HTTP API serve /metrics on a listener of their own; the gateway
    // serves it on its API listeners.
    let metricsServer: MetricsServer | null = null;
    if (config.SVC_METRICS_PORT !== undefined) {
      metricsServer = await startMetricsServer(
        metrics,
        { port: config.SVC_METRICS_PORT, host: config.SVC_METRICS_BIND ?? '0.0.0.0' },
        log,
      );
    }
    const waiting = await options.whileWaiting?.(config, log);
    const nc = await connectNats(config.NATS_URL, `svc-${options.service}`, config, log);
    const running = await options.start((await waiting?.ended()) ?? config, {
      nc,
      log,
      sealer,
      metrics,
    });
    stopOnSignals(proc, log, async () => {
      await running.stop();
      await metricsServer?.stop();
      await nc.drain();
      await tracing.stop();
    });
  } catch (err) {
    exitOnStartFailure(proc, log, options.service, err);
  }
}

/** On SIGTERM or SIGINT: log it, run `stop`, exit 0. */
export function stopOnSignals(proc: ProcessHandle, log: Logger, stop: () => Promise<void>): void {
  const shutdown = async (signal: string) => {
    log.info({ signal }, 'stopping');
    await stop();
    proc.exit(0);
  };
  proc.once('SIGTERM', () => void shutdown('SIGTERM'));
  proc.once('SIGINT', () => void shutdown('SIGINT'));
}

/**
 * Reads a service's settings and, when it handles device secrets, its encryption keyring. Every
 * problem is reported in one ConfigError: a missing or malformed SVC_ENCRYPTION_KEY together
 * with every bad variable, so that one start shows everything to fix.
 */
export function readServiceSettings<C>(
  env: Readonly<Record<string, string | undefined>>,
  options: {
    loadConfig: (env: Readonly<Record<string, string | undefined>>) => C;
    needsSealer: boolean;
  },
): { config: C; sealer: Sealer | null } {
  const problems: string[] = [];
  let config: C | null = null;
  try {
    config = options.loadConfig(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  let sealer: Sealer | null = null;
  if (options.needsSealer) {
    const key = env['SVC_ENCRYPTION_KEY'] ?? '';
    if (key === '') problems.push('SVC_ENCRYPTION_KEY: required');
    else {
      try {
        sealer = Sealer.fromSetting(key);
      } catch (err) {
        // The keyring's messages describe its shape, never the key.
        problems.push(`SVC_ENCRYPTION_KEY: ${err instanceof Error ? err.message : 'malformed'}`);
      }
    }
  }
  if (problems.length > 0 || config === null) throw new ConfigError(problems);
  return { config, sealer };
}

/** A start that failed: bad settings are listed one by one, anything else logged; exit 1. */
export function exitOnStartFailure(
  proc: ProcessHandle,
  log: Logger,
  service: string,
  err: unknown,
): never {
  if (err instanceof ConfigError) log.error({ problems: err.problems }, 'invalid configuration');
  else log.error({ err }, `${service} failed to start`);
  return proc.exit(1);
}
