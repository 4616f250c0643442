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
    description: 'Routing contexts whose shards this dispatcher assigns, comma-separated.',
  }),
  DISPATCH_HOST_LIVENESS: Type.Number({
    default: 15,
    minimum: 0.1,
    description:
      "Seconds since its last heartbeat within which an actor host is assigned shards and keeps them, counted to when the dispatcher's copy of the heartbeats was last known whole (a copy cut off from NATS does not age the hosts).",
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
