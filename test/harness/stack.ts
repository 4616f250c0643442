import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  startDeviceActorService,
  loadDeviceActorConfig,
  type RunningDeviceActorService,
} from '@svc/device-actor';
import { loadDispatcherConfig, startDispatcher, type RunningDispatcher } from '@svc/dispatcher';
import { loadGatewayConfig, startGateway, type RunningGateway } from '@svc/gateway';
import { loadReaperConfig, startReaper, type RunningReaper } from '@svc/reaper';
import { pino } from 'pino';
import { Sealer } from '@svc/proto';
import { AuditLog, createLogger, type Logger } from '@svc/telemetry';
import { connectNats, type NatsCredentials } from '@svc/nats';
import type { NatsConnection } from '@nats-io/transport-node';
import { http } from './http-client.js';
import { waitUntil } from './wait.js';

/** One encryption key per test run; tests never need a real one. */
export const TEST_ENCRYPTION_KEY = Sealer.generateKey();

/** Environment for a test stack: short timings, plain HTTP on a random port. */
export function testEnv(
  natsUrl: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    NATS_URL: natsUrl,
    SVC_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    SVC_PORT: '0',
    SVC_HTTP_PORT: '0',
    SVC_BIND: '127.0.0.1',
    // Several services of a kind run side by side in tests: any free port, read from the log.
    SVC_METRICS_PORT: '0',
    SVC_METRICS_BIND: '127.0.0.1',
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'ERROR',
    HEARTBEAT_INTERVAL: '0.5',
    // Below WORKER_STALE_THRESHOLD: dispatchers stop placing on a host before the reaper takes it.
    DISPATCH_HOST_LIVENESS: '1.5',
    JOB_REAPER_INTERVAL: '1',
    WORKER_STALE_THRESHOLD: '3',
    SHUTDOWN_GRACE: '5',
    // Load tests send many jobs per device; the rate-limit tests set their own limits.
    RATE_LIMIT_PER_MINUTE: '0',
    RATE_LIMIT_DEVICE_PER_MINUTE: '0',
    // Simulated devices and webhook receivers live on loopback, which the default reachability
    // policy refuses: the system under test is configured to allow it (as `npm start` is).
    DEVICE_NETWORKS_ALLOW: '127.0.0.0/8,::1/128,*',
    WEBHOOK_ALLOW_NETWORKS: '127.0.0.0/8,::1/128',
    // Every test client is 127.0.0.1 and many tests probe refusals on purpose; the brute-force
    // test sets its own limit.
    AUTH_FAILURE_LIMIT: '0',
    ...extra,
  };
}

export function silentLogger(service: string): Logger {
  return createLogger(service, process.env['TEST_LOG_LEVEL'] ?? 'ERROR');
}

/** Audit lines go nowhere in tests unless TEST_LOG_LEVEL asks for logs. */
export function quietAudit(service: string): AuditLog {
  return process.env['TEST_LOG_LEVEL']
    ? new AuditLog(service)
    : new AuditLog(service, pino.destination('/dev/null'));
}

/** All services in this process, each on its own NATS connection. */
export interface InProcessStack {
  url: string;
  gateway: RunningGateway;
  dispatcher: RunningDispatcher;
  actors: RunningDeviceActorService[];
  reaper: RunningReaper;
  connections: NatsConnection[];
  stop(): Promise<void>;
}

