import { Type, type Static } from 'typebox';
import { SharedSettings } from '@svc/proto';
import { loadConfig } from '@svc/config';
import { metricsSettings } from '@svc/telemetry';

export const ReaperConfig = Type.Object({
  ...SharedSettings,
  ...metricsSettings(9103),
  JOB_REAPER_ENABLED: Type.Boolean({ default: true, description: 'Run the job reaper.' }),
  JOB_REAPER_INTERVAL: Type.Number({
    default: 60,
    minimum: 0.1,
    description: 'Seconds between reaper cycles (also the reaper lock lifetime).',
  }),
  ENQUEUE_GRACE: Type.Number({
    default: 30,
    minimum: 0.1,
    maximum: 60,
    description:
      'Seconds after which a queued job record whose message is not in the queue is failed with NOT_ENQUEUED (checked while JetStream still remembers the message id, 120 s).',
  }),
  WORKER_STALE_THRESHOLD: Type.Number({
    default: 120,
    minimum: 0.1,
    description: 'Seconds without a heartbeat after which an actor host is lost.',
  }),
  WORKER_SUSPECT_THRESHOLD: Type.Number({
    default: 5,
    minimum: 0,
    description:
      'Seconds without a heartbeat after which an actor host is marked draining and its shards go to live hosts (its never-started jobs fenced, so a host that was only slow cannot start them); its started jobs wait for WORKER_STALE_THRESHOLD. Several HEARTBEAT_INTERVALs. 0: only after WORKER_STALE_THRESHOLD.',
  }),
});
export type ReaperConfig = Static<typeof ReaperConfig>;

export function loadReaperConfig(env: Readonly<Record<string, string | undefined>>): ReaperConfig {
  return loadConfig(ReaperConfig, env);
}
