import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Counter } from 'prom-client';
import {
  ActorCapability,
  BatchKeys,
  Buckets,
  HostDrain,
  LockKeys,
  PlacementHeldAnswer,
  Streams,
  SubjectParsers,
  Subjects,
  decodeOrDrop,
  encodeJson,
  topologyFrom,
  WorkerHeartbeat,
} from '@svc/proto';
import {
  AuditEvent,
  AuditLog,
  MetricsRegistry,
  jobFailureCounter,
  type Logger,
} from '@svc/telemetry';
import { KvMirror, Lease, bucketKeys, ensureTopology, retryTransient } from '@svc/nats';
import { Jobs, type DrainOptions, type DrainOutcome } from '@svc/jobs';
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
 * run again), its placed-but-unstarted jobs go back for placement on a live host. Between
 * cycles it hands back early the unstarted jobs of hosts silent for WORKER_SUSPECT_THRESHOLD, and
 * those placed on hosts that had left (`drainLeftSubjects`). It also fails queued records whose
 * message never reached the queue, or left it unplaced (`EnqueueCheck`, NOT_ENQUEUED).
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
        hostBeats: async (hostId) => {
          if (beats.ready && beats.get(hostId) !== null) return true;
          const entry = await workers.get(hostId);
          return entry !== null && entry.operation === 'PUT';
        },
        hostHolds: async (hostId, seq) => {
          const reply = await nc
            .request(Subjects.placementHeld(hostId), encodeJson({ seq }), { timeout: 2000 })
            .catch(() => null); // no responder (an earlier release, or stopping), or too slow
          if (!reply) return null;
          const answer = decodeOrDrop(PlacementHeldAnswer, reply.data, {
            consumer: 'reaper',
            log,
            where: { host_id: hostId },
          });
          return answer?.held ?? null;
        },
        liveHosts: () => (beats.ready ? [...beats.entries()].map(([hostId]) => hostId) : []),
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

  // Each drain is announced (`LockKeys.drain`): under way before the host is marked draining,
  // then done with what it handed back. Dispatchers hold the devices whose last job is on the
  // host until then, even if the host beats again meanwhile, and no longer.
  const locks = stores[Buckets.locks];
  const drainRecords = await KvMirror.start(locks, LockKeys.drainAll, log);
  async function announcedDrain(
    hostId: string,
    mark: () => Promise<boolean>,
    options: Omit<DrainOptions, 'into'>,
  ): Promise<DrainOutcome | null> {
    const key = LockKeys.drain(hostId);
    const record: HostDrain = {
      host_id: hostId,
      state: 'draining',
      handed_back: [],
      started_at: new Date().toISOString(),
      ended_at: null,
    };
    // Not announced (the store did not answer): not drained now either (the next check will).
    const announced = await locks.put(key, encodeJson(record)).then(
      () => true,
      (err: unknown) => (log.warn({ err, host_id: hostId }, 'drain not announced'), false),
    );
    if (!announced) return null;
    const outcome: DrainOutcome = { handedBack: [], orphaned: [], left: [] };
    let failed = false;
    try {
      // A mark that did not take drained nothing: recorded done.
      if (!(await mark())) return null;
      return await jobs.drain(hostId, { ...options, into: outcome });
    } catch (err) {
      failed = true;
      throw err;
    } finally {
      // A drain that failed half way stays under way, with what it handed back so far: the
      // host's subject may still hold jobs of devices it did not reach, and those devices wait
      // for the next drain (dispatchers bound the wait, as for a reaper that died in a drain).
      const ended: HostDrain = failed
        ? { ...record, handed_back: outcome.handedBack }
        : {
            ...record,
            state: 'done',
            handed_back: outcome.handedBack,
            ended_at: new Date().toISOString(),
          };
      await retryTransient(() => locks.put(key, encodeJson(ended)), 30_000).catch((err: unknown) =>
        log.error({ err, host_id: hostId }, 'drain outcome not stored'),
      );
    }
  }
  /**
   * Marks a host draining by compare-and-set on the heartbeat read (a beat in between, the host
   * was only slow, wins); false when it did not take.
   */
  const markDraining = (key: string, beat: WorkerHeartbeat, revision: number) =>
    workers
      .update(key, encodeJson({ ...beat, draining: true } satisfies WorkerHeartbeat), revision)
      .then(
        () => true,
        () => false,
      );
  /** Drain records of hosts long gone or long back are removed (one key per host id). */
  async function forgetOldDrains(): Promise<void> {
    const before = Date.now() - DRAIN_RECORD_KEEP_MS;
    for (const [key, entry] of [...drainRecords.entries()]) {
      const record = decodeOrDrop(HostDrain, entry.value, {
        consumer: 'reaper',
        log,
        where: { key },
      });
      // One still under way that long belongs to a reaper that stopped during it.
      if (record && Date.parse(record.ended_at ?? record.started_at) > before) continue;
      await locks.delete(key, { previousSeq: entry.revision }).catch(() => undefined);
    }
  }

  async function cycle(): Promise<string[]> {
    if (!(await lock.acquire())) return [];
    cyclesLed.inc();
    const cutoff = Date.now() - config.WORKER_STALE_THRESHOLD * 1000;
    const reaped: string[] = [];
    const candidates = beats.ready
      ? [...beats.entries()].filter(([k, e]) => isStale(beatOf(k, e.value), cutoff)).map(([k]) => k)
      : await bucketKeys(workers);
    for (const key of candidates) {
      const entry = await workers.get(key);
      if (!entry || entry.operation !== 'PUT') continue;
      const beat = beatOf(key, entry.value);
      if (!isStale(beat, cutoff)) continue;
      // Mark it draining first, so that dispatchers stop placing jobs on it while it is
      // emptied (a job placed there after the drain would wait for nobody). By compare-and-set:
      // a host that beat in between was only slow, and its started jobs are still running.
      const mark = async () => {
        if (!(await markDraining(key, beat, entry.revision))) return false;
        await new Promise((r) => setTimeout(r, 200));
        return true;
      };
      const outcome = await announcedDrain(beat.host_id, mark, {
        failStarted: true,
        reason: Jobs.lostHostReason(beat.host_id),
        log,
        onOrphaned: (record) => {
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
          return Promise.resolve();
        },
        // The jobs it started from a shard it owned (docs/shards.md) are on no subject of its
        // own: the record writes say which they are.
        startedElsewhere: () => enqueueCheck?.startedOn(beat.host_id) ?? Promise.resolve([]),
      });
      if (!outcome) continue;
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
    await forgetOldDrains().catch((err: unknown) =>
      log.warn({ err }, 'old drain records not removed'),
    );
    await enqueueCheck?.sweep();
    return reaped;
  }

  /**
   * Early hand-back: a host silent for WORKER_SUSPECT_THRESHOLD (several heartbeats missed)
   * gets no new device work: it is marked draining (dispatchers stop placing there) and its
   * never-started jobs go back, fenced, so that the devices they belong to go on within
   * seconds, in order. Its started jobs stay for WORKER_STALE_THRESHOLD's margin. Done again
   * while it stays silent and its subject holds more than those (a job placed on it meanwhile).
   * Only while another host beats: when every host looks silent, the store is more likely
   * the one that is slow, and handing back would only move jobs nowhere.
   */
  const suspectMs = config.WORKER_SUSPECT_THRESHOLD * 1000;
  const staleMs = config.WORKER_STALE_THRESHOLD * 1000;
  const jsm = await jetstreamManager(nc);
  const suspects = suspectMs > 0 && suspectMs < staleMs;
  /** Per suspect host, the started jobs left on its subject by its last early drain. */
  const leftOn = new Map<string, number>();
  /** Silent hosts of an earlier release, logged once each. */
  const unfenced = new Set<string>();
  async function handBackSuspects(): Promise<void> {
    if (!suspects || !beats.ready) return;
    const now = Date.now();
    const known = [...beats.entries()].flatMap(([key, e]) => {
      const beat = beatOf(key, e.value);
      return beat ? [{ key, beat, age: now - Date.parse(beat.last_beat) }] : [];
    });
    const silent = known.filter((b) => b.age > suspectMs && b.age < staleMs);
    for (const key of leftOn.keys()) if (!silent.some((b) => b.key === key)) leftOn.delete(key);
    for (const key of unfenced) if (!silent.some((b) => b.key === key)) unfenced.delete(key);
    if (silent.length === 0) return;
    const live = known.filter((b) => b.age <= suspectMs && !b.beat.draining);
    if (live.length === 0) return;
    if (!(await lock.acquire())) return;
    for (const { key } of silent) {
      const entry = await workers.get(key);
      if (!entry || entry.operation !== 'PUT') continue;
      const beat = beatOf(key, entry.value);
      if (!beat || Date.now() - Date.parse(beat.last_beat) <= suspectMs) continue;
      if (!(beat.capabilities ?? []).includes(ActorCapability.placementFence)) {
        // It would start the copy it holds as well: its jobs keep waiting for the full drain.
        if (!unfenced.has(key)) {
          unfenced.add(key);
          log.warn(
            { host_id: beat.host_id },
            `actor host ${beat.host_id} is silent but lacks ${ActorCapability.placementFence} (an earlier release): its jobs wait for WORKER_STALE_THRESHOLD`,
          );
        }
        continue;
      }
      const subject = Subjects.actor(beat.host_id);
      const info = await jsm.streams.info(Streams.actor, { subjects_filter: subject });
      const waiting = info.state.subjects?.[subject] ?? 0;
      if (leftOn.has(key) && waiting <= leftOn.get(key)!) continue;
      // By compare-and-set: a beat in between (the host was only slow) wins.
      const mark = async () => beat.draining || (await markDraining(key, beat, entry.revision));
      const outcome = await announcedDrain(beat.host_id, mark, {
        failStarted: false,
        reason: `actor host ${beat.host_id} stopped sending heartbeats`,
        log,
      });
      if (!outcome) continue;
      leftOn.set(key, outcome.left.length);
      if (outcome.handedBack.length > 0) earlyHandBacks.inc(outcome.handedBack.length);
      log.warn(
        {
          host_id: beat.host_id,
          handed_back: outcome.handedBack.length,
          started_left: outcome.left.length,
        },
        'handed back the unstarted jobs of a silent actor host',
      );
    }
  }
  /**
   * Host subjects holding jobs while no heartbeat names their host: placements that landed after
   * the host's last drain (its own on a stop, or a reap): a dispatcher's publish retried in place
   * past the host's leave, or decided before it saw it. No host reads them, and no drain came
   * back to them: their unstarted jobs are handed back, once a subject was seen so by two sweeps
   * in a row (a host beats within a second of starting, before it consumes). Started jobs are
   * left (a host of the same id started again may be running them).
   */
  let unbeaten = new Set<string>();
  /** Per such host, the started jobs its last drain here left on its subject. */
  const leftOnGone = new Map<string, number>();
  let lastLeftSweep = 0;
  async function drainLeftSubjects(): Promise<void> {
    lastLeftSweep = Date.now();
    if (!(await lock.acquire())) return;
    const info = await jsm.streams.info(Streams.actor, { subjects_filter: Subjects.actorAll });
    const seen = new Set<string>();
    for (const [subject, count] of Object.entries(info.state.subjects ?? {})) {
      const hostId = SubjectParsers.actorHost(subject);
      if (hostId === null || count === 0) continue;
      // A host the watched copy knows beats (the common case: no read); a candidate is read
      // from the bucket, so a copy that fell behind never makes a live host look gone.
      if (beats.ready && beats.get(hostId) !== null) continue;
      const entry = await workers.get(hostId);
      if (entry && entry.operation === 'PUT') continue;
      seen.add(hostId);
      if (!unbeaten.has(hostId) || count <= (leftOnGone.get(hostId) ?? 0)) continue;
      const outcome = await announcedDrain(hostId, () => Promise.resolve(true), {
        failStarted: false,
        reason: `actor host ${hostId} has left`,
        log,
      });
      if (!outcome) continue;
      leftOnGone.set(hostId, outcome.left.length);
      if (outcome.handedBack.length > 0) lateHandBacks.inc(outcome.handedBack.length);
      log.warn(
        {
          host_id: hostId,
          handed_back: outcome.handedBack.length,
          started_left: outcome.left.length,
        },
        'handed back jobs placed on an actor host after it left',
      );
    }
    unbeaten = seen;
    for (const hostId of leftOnGone.keys()) if (!seen.has(hostId)) leftOnGone.delete(hostId);
  }
  const lateHandBacks = new Counter({
    name: 'svc_reaper_jobs_handed_back_late_total',
    help: 'Jobs placed on an actor host after it had left (no heartbeat), handed back.',
    registers: [registry],
  });

  const earlyHandBacks = new Counter({
    name: 'svc_reaper_jobs_handed_back_early_total',
    help: 'Never-started jobs of actor hosts silent for WORKER_SUSPECT_THRESHOLD, handed back.',
    registers: [registry],
  });

  let timer: NodeJS.Timeout | null = null;
  let suspectTimer: NodeJS.Timeout | null = null;
  let suspectCheck: Promise<unknown> | null = null;
  if (config.JOB_REAPER_ENABLED) {
    suspectTimer = setInterval(
      () => {
        // Never beside a cycle: both drain hosts through one consumer name per host. The sweep of
        // left hosts' subjects drains too, so it runs in this same turn, after the suspects.
        if (suspectCheck || current) return;
        suspectCheck = handBackSuspects()
          .catch((err: unknown) => log.error({ err }, 'early hand-back failed'))
          .then(() =>
            Date.now() - lastLeftSweep >= Math.min(LEFT_SUBJECTS_EVERY_MS, intervalMs)
              ? drainLeftSubjects()
              : undefined,
          )
          .catch((err: unknown) => log.error({ err }, 'hand-back of a left host failed'))
          .finally(() => {
            suspectCheck = null;
          });
      },
      suspects ? Math.min(1000, suspectMs / 2) : 1000,
    );
  }
  let current: Promise<unknown> | null = null;
  if (config.JOB_REAPER_ENABLED) {
    timer = setInterval(() => {
      // A slow cycle (many jobs to hand back) must not overlap the next one.
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
      drainRecords.stop();
      holds?.stop();
      enqueueCheck?.stop();
      await lock.release().catch(() => undefined);
    },
  };
}

/** How often, at most, the subjects of hosts that left are looked at (one stream info request). */
const LEFT_SUBJECTS_EVERY_MS = 5000;

/** How long the record of a finished drain is kept (every copy it handed back placed by then). */
const DRAIN_RECORD_KEEP_MS = 10 * 60_000;
