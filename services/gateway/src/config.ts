import { Type, type Static } from 'typebox';
import {
  DEFAULT_DATA_DIR,
  CommandPolicySettings,
  DEFAULT_DEVICE_INPUT_LIMITS,
  DriverSettings,
  loadDriverDir,
  ReachabilitySettings,
  SharedSettings,
  commandPolicy,
  reachabilityChecks,
} from '@svc/proto';
import { loadConfig } from '@svc/config';

/** Gateway settings, read once from the environment by `main.ts`. */
export const GatewayConfig = Type.Object({
  ...SharedSettings,
  ...ReachabilitySettings,
  ...CommandPolicySettings,
  ...DriverSettings,
  SVC_PORT: Type.Integer({ default: 8443, minimum: 0, maximum: 65535, description: 'HTTPS port.' }),
  SVC_HTTP_PORT: Type.Integer({
    default: -1,
    minimum: -1,
    maximum: 65535,
    description: 'Plain-HTTP port; -1 (default) serves no plain HTTP.',
  }),
  SVC_BIND: Type.String({
    default: '',
    description:
      'Address both listeners bind; empty: HTTPS on 0.0.0.0, plain HTTP on 127.0.0.1 only.',
  }),
  SVC_DATA_DIR: Type.String({
    default: DEFAULT_DATA_DIR,
    description:
      'Directory of local state: the generated self-signed certificate and key (tls/), reused across starts.',
  }),
  SVC_TLS_CERT: Type.String({
    default: '',
    description: 'PEM certificate file; self-signed when empty.',
  }),
  SVC_TLS_KEY: Type.String({ default: '', description: 'PEM private key file.' }),
  SVC_CONTEXTS: Type.Array(Type.String({ pattern: '^[A-Za-z0-9_-]+$' }), {
    default: ['default'],
    minItems: 1,
    description: 'Valid routing contexts, comma-separated.',
  }),
  MAX_QUEUE_DEPTH: Type.Integer({
    default: 0,
    minimum: 0,
    description: 'Jobs queued per context before submissions get 503; 0 = unlimited.',
  }),
  STORE_TIMEOUT: Type.Number({
    default: 5,
    minimum: 0.5,
    maximum: 30,
    description:
      'Seconds a request that needs the store (NATS) waits for it at most; then 503 with Retry-After. A submission starts no write after it.',
  }),
  WORKER_STALE_THRESHOLD: Type.Integer({
    default: 120,
    minimum: 1,
    description: 'Seconds without a heartbeat after which an actor host counts as gone.',
  }),
  SVC_VERSION: Type.String({ default: '0.1.0', description: 'Version reported by /healthcheck.' }),
  SVC_ADMIN_SECRET: Type.String({
    default: '',
    description:
      'Basic password of key management (user admin), at least 16 characters; empty disables it for Basic.',
  }),
  SVC_OWNER_SECRET: Type.String({
    default: '',
    description:
      "HMAC key (at least 32 characters) deriving Basic callers' owner ids from user name and password; generated and kept sealed in svc-apikeys when empty.",
  }),
  BASIC_AUTH_ENABLED: Type.Boolean({
    default: true,
    description: 'Accept HTTP Basic callers on job routes (key management keeps admin Basic).',
  }),
  AUTH_FAILURE_LIMIT: Type.Integer({
    default: 10,
    minimum: 0,
    description:
      'Authentication failures per source address and per user name per minute before 429 (all gateways); 0 = unlimited.',
  }),
  SVC_JWT_SECRET: Type.String({
    default: '',
    description: 'HS256 secret signing API keys (at least 32 characters); required for Bearer.',
  }),
  API_KEY_DEFAULT_TTL: Type.Integer({
    default: 7_776_000,
    minimum: 0,
    description: 'Seconds an API key lives when created without ttl; 0 = no expiry.',
  }),
  JOB_DEDUP_ENABLED: Type.Boolean({
    default: true,
    description: 'Return the in-flight job for an identical submission.',
  }),
  RATE_LIMIT_PER_MINUTE: Type.Integer({
    default: 1000,
    minimum: 0,
    description: 'Accepted requests per caller per minute; 0 = unlimited.',
  }),
  RATE_LIMIT_DEVICE_PER_MINUTE: Type.Integer({
    default: 20,
    minimum: 0,
    description: 'Accepted jobs per caller per device per minute; 0 = unlimited.',
  }),
  BATCH_MAX_DEVICES: Type.Integer({
    default: 1000,
    minimum: 1,
    description: 'Devices per batch (POST /v2/batches); more is a 422.',
  }),
  BATCH_SWEEP_INTERVAL: Type.Number({
    default: 5,
    minimum: 0.2,
    description:
      'Seconds between the sweeps in which every gateway drives running batches (waves, end); events drive them sooner.',
  }),
  SSE_MAX_CONNECTIONS: Type.Integer({
    default: 100,
    minimum: 1,
    description:
      'Concurrent SSE streams per gateway process (job and batch streams); more get 429.',
  }),
  SSE_MAX_CONNECTIONS_PER_CALLER: Type.Integer({
    default: 0,
    minimum: 0,
    description:
      'Concurrent SSE streams of one caller per gateway process; more get 429 (that caller only). 0: a quarter of SSE_MAX_CONNECTIONS, at least 1.',
  }),
  SSE_RETRY: Type.Number({
    default: 3,
    minimum: 0.1,
    description:
      "Seconds an EventSource client waits before it reconnects, sent as each stream's `retry:` line.",
  }),
  SVC_BODY_LIMIT: Type.Integer({
    default: 1_048_576,
    minimum: 1024,
    description: 'Largest request body, bytes; a larger one is refused with 413 before it is read.',
  }),
  SVC_MAX_COMMANDS: Type.Integer({
    default: DEFAULT_DEVICE_INPUT_LIMITS.maxCommands,
    minimum: 1,
    description: 'Most commands (or configuration lines) in one job; more is a 422.',
  }),
  SVC_MAX_COMMAND_LENGTH: Type.Integer({
    default: DEFAULT_DEVICE_INPUT_LIMITS.maxCommandLength,
    minimum: 1,
    description: 'Most characters in one command or configuration line; longer is a 422.',
  }),
  SVC_JOB_INDEX_MAX: Type.Integer({
    default: 200_000,
    minimum: 100,
    description:
      'Job summaries a gateway keeps in memory for GET /v2/jobs (oldest dropped beyond it; about 300 bytes each).',
  }),
  SVC_V1_SUNSET: Type.String({
    default: '2027-01-01T00:00:00Z',
    description: 'ISO 8601 date sent in the Sunset header of every /v1 response.',
  }),
  WEBHOOK_ALLOW_HTTP: Type.Boolean({
    default: false,
    description: 'Allow http:// webhook URLs (HTTPS only otherwise).',
  }),
  WEBHOOK_TIMEOUT: Type.Integer({
    default: 10,
    minimum: 1,
    description: 'Batch webhook timeout, seconds (the gateway sends the webhook of a batch).',
  }),
});
export type GatewayConfig = Static<typeof GatewayConfig>;

export function loadGatewayConfig(
  env: Readonly<Record<string, string | undefined>>,
): GatewayConfig {
  // Every problem of a start is reported at once: schema, network entries, driver files.
  return loadConfig(GatewayConfig, env, [
    ...reachabilityChecks,
    (c) => {
      commandPolicy({
        COMMAND_POLICY: c.COMMAND_POLICY ?? [],
        COMMAND_DENY_PATTERNS: c.COMMAND_DENY_PATTERNS ?? [],
      });
    },
    (c) => loadDriverDir(c.SVC_DRIVERS_DIR ?? '').problems,
  ]);
}
