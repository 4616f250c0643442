import { Type, type Static } from 'typebox';
import { SharedSettings } from '@svc/proto';
import { loadConfig } from '@svc/config';
import { metricsSettings } from '@svc/telemetry';

export const DispatcherConfig = Type.Object({
  ...SharedSettings,
  ...metricsSettings(9101),
  SVC_CONTEXTS: Type.Array(Type.String({ pattern: '^[A-Za-z0-9_-]+$' }), {
    default: ['default'],
    minItems: 1,
    description: 'Routing contexts this dispatcher places, comma-separated.',
  }),
  DISPATCH_HOST_LIVENESS: Type.Number({
    default: 15,
    minimum: 0.1,
    description:
      "Seconds since its last heartbeat within which an actor host may receive new devices, counted to when the dispatcher's copy of the heartbeats was last known whole (a copy cut off from NATS does not age the hosts).",
  }),
  DISPATCH_REBALANCE_IDLE: Type.Number({
    default: 330,
    minimum: 0,
    description:
      "Seconds a device must have had no job before it moves to its preferred actor host (one that joined or came back); above the actor hosts' CONNECTION_POOL_TTL, so a device never has two sessions. 0: devices never move while their host is live.",
  }),
  DISPATCH_LEASE: Type.Integer({
    default: 10,
    minimum: 1,
    description:
      'Seconds a dispatcher leads a context without renewing; a standby takes over after it.',
  }),
});
export type DispatcherConfig = Static<typeof DispatcherConfig>;

export function loadDispatcherConfig(
  env: Readonly<Record<string, string | undefined>>,
): DispatcherConfig {
  return loadConfig(DispatcherConfig, env);
}
