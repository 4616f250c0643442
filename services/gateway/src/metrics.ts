import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram } from 'prom-client';
import { withinMs, type WorkerHeartbeat } from '@svc/proto';
import { type MetricsRegistry } from '@svc/telemetry';
import type { GatewayContext } from './gateway-context.js';
import { endpointOf, registerHttpTracing } from './http-tracing.js';
import { routeSchema } from './routes/route-schemas.js';
import { JobCounts } from './job-counts.js';

/** Prometheus metrics of the cluster, served at /metrics. */
export interface GatewayMetrics {
  /** Adds /metrics and the request hooks (metrics, tracing) to one HTTP server. */
  register(app: FastifyInstance): void;
  stop(): Promise<void>;
}

/** The longest a scrape waits for the job counts to catch up with the record writes. */
const CATCH_UP_MS = 2000;

/** Cluster reads (heartbeats, stream info, bucket status) are cached this long between scrapes. */
const CLUSTER_READ_TTL_MS = 1000;

const JOB_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

interface ClusterSnapshot {
  hosts: WorkerHeartbeat[];
  queueDepth: number;
  failedJobs: number;
}

/**
 * Creates the registry and collectors once per gateway process (both HTTP servers share them)
 * and starts the job counts. Per-process metrics: the HTTP ones. Cluster metrics: queue,
 * workers, pool and failed jobs are read from NATS at scrape time; job counts and durations are
 * counted from every job record write of the cluster (`JobCounts`), so each gateway reports the
 * same cluster-wide values (aggregate them with `max`, not `sum`). See docs/observability.md.
 */
