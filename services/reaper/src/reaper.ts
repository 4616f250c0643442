import { randomUUID } from 'node:crypto';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Counter } from 'prom-client';
import {
  AuditEvent,
  AuditLog,
  Buckets,
  JobLifecycle,
  JobStore,
  KvMirror,
  Lease,
  LockKeys,
  MetricsRegistry,
  decodeOrDrop,
  drainHost,
  encodeJson,
  ensureTopology,
  jobFailureCounter,
  topologyFrom,
  type Logger,
  WorkerHeartbeat,
} from '@svc/proto';
import type { ReaperConfig } from './config.js';
import { EnqueueCheck } from './enqueue-check.js';

export interface ReaperDeps {
  nc: NatsConnection;
  log: Logger;
  audit?: AuditLog;
  /** Where its metrics go (the process's registry); a private one when absent. */
  metrics?: MetricsRegistry;
}

export interface RunningReaper {
  /** Runs one cycle now (tests); resolves with the hosts reaped. */
  cycle(): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * Watches heartbeats. Each cycle, the reaper holding the lock (one per cluster) takes every
 * actor host silent for WORKER_STALE_THRESHOLD: its started jobs fail with WORKER_LOST (never
 * run again), its placed-but-unstarted jobs go back for placement on a live host. It also fails
 * queued records whose message never reached the queue (`EnqueueCheck`, NOT_ENQUEUED).
 */
export async function startReaper(config: ReaperConfig, deps: ReaperDeps): Promise<RunningReaper> {
  const { nc, log } = deps;
  const audit = deps.audit ?? new AuditLog('reaper');
  const id = `reaper-${randomUUID().slice(0, 8)}`;
  const stores = await ensureTopology(nc, topologyFrom(config));
  const jobs = new JobStore(stores[Buckets.jobs], nc);
  const registry = deps.metrics ?? new MetricsRegistry();
  const lifecycle = new JobLifecycle(
    jobs,
    stores[Buckets.failed],
    stores[Buckets.dedup],
    jobFailureCounter(registry),
  );
  const cyclesLed = new Counter({
    name: 'svc_reaper_cycles_total',
    help: 'Reaper cycles this process ran while holding the cluster lock.',
    registers: [registry],
  });
  const hostsReaped = new Counter({
    name: 'svc_reaper_hosts_reaped_total',
    help: 'Silent actor hosts this process reaped (their started jobs failed with WORKER_LOST).',
    registers: [registry],
  });
  const intervalMs = config.JOB_REAPER_INTERVAL * 1000;
  const lock = new Lease(stores[Buckets.locks], LockKeys.reaper, id, intervalMs);
  const workers = stores[Buckets.workers];
  // Candidates come from a watched copy of the heartbeats: listing the bucket every cycle
  // created a consumer per second through the cluster's metadata leader. A candidate is read
  // again from the bucket before anything is reaped, so a copy that fell behind (a watch
  // re-created after a node loss) can never make a live host look dead.
  const beats = await KvMirror.start(workers);
  const notEnqueued = new Counter({
    name: 'svc_reaper_jobs_not_enqueued_total',
    help: 'Queued job records whose message never reached the queue, failed with NOT_ENQUEUED.',
    registers: [registry],
  });
  const enqueueCheck = config.JOB_REAPER_ENABLED
    ? await EnqueueCheck.start(jetstream(nc), lifecycle, {
        graceMs: config.ENQUEUE_GRACE * 1000,
        log,
        onFailed: async (record) => {
          notEnqueued.inc();
          await jobs.publishEvent(record).catch(() => undefined);
        },
      })
    : null;

  // A heartbeat that is not one is never taken for a host (nor for a silent one).
  const beatOf = (key: string, value: Uint8Array) =>
    decodeOrDrop(WorkerHeartbeat, value, { consumer: 'reaper', log, where: { key } });
  const isStale = (beat: WorkerHeartbeat | null, cutoff: number): beat is WorkerHeartbeat =>
    beat !== null && Date.parse(beat.last_beat) < cutoff;

  async function cycle(): Promise<string[]> {
    if (!(await lock.acquire())) return [];
    cyclesLed.inc();
    const cutoff = Date.now() - config.WORKER_STALE_THRESHOLD * 1000;
    const reaped: string[] = [];
    const candidates = beats.ready
      ? [...beats.entries()].filter(([k, e]) => isStale(beatOf(k, e.value), cutoff)).map(([k]) => k)
      : await collectKeys(await workers.keys());
    for (const key of candidates) {
      const entry = await workers.get(key);
      if (!entry || entry.operation !== 'PUT') continue;
      const beat = beatOf(key, entry.value);
      if (!isStale(beat, cutoff)) continue;
      // Mark it draining first, so that dispatchers stop placing jobs on it while it is
      // emptied (a job placed there after the drain would wait for nobody).
      await workers
        .update(
          key,
          encodeJson({ ...beat, draining: true } satisfies WorkerHeartbeat),
          entry.revision,
        )
        .catch(() => undefined);
      await new Promise((r) => setTimeout(r, 200));
      const outcome = await drainHost(nc, lifecycle, beat.host_id, {
        failStarted: true,
        reason: `actor host ${beat.host_id} stopped sending heartbeats`,
        log,
        onOrphaned: async (record) => {
          audit.emit(AuditEvent.jobOrphaned, {
            event: 'job.orphaned',
            request_id: record.job_id,
            job_id: record.job_id,
            worker_name: beat.host_id,
            username: record.username,
            device_ip: record.spec.host,
            platform: record.spec.platform,
            status: 'failed',
            duration_ms: 0,
          });
          await jobs.publishEvent(record).catch(() => undefined);
        },
      });
      await workers.delete(key).catch(() => undefined);
      log.warn(
        {
          host_id: beat.host_id,
          orphaned: outcome.orphaned.length,
          handed_back: outcome.handedBack.length,
        },
        'reaped a silent actor host',
      );
      reaped.push(beat.host_id);
      hostsReaped.inc();
    }
    await enqueueCheck?.sweep();
    return reaped;
  }

  let timer: NodeJS.Timeout | null = null;
  let current: Promise<unknown> | null = null;
  if (config.JOB_REAPER_ENABLED) {
    timer = setInterval(() => {
      // A slow cycle (many jobs to hand back) must not overlap the next one.
      if (current) return;
      current = cycle()
        .catch((err: unknown) => log.error({ err }, 'reaper cycle failed'))
        .finally(() => {
          current = null;
        });
    }, intervalMs);
  }
  log.info({ id, enabled: config.JOB_REAPER_ENABLED }, 'reaper started');
  return {
    cycle,
    async stop() {
      if (timer) clearInterval(timer);
      await current;
      beats.stop();
      enqueueCheck?.stop();
      await lock.release().catch(() => undefined);
    },
  };
}

async function collectKeys(keys: AsyncIterable<string>): Promise<string[]> {
  const all: string[] = [];
  for await (const key of keys) all.push(key);
  return all;
}
