import type { KV } from '@nats-io/kv';
import { Gauge } from 'prom-client';
import { ACTOR_CAPABILITIES, encodeJson, type WorkerHeartbeat } from '@svc/proto';
import { type MetricsRegistry } from '@svc/telemetry';
import type { DeviceActorConfig } from '../config.js';
import type { Semaphore } from './mailbox.js';

/** What a host tells about itself: its heartbeat and its gauges. */
export interface HostState {
  hostId: string;
  config: DeviceActorConfig;
  sessions: Semaphore;
  /** Jobs running now. */
  running: () => number;
  /** Devices with a mailbox on this host. */
  devices: () => number;
  /** Warm-session counters. */
  poolStats?: () => { size: number; hits: number; misses: number };
  draining: () => boolean;
  startedAt: string;
}

/** Writes the host's heartbeat record (`svc-workers`, key: the host id). */
export function heartbeatWriter(workers: KV, host: HostState): () => Promise<void> {
  const { config } = host;
  return async () => {
    const pool = host.poolStats?.() ?? { size: 0, hits: 0, misses: 0 };
    const hb: WorkerHeartbeat = {
      host_id: host.hostId,
      contexts: [...config.WORKER_CONTEXTS],
      capacity: config.ACTOR_MAX_SESSIONS,
      busy: host.sessions.inUse,
      active_jobs: host.running(),
      started_at: host.startedAt,
      last_beat: new Date().toISOString(),
      pool_size: pool.size,
      pool_hits: pool.hits,
      pool_misses: pool.misses,
      draining: host.draining(),
      capabilities: [...ACTOR_CAPABILITIES],
    };
    await workers.put(host.hostId, encodeJson(hb));
  };
}

/** Per host (the gateway's svc_workers_* and svc_connection_pool_* are the cluster's sums). */
export function registerHostGauges(registry: MetricsRegistry, host: HostState): void {
  const hostGauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  hostGauge(
    'svc_actor_sessions_busy',
    'Device sessions of this actor host running a job now.',
    () => host.sessions.inUse,
  );
  hostGauge(
    'svc_actor_session_slots',
    'Device session slots of this actor host (ACTOR_MAX_SESSIONS).',
    () => host.config.ACTOR_MAX_SESSIONS,
  );
  hostGauge(
    'svc_actor_sessions_warm',
    'Warm SSH sessions this actor host keeps for reuse.',
    () => host.poolStats?.().size ?? 0,
  );
  hostGauge('svc_actor_devices', 'Devices with a mailbox on this actor host.', host.devices);
}
