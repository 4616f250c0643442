import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  Buckets,
  decodeOrDrop,
  HealthStatus,
  type HealthRecord,
  WorkerHeartbeat,
} from '@svc/proto';
import { KvMirror, type Stores } from '@svc/nats';
import type { QueueDepth } from './queue-depth.js';

/** Reads the cluster's live state (heartbeats, backlog, failed jobs) for health and contexts. */
export class ClusterStatus {
  readonly #startedAt = Date.now();
  /** Heartbeats, kept current by a watch of `svc-workers` (no listing per request). */
  #beats: KvMirror | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly stores: Stores,
    private readonly depth: QueueDepth,
    private readonly options: {
      version: string;
      staleThresholdSeconds: number;
      /** Where a heartbeat that is not one is logged (then left out). */
      log?: { warn(obj: object, msg: string): void };
    },
  ) {}

  /** Starts following the heartbeats; call once before serving. */
  async start(): Promise<void> {
    this.#beats = await KvMirror.start(this.stores[Buckets.workers]);
  }

  stop(): void {
    this.#beats?.stop();
  }

  /** Heartbeats younger than WORKER_STALE_THRESHOLD. */
  liveWorkers(): Promise<WorkerHeartbeat[]> {
    const cutoff = Date.now() - this.options.staleThresholdSeconds * 1000;
    const log = this.options.log ?? { warn: () => undefined };
    const beats = [...(this.#beats?.entries() ?? [])].map(([key, e]) =>
      decodeOrDrop(WorkerHeartbeat, e.value, { consumer: 'cluster_status', log, where: { key } }),
    );
    return Promise.resolve(
      beats.filter(
        (beat): beat is WorkerHeartbeat => beat !== null && Date.parse(beat.last_beat) >= cutoff,
      ),
    );
  }

  async failedJobs(): Promise<number> {
    const status = await this.stores[Buckets.failed].status();
    return status.values;
  }

  async health(): Promise<HealthRecord> {
    const base = {
      version: this.options.version,
      uptime_seconds: Math.floor((Date.now() - this.#startedAt) / 1000),
    };
    try {
      await withTimeout(this.nc.flush(), 2000);
      await withTimeout(this.jsm.getAccountInfo(), 2000);
    } catch {
      return {
        ...base,
        status: HealthStatus.degraded,
        components: {
          redis: { status: 'unhealthy' },
          queue: { status: 'unhealthy', depth: 0 },
          workers: { status: 'unhealthy', count: 0, active_jobs: 0 },
          failed_jobs: 0,
        },
        message: 'NATS does not answer',
      };
    }
    const [workers, depth, failed] = await Promise.all([
      this.liveWorkers(),
      this.depth.total(),
      this.failedJobs(),
    ]);
    const activeJobs = workers.reduce((n, w) => n + w.active_jobs, 0);
    return {
      ...base,
      status: workers.length > 0 ? HealthStatus.healthy : HealthStatus.noWorkers,
      components: {
        redis: { status: 'healthy' },
        queue: { status: 'healthy', depth: Math.max(0, depth - activeJobs) },
        workers: {
          status: workers.length > 0 ? 'healthy' : 'no_workers',
          count: workers.length,
          active_jobs: activeJobs,
        },
        failed_jobs: failed,
      },
    };
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timeout')), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