export async function startInProcessStack(
  natsUrl: string,
  options: {
    env?: Record<string, string>;
    actors?: number;
    reaper?: boolean;
    /** Each service's NATS credentials (an authenticated server); none when absent. */
    credentials?: Partial<Record<'gateway' | 'dispatcher' | 'actor' | 'reaper', NatsCredentials>>;
    /** Every service's log and audit lines, DEBUG and up, go here (tests that read logs). */
    logSink?: pino.DestinationStream;
    /** Told of every route the gateway's HTTP servers register. */
    onGatewayRoute?: (route: { method: string; url: string }) => void;
    /**
     * The NATS URL a service connects to (`reaper`, `dispatcher`, `actor-<i>`, `gateway`), in
     * place of `natsUrl`: a cluster's node of its own (a fault scenario freezing one node).
     */
    natsUrlOf?: (service: string) => string | undefined;
  } = {},
): Promise<InProcessStack> {
  const env = testEnv(natsUrl, options.env);
  const sink = options.logSink;
  const logger = (service: string) =>
    sink ? createLogger(service, 'DEBUG', sink) : silentLogger(service);
  const auditor = (service: string) => (sink ? new AuditLog(service, sink) : quietAudit(service));
  const connections: NatsConnection[] = [];
  const nc = async (name: string) => {
    const role = name.startsWith('actor') ? 'actor' : (name as 'gateway');
    const url = options.natsUrlOf?.(name) ?? natsUrl;
    const c = await connectNats(url, name, options.credentials?.[role] ?? {});
    connections.push(c);
    return c;
  };
  const sealer = Sealer.fromSetting(env['SVC_ENCRYPTION_KEY']!);
  // Stopped newest first, also when a later service fails to start (no hanging test file).
  const running: { name: string; stop(): Promise<void> }[] = [];
  const stopAll = async () => {
    for (const r of running.reverse()) {
      // Not bounded (a stop that never ends is a defect to see), but named while it lasts: a
      // test file that times out in its teardown says which service did not stop.
      const since = Date.now();
      const told = setInterval(
        () =>
          process.stderr.write(
            `stack.stop: ${r.name} still stopping after ${Date.now() - since} ms\n`,
          ),
        STOP_NOTICE_MS,
      );
      await r.stop().catch(() => undefined);
      clearInterval(told);
    }
    await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
  };
  try {
    const reaper = await startReaper(
      loadReaperConfig({ ...env, JOB_REAPER_ENABLED: options.reaper === false ? 'false' : 'true' }),
      { nc: await nc('reaper'), log: logger('reaper'), audit: auditor('reaper') },
    );
    running.push({ name: 'reaper', stop: () => reaper.stop() });
    const dispatcher = await startDispatcher(loadDispatcherConfig(env), {
      nc: await nc('dispatcher'),
      log: logger('dispatcher'),
    });
    running.push({ name: 'dispatcher', stop: () => dispatcher.stop() });
    const actors: RunningDeviceActorService[] = [];
    for (let i = 0; i < (options.actors ?? 1); i++) {
      const actor = await startDeviceActorService(loadDeviceActorConfig(env), {
        nc: await nc(`actor-${i}`),
        log: logger('device-actor'),
        audit: auditor('device-actor'),
        sealer,
      });
      actors.push(actor);
      running.push({ name: `actor-${i}`, stop: () => actor.stop() });
    }
    const gateway = await startGateway(loadGatewayConfig(env), {
      nc: await nc('gateway'),
      sealer,
      log: logger('gateway'),
      audit: auditor('gateway'),
      ...(options.onGatewayRoute ? { onRoute: options.onGatewayRoute } : {}),
    });
    running.push({ name: 'gateway', stop: () => gateway.stop() });
    return {
      url: gateway.httpUrl!,
      gateway,
      dispatcher,
      actors,
      reaper,
      connections,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * One more actor host in this process, named `hostId`, on a connection of its own (a host that
 * joins, or one whose name decides which shards it keeps). Its log lines, DEBUG and up, go to
 * `logSink` when given.
 */
export async function startNamedActor(
  natsUrl: string,
  hostId: string,
  env: Record<string, string> = {},
  logSink?: pino.DestinationStream,
  /** How long its job state changes retry through a store outage (60 s when absent). */
  storeRetryMs?: number,
): Promise<RunningDeviceActorService & { nc: NatsConnection }> {
  const config = loadDeviceActorConfig({ ...testEnv(natsUrl, env), ACTOR_HOST_ID: hostId });
  const nc = await connectNats(natsUrl, hostId);
  const actor = await startDeviceActorService(config, {
    nc,
    log: logSink ? createLogger('device-actor', 'DEBUG', logSink) : silentLogger('device-actor'),
    audit: quietAudit('device-actor'),
    sealer: Sealer.fromSetting(TEST_ENCRYPTION_KEY),
    ...(storeRetryMs !== undefined ? { storeRetryMs } : {}),
  });
  return {
    ...actor,
    nc,
    async stop() {
      await actor.stop();
      await nc.close();
    },
  };
}

/** How often a service still stopping is named (a test file's timeout is 240 s). */
const STOP_NOTICE_MS = 30_000;

const ENTRY: Record<string, string> = {
  gateway: '../../../services/gateway/dist/src/main.js',
  dispatcher: '../../../services/dispatcher/dist/src/main.js',
  'device-actor': '../../../services/device-actor/dist/src/main.js',
  reaper: '../../../services/reaper/dist/src/main.js',
  // `npm start`: every service in one process, with its own nats-server unless NATS_URL is set.
  launcher: '../../../services/launcher/dist/src/main.js',
};

/** The module that makes a service exit when the process that started it is gone. */
const EXIT_WITH_PARENT = new URL('./exit-with-parent.js', import.meta.url).href;

/** A service as a separate OS process (for tests that kill processes). */
export class ServiceProcess {
  readonly output: string[] = [];
  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {}

  /** @param nodeArgs options for node itself (e.g. `--cpu-prof`: the benchmark's profiles). */
  static start(
    name: string,
    env: Record<string, string>,
    nodeArgs: readonly string[] = [],
  ): ServiceProcess {
    const entry = fileURLToPath(new URL(ENTRY[name]!, import.meta.url));
    // Standard input is a pipe from this process: the service exits when it ends.
    const child = spawn(process.execPath, ['--import', EXIT_WITH_PARENT, ...nodeArgs, entry], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const proc = new ServiceProcess(name, child);
    const keep = (d: Buffer) => {
      for (const line of d.toString().split('\n')) if (line) proc.output.push(line);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    return proc;
  }

  /** Resolves once a log line matches. */
  async waitFor(pattern: RegExp, timeoutMs = 45_000): Promise<string> {
    return waitUntil(
      () => {
        const line = this.output.find((l) => pattern.test(l));
        if (line) return line;
        if (this.child.exitCode !== null) {
          throw new Error(
            `${this.name} exited (${this.child.exitCode}): ${this.output.slice(-5).join('\n')}`,
          );
        }
        return null;
      },
      `${this.name}: a line matching ${pattern}`,
      { timeoutMs },
    );
  }

  /** Sends the signal and waits for the exit; SIGKILL after 30 s if the process hangs. */
  kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) return resolve();
      const force = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
      this.child.once('exit', () => {
        clearTimeout(force);
        resolve();
      });
      this.child.kill(signal);
    });
  }

  /** The /metrics URL of a dispatcher, actor host or reaper, from its start line. */
  async metricsUrl(): Promise<string> {
    const line = await this.waitFor(/metrics listening/);
    return (JSON.parse(line) as { url: string }).url;
  }

  /** The gateway's plain-HTTP URL from its start line. */
  async httpUrl(): Promise<string> {
    const line = await this.waitFor(/gateway listening/);
    const parsed = JSON.parse(line) as { http?: string };
    if (!parsed.http) throw new Error('gateway has no plain-HTTP listener');
    return parsed.http;
  }
}

/** Waits until /healthcheck says healthy (a worker is live). */
export async function waitHealthy(url: string, timeoutMs = 15_000): Promise<void> {
  let last = 'no answer';
  await waitUntil(
    async () => {
      const a = await http('GET', `${url}/healthcheck`).catch(() => null);
      last = a?.text ?? 'no answer';
      return a?.json?.status === 'healthy';
    },
    'a healthy gateway',
    { timeoutMs, everyMs: 50 },
  ).catch(() => {
    throw new Error(`not healthy: ${last}`);
  });
}

/** Waits until /healthcheck counts `count` live actor hosts (placement can use them all). */
export async function waitWorkers(url: string, count: number): Promise<void> {
  await waitUntil(
    async () =>
      (await http('GET', `${url}/healthcheck`)).json?.components?.workers?.count === count,
    `${count} live actor hosts`,
    { everyMs: 50 },
  );
}
