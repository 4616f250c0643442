import { Type, type Static } from 'typebox';
import {
  HostKeySettings,
  ReachabilitySettings,
  SharedSettings,
  deviceNetworkPolicy,
  hostKeyModes,
  loadConfig,
  webhookNetworkPolicy,
} from '@svc/proto';

export const DeviceActorConfig = Type.Object({
  ...SharedSettings,
  ...ReachabilitySettings,
  ...HostKeySettings,
  WORKER_CONTEXTS: Type.Array(Type.String({ pattern: '^[A-Za-z0-9_-]+$' }), {
    default: ['default'],
    minItems: 1,
    description: 'Routing contexts this actor host serves, comma-separated.',
  }),
  ACTOR_HOST_ID: Type.String({
    default: '',
    description: 'Identity of this host in placement; unique per process start when empty.',
  }),
  ACTOR_MAX_SESSIONS: Type.Integer({
    default: 500,
    minimum: 1,
    description: 'Most SSH sessions this host runs at once (all devices).',
  }),
  DEVICE_MAX_SESSIONS: Type.Integer({
    default: 1,
    minimum: 1,
    description: 'Most concurrent jobs (sessions) per device.',
  }),
  HEARTBEAT_INTERVAL: Type.Number({
    default: 5,
    minimum: 0.1,
    description: 'Seconds between heartbeats in svc-workers.',
  }),
  SHUTDOWN_GRACE: Type.Integer({
    default: 30,
    minimum: 0,
    description: 'Seconds SIGTERM waits for running jobs before closing their sessions.',
  }),
  CONNECTION_POOL_ENABLED: Type.Boolean({ default: true, description: 'Keep sessions warm.' }),
  CONNECTION_POOL_TTL: Type.Integer({
    default: 300,
    minimum: 1,
    description: 'Seconds an idle warm session is kept.',
  }),
  CONNECTION_POOL_MAX_SIZE: Type.Integer({
    default: 100,
    minimum: 1,
    description: 'Most warm sessions held by this host.',
  }),
  CONNECTION_POOL_EXCLUDE: Type.Array(Type.String(), {
    default: [],
    description: 'Addresses or platform ids never pooled, comma-separated.',
  }),
  WEBHOOK_ALLOW_HTTP: Type.Boolean({
    default: false,
    description: 'Allow http:// webhook URLs (HTTPS only otherwise).',
  }),
  WEBHOOK_TIMEOUT: Type.Integer({
    default: 10,
    minimum: 1,
    description: 'Webhook timeout, seconds.',
  }),
  SVC_TEXTFSM_DIR: Type.String({
    default: '',
    description: 'Community TextFSM templates (an index file and *.textfsm files).',
  }),
  SVC_TTP_TEMPLATES_DIR: Type.String({
    default: '',
    description: 'Directory that ttp:// template references resolve under.',
  }),
  BREAKER_THRESHOLD: Type.Integer({
    default: 5,
    minimum: 1,
    description: 'Consecutive connection failures to a device that open its circuit breaker.',
  }),
  BREAKER_OPEN_SECONDS: Type.Integer({
    default: 300,
    minimum: 1,
    description: 'Seconds a breaker stays open before one half-open probe.',
  }),
  SVC_PARSE_TIMEOUT_MS: Type.Integer({
    default: 2000,
    minimum: 10,
    description: 'Longest a template may take on one command output, milliseconds.',
  }),
});
export type DeviceActorConfig = Static<typeof DeviceActorConfig>;

export function loadDeviceActorConfig(
  env: Readonly<Record<string, string | undefined>>,
): DeviceActorConfig {
  const config = loadConfig(DeviceActorConfig, env);
  // The network policies parse their entries: a bad one stops the start, every one reported.
  deviceNetworkPolicy(config);
  webhookNetworkPolicy(config);
  hostKeyModes(config.HOST_KEY_POLICY);
  return config;
}
