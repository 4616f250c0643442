import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Type } from 'typebox';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Logger } from './logging.js';
import type { JobRecord } from '@svc/proto';
import { malformedMessagesDropped } from '@svc/proto';

export { Registry as MetricsRegistry };

/**
 * prom-client's default metrics that are gauges named `…_total`, which Prometheus naming
 * reserves for counters (promtool reports them). Each has a labelled twin without the suffix
 * (`nodejs_active_handles{type}` …) whose sum is the same number, so nothing is lost.
 */
const MISNAMED_DEFAULTS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/**
 * How often the event-loop lag metrics (`nodejs_eventloop_lag_*`) sample, ms. prom-client's
 * default of 10 ms wakes every process 100 times a second, ≈ 9 ms of CPU per second each on
 * these machines when idle (most of an idle process's cost); at 100 ms a stall of 100 ms or more
 * is always seen and a shorter one when a sample falls in it.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/** The version of svc (every package carries the same one). */
const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

/**
 * The registry of one process: Node.js and process metrics (prom-client's defaults, prefix-free
 * as exporters name them) and `svc_build_info`. Each service adds its own collectors to it; in
 * the all-in-one launcher every service shares one, served by the gateway's /metrics.
 *
 * @param component `gateway`, `dispatcher`, `device-actor`, `reaper` or `all-in-one`.
 * @param commit the source commit, when the build knows it (SVC_BUILD_COMMIT), else empty.
 */
export function createMetricsRegistry(component: string, commit = ''): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(name);
  new Gauge({
    name: 'svc_build_info',
    help: 'Always 1; the labels say which build of svc this process runs.',
    labelNames: ['version', 'node_version', 'commit', 'component'] as const,
    registers: [registry],
  }).set(
    { version: VERSION, node_version: process.version, commit: commit || 'unknown', component },
    1,
  );
  new Counter({
    name: 'svc_malformed_messages_total',
    help: 'Messages and records read from NATS that were not of their schema (dropped, never used), by consumer.',
    labelNames: ['consumer'] as const,
    registers: [registry],
    // The tally is the process's (every consumer's decode counts there): read at scrape time.
    collect() {
      this.reset();
      for (const [consumer, n] of malformedMessagesDropped()) this.inc({ consumer }, n);
    },
  });
  return registry;
}

/**
 * `svc_job_failures_total{error_code}`: jobs this process moved to failed (the actor: device
 * and job errors; the reaper: WORKER_LOST). Shared by the services of one registry, so it is
 * created once per registry. Error codes are a fixed list (docs/errors.md): bounded labels.
 */
export function jobFailureCounter(registry: Registry): (record: JobRecord) => void {
  const name = 'svc_job_failures_total';
  const counter =
    (registry.getSingleMetric(name) as Counter<'error_code'> | undefined) ??
    new Counter({
      name,
      help: 'Jobs this process moved to failed, by error_code (docs/errors.md).',
      labelNames: ['error_code'] as const,
      registers: [registry],
    });
  return (record) => counter.inc({ error_code: record.error_code ?? 'INTERNAL' });
}

/**
 * The metrics listener of a service without an HTTP API (dispatcher, device actor, reaper),
 * declared by each such service's config.
 *
 * @param defaultPort a port per service, so that all of them run side by side on one machine.
 */
export function metricsSettings(defaultPort: number) {
  return {
    SVC_METRICS_PORT: Type.Integer({
      default: defaultPort,
      minimum: 0,
      maximum: 65_535,
      description:
        'TCP port of the Prometheus /metrics listener (no authentication). 0: any free port (logged).',
    }),
    SVC_METRICS_BIND: Type.String({
      default: '0.0.0.0',
      description: 'Address the /metrics listener binds to.',
    }),
  };
}

export interface MetricsServer {
  /** e.g. `http://127.0.0.1:9102/metrics` */
  url: string;
  stop(): Promise<void>;
}

/** Serves `GET /metrics` of `registry` (Prometheus text format) and nothing else. */
export async function startMetricsServer(
  registry: Registry,
  listen: { port: number; host: string },
  log: Logger,
): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err: unknown) => {
        log.warn({ err }, 'metrics: collection failed');
        res.writeHead(500).end();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = listen.host === '0.0.0.0' || listen.host === '::' ? '127.0.0.1' : listen.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`;
  log.info({ url }, 'metrics listening');
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