export function startGatewayMetrics(
  ctx: GatewayContext,
  registry: MetricsRegistry,
): GatewayMetrics {
  const httpRequests = new Counter({
    name: 'svc_http_requests_total',
    help: 'HTTP requests answered by this gateway process.',
    labelNames: ['method', 'endpoint', 'status'] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: 'svc_http_request_duration_seconds',
    help: 'Time from request to the end of its response (SSE: stream lifetime), seconds.',
    labelNames: ['method', 'endpoint'] as const,
    registers: [registry],
  });

  let snapshot: ClusterSnapshot | null = null;
  let snapshotAt = 0;
  let pending: Promise<ClusterSnapshot | null> | null = null;
  const cluster = (): Promise<ClusterSnapshot | null> => {
    if (snapshot && Date.now() - snapshotAt < CLUSTER_READ_TTL_MS) return Promise.resolve(snapshot);
    pending ??= (async () => {
      try {
        const [hosts, depth, failedJobs] = await Promise.all([
          ctx.status.liveWorkers(),
          ctx.depth.total(),
          ctx.status.failedJobs(),
        ]);
        const active = hosts.reduce((n, h) => n + h.active_jobs, 0);
        snapshot = { hosts, queueDepth: Math.max(0, depth - active), failedJobs };
        snapshotAt = Date.now();
        pool.observe(hosts);
      } catch (err) {
        // NATS unreachable: keep the last values; a scrape must not fail because of it.
        ctx.log.warn({ err }, 'metrics: cluster read failed');
      } finally {
        pending = null;
      }
      return snapshot;
    })();
    return pending;
  };

  const pool = new PoolCounters();
  const gauge = (name: string, help: string, read: (s: ClusterSnapshot) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        const s = await cluster();
        if (s) this.set(read(s));
      },
    });
  const sum = (s: ClusterSnapshot, f: (h: WorkerHeartbeat) => number) =>
    s.hosts.reduce((n, h) => n + f(h), 0);

  gauge('svc_queue_depth', 'Jobs accepted and not yet started, all contexts.', (s) => s.queueDepth);
  gauge(
    'svc_workers_active',
    'Live actor hosts (heartbeat within WORKER_STALE_THRESHOLD).',
    (s) => s.hosts.filter((h) => !h.draining).length,
  );
  gauge('svc_workers_busy', 'Device sessions running a job now, all actor hosts.', (s) =>
    sum(s, (h) => h.busy),
  );
  // The specification names this gauge with a _total suffix; the name stays (HELP says so).
  gauge(
    'svc_workers_total',
    'Device session slots (ACTOR_MAX_SESSIONS) of all live actor hosts. A gauge despite the _total suffix: the name is fixed by the specification.',
    (s) => sum(s, (h) => h.capacity),
  );
  gauge(
    'svc_failed_jobs_total',
    'Entries in the failed-job registry (dead-letter depth). A gauge despite the _total suffix: the name is fixed by the specification; svc_job_failures_total counts failures.',
    (s) => s.failedJobs,
  );
  gauge('svc_connection_pool_size', 'Warm SSH sessions held by all live actor hosts.', (s) =>
    sum(s, (h) => h.pool_size),
  );
  // Counters rebuilt from heartbeats: `collect` resets and re-adds the cluster-wide total,
  // which PoolCounters keeps monotonic across actor-host restarts.
  const clusterCounter = (name: string, help: string, read: () => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      async collect() {
        await cluster();
        this.reset();
        this.inc(read());
      },
    });
  clusterCounter(
    'svc_connection_pool_hits_total',
    'Jobs served by a warm SSH session.',
    () => pool.hits,
  );
  clusterCounter(
    'svc_connection_pool_misses_total',
    'Jobs that opened a new SSH session.',
    () => pool.misses,
  );

  new Gauge({
    name: 'svc_sse_streams_open',
    help: 'SSE streams (job and batch) open on this gateway process, both listeners; they count against SSE_MAX_CONNECTIONS.',
    registers: [registry],
    collect() {
      this.set(ctx.sse.open);
    },
  });

  const queueJobs = new Counter({
    name: 'svc_queue_jobs_total',
    help: 'Job status changes, by new status (from the job records, since this gateway started).',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const queueTime = new Histogram({
    name: 'svc_queue_processing_time_seconds',
    help: 'Time a job waited between enqueue and start, seconds.',
    buckets: JOB_BUCKETS,
    registers: [registry],
  });
  const jobDuration = new Histogram({
    name: 'svc_jobs_duration_seconds',
    help: 'Run time of ended jobs (start to end), seconds.',
    labelNames: ['platform'] as const,
    buckets: JOB_BUCKETS,
    registers: [registry],
  });
  const jobsTotal = new Counter({
    name: 'svc_jobs_total',
    help: 'Jobs that reached a terminal status.',
    labelNames: ['platform', 'status'] as const,
    registers: [registry],
  });

  const counts = JobCounts.start(
    { nc: ctx.nc, jobs: ctx.jobs, log: ctx.log },
    {
      status: (status) => queueJobs.inc({ status }),
      queueTime: (seconds) => queueTime.observe(seconds),
      ended: (platform, status, ranSeconds) => {
        // Platform ids are validated against a fixed list at intake: bounded label values.
        jobsTotal.inc({ platform, status });
        if (ranSeconds !== null) jobDuration.observe({ platform }, ranSeconds);
      },
    },
  );

  return {
    register(app) {
      registerHttpTracing(app);
      app.addHook('onRequest', (req, reply, done) => {
        const startedAt = performance.now();
        const endpoint = endpointOf(req);
        reply.raw.once('close', () => {
          const method = req.method;
          // Status 0 never happens on a closed response; an aborted one keeps its set code.
          httpRequests.inc({ method, endpoint, status: String(reply.raw.statusCode) });
          httpDuration.observe({ method, endpoint }, (performance.now() - startedAt) / 1000);
        });
        done();
      });
      registerMetricsRoute(app, async () => {
        // Every job state stored before the scrape is in its counts (bounded: NATS may be away).
        await withinMs(counts.catchUp(), CATCH_UP_MS);
        return { text: await registry.metrics(), contentType: registry.contentType };
      });
    },
    stop() {
      counts.stop();
      return Promise.resolve();
    },
  };
}

/**
 * Cluster-wide warm-session hit and miss counts from heartbeats. Each host reports counts since
 * its own start; a host that goes away keeps its last counts here and a host whose counts go
 * down (restarted under the same id) has its old counts banked, so the sums never decrease while
 * this gateway runs.
 */
class PoolCounters {
  readonly #last = new Map<string, { hits: number; misses: number }>();
  #bankedHits = 0;
  #bankedMisses = 0;

  observe(hosts: readonly WorkerHeartbeat[]): void {
    for (const h of hosts) {
      const prev = this.#last.get(h.host_id);
      if (prev && (h.pool_hits < prev.hits || h.pool_misses < prev.misses)) {
        this.#bankedHits += prev.hits;
        this.#bankedMisses += prev.misses;
      }
      this.#last.set(h.host_id, { hits: h.pool_hits, misses: h.pool_misses });
    }
  }

  get hits(): number {
    let n = this.#bankedHits;
    for (const v of this.#last.values()) n += v.hits;
    return n;
  }

  get misses(): number {
    let n = this.#bankedMisses;
    for (const v of this.#last.values()) n += v.misses;
    return n;
  }
}

/** GET /metrics: Prometheus text, no authentication. */
export function registerMetricsRoute(
  app: FastifyInstance,
  render: () => Promise<{ text: string; contentType: string }>,
): void {
  app.get(
    '/metrics',
    {
      schema: routeSchema({
        operationId: 'getMetrics',
        summary: 'Prometheus metrics (no authentication)',
        tags: ['operations'],
        access: 'none',
        ok: {
          200: {
            description: 'Prometheus text exposition format',
            mediaType: 'text/plain',
            body: { type: 'string' },
            example: '# TYPE svc_queue_depth gauge\nsvc_queue_depth 0\n',
          },
        },
      }),
    },
    async (_req, reply) => {
      const { text, contentType } = await render();
      return reply.code(200).header('content-type', contentType).send(text);
    },
  );
}
