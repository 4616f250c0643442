import { randomUUID } from 'node:crypto';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Counter } from 'prom-client';
import {
  BatchKeys,
  Buckets,
  LockKeys,
  decodeOrDrop,
  encodeJson,
  topologyFrom,
  WorkerHeartbeat,
  type JobRecord,
} from '@svc/proto';
import {
  AuditEvent,
  AuditLog,
  MetricsRegistry,
  jobFailureCounter,
  type Logger,
} from '@svc/telemetry';
import { KvMirror, Lease, bucketKeys, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
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
 * actor host silent for WORKER_STALE_THRESHOLD: its heartbeat is removed (the dispatcher gives
 * its shards to live hosts at once, and their jobs not started stay in them) and the jobs it
 * started fail with WORKER_LOST, never run again. It also fails queued records whose message
 * never reached the queue, or was lost from it (`EnqueueCheck`, NOT_ENQUEUED).
 */
export async function startReaper(config: ReaperConfig, deps: ReaperDeps): Promise<RunningReaper> {
  const { nc, log } = deps;
  const audit = deps.audit ?? new AuditLog('reaper');
  const id = `reaper-${randomUUID().slice(0, 8)}`;
  const stores = await ensureTopology(nc, topologyFrom(config));
  const registry = deps.metrics ?? new MetricsRegistry();
  const jobs = await Jobs.open(nc, stores, { onFailed: jobFailureCounter(registry) });
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
  const suspectMs = config.WORKER_SUSPECT_THRESHOLD * 1000;
  const staleMs = config.WORKER_STALE_THRESHOLD * 1000;
  const lock = new Lease(stores[Buckets.locks], LockKeys.reaper, id, intervalMs);
  const workers = stores[Buckets.workers];
  // Candidates come from a watched copy of the heartbeats: listing the bucket every cycle
  // created a consumer per second through the cluster's metadata leader. A candidate is read
  // again from the bucket before anything is reaped, so a copy that fell behind (a watch
  // re-created after a node loss) can never make a live host look dead.
  const beats = await KvMirror.start(workers, '>', log);
  const notEnqueued = new Counter({
    name: 'svc_reaper_jobs_not_enqueued_total',
    help: 'Queued job records whose message never reached the queue or was lost from it, failed with NOT_ENQUEUED.',
    registers: [registry],
  });
  // Which jobs batches hold for their later waves (a held job is checked once released): the
  // keys only, so that the held envelopes (sealed credentials among them) never reach the reaper.
  const batches = stores[Buckets.batches];
  const holds = config.JOB_REAPER_ENABLED
    ? await KvMirror.start(batches, BatchKeys.heldAll, log, { keysOnly: true })
    : null;
  const enqueueCheck = holds
    ? EnqueueCheck.start(jetstream(nc), jobs, {
        graceMs: config.ENQUEUE_GRACE * 1000,
        log,
        onFailed: () => {
          notEnqueued.inc();
          return Promise.resolve();
        },
        heldInBatch: async (batchId, jobId) => {
          const key = BatchKeys.held(batchId, jobId);
          if (holds.ready && holds.get(key) !== null) return true;
          const entry = await batches.get(key);
          return entry !== null && entry.operation === 'PUT';
        },
      })
    : null;

  // A heartbeat that is not one is never taken for a host (nor for a silent one).
  const beatOf = (key: string, value: Uint8Array) =>
    decodeOrDrop(WorkerHeartbeat, value, { consumer: 'reaper', log, where: { key } });
  const isStale = (beat: WorkerHeartbeat | null, cutoff: number): beat is WorkerHeartbeat =>
    beat !== null && Date.parse(beat.last_beat) < cutoff;

  /**
   * The heartbeat at `key` read again from the bucket (the watched copy may lag behind it), with
   * the revision a compare-and-set on it needs; null unless it is still a heartbeat silent for
   * more than `silentMs` at `now` (the moment it was read when not given).
   */
  async function readStillSilent(
    key: string,
    silentMs: number,
    now?: number,
  ): Promise<{ beat: WorkerHeartbeat; revision: number } | null> {
    const entry = await workers.get(key);
    if (!entry || entry.operation !== 'PUT') return null;
    const beat = beatOf(key, entry.value);
    if (!isStale(beat, (now ?? Date.now()) - silentMs)) return null;
    return { beat, revision: entry.revision };
  }

  /** Fails a job the host started, audited as orphaned; false when it had ended meanwhile. */
  async function orphan(hostId: string, jobId: string): Promise<JobRecord | null> {
    const record = await jobs.failLost(jobId, hostId, Jobs.lostHostReason(hostId));
    if (!record) return null;
    audit.emit(AuditEvent.jobOrphaned, {
      event: 'job.orphaned',
      request_id: record.job_id,
      job_id: record.job_id,
      worker_name: hostId,
      username: record.username,
      device_ip: record.spec.host,
      platform: record.spec.platform,
      status: 'failed',
      duration_ms: 0,
    });
    return record;
  }

  async function cycle(): Promise<string[]> {
    if (!(await lock.acquire())) return [];
    cyclesLed.inc();
    const now = Date.now();
    const cutoff = now - staleMs;
    const reaped: string[] = [];
    const candidates = beats.ready
      ? [...beats.entries()].filter(([k, e]) => isStale(beatOf(k, e.value), cutoff)).map(([k]) => k)
      : await bucketKeys(workers);
    for (const key of candidates) {
      const stale = await readStillSilent(key, staleMs, now);
      if (!stale) continue;
      const { beat } = stale;
      // Its heartbeat goes first, by compare-and-set on the entry read: a host that beat in
      // between was only slow, and its started jobs are still running. Gone, its shards go to
      // live hosts, and a takeover finds its started jobs gone with it.
      const removed = await workers.delete(key, { previousSeq: stale.revision }).then(
        () => true,
        () => false,
      );
      if (!removed) continue;
      // The jobs the record writes say it started (a new owner of its shards fails those too
      // when it comes to them; this also covers a context no live host serves).
      const started = (await enqueueCheck?.startedOn(beat.host_id)) ?? [];
      let orphaned = 0;
      for (const jobId of started) {
        const failed = await orphan(beat.host_id, jobId).catch((err: unknown) => {
          log.warn({ err, job_id: jobId }, "lost job not failed; its shard's next owner will");
          return null;
        });
        if (failed) orphaned++;
      }
      log.warn({ host_id: beat.host_id, orphaned }, 'reaped a silent actor host');
      reaped.push(beat.host_id);
      hostsReaped.inc();
    }
    await enqueueCheck?.sweep();
    return reaped;
  }

  /**
   * A host silent for WORKER_SUSPECT_THRESHOLD (several heartbeats missed) is marked draining, by
   * compare-and-set on the stale beat read (a beat in between, the host was only slow, wins): the
   * dispatcher then gives its shards to live hosts at once, which fence the jobs it held, so that
   * its devices' waiting jobs go on within seconds, in order, and a host that was only frozen
   * starts none of them when it wakes. Its started jobs keep WORKER_STALE_THRESHOLD's margin.
   * Only while another host beats: when every host looks silent, the store is more likely the
   * one that is slow, and moving shards would only move them nowhere.
   */
  async function markSuspects(): Promise<void> {
    if (!beats.ready) return;
    const now = Date.now();
    const known = [...beats.entries()].flatMap(([key, e]) => {
      const beat = beatOf(key, e.value);
      return beat ? [{ key, beat, age: now - Date.parse(beat.last_beat) }] : [];
    });
    const silent = known.filter((b) => b.age > suspectMs && b.age < staleMs && !b.beat.draining);
    if (silent.length === 0) return;
    if (!known.some((b) => b.age <= suspectMs && !b.beat.draining)) return;
    if (!(await lock.acquire())) return;
    for (const { key } of silent) {
      const suspect = await readStillSilent(key, suspectMs);
      if (!suspect || suspect.beat.draining) continue;
      const { beat } = suspect;
      const marked = await workers
        .update(
          key,
          encodeJson({ ...beat, draining: true } satisfies WorkerHeartbeat),
          suspect.revision,
        )
        .then(
          () => true,
          () => false,
        );
      if (marked) {
        log.warn(
          { host_id: beat.host_id },
          'marked a silent actor host draining: its shards go to live hosts',
        );
      }
    }
  }

  let timer: NodeJS.Timeout | null = null;
  let suspectTimer: NodeJS.Timeout | null = null;
  let suspectCheck: Promise<unknown> | null = null;
  let current: Promise<unknown> | null = null;
  if (config.JOB_REAPER_ENABLED && suspectMs > 0 && suspectMs < staleMs) {
    suspectTimer = setInterval(
      () => {
        if (suspectCheck || current) return;
        suspectCheck = markSuspects()
          .catch((err: unknown) => log.error({ err }, 'suspect check failed'))
          .finally(() => {
            suspectCheck = null;
          });
      },
      Math.min(1000, suspectMs / 2),
    );
  }
  if (config.JOB_REAPER_ENABLED) {
    timer = setInterval(() => {
      // A slow cycle (many jobs to fail) must not overlap the next one.
      if (current) return;
      current = (suspectCheck ?? Promise.resolve())
        .then(() => cycle())
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
      if (suspectTimer) clearInterval(suspectTimer);
      await current;
      await suspectCheck;
      beats.stop();
      holds?.stop();
      enqueueCheck?.stop();
      await lock.release().catch(() => undefined);
    },
  };
}
