import { Type } from 'typebox';

/** Retention settings of the shared NATS state. Durations in seconds. */
export interface TopologyOptions {
  /** Stream and bucket replicas: 1 on one node, 3 on a 3-node cluster. */
  replicas: number;
  /** How long job records live (JOB_TTL_SUCCESS). */
  jobTtlSeconds: number;
  /** How long failed-job entries live (JOB_TTL_FAILED). */
  failedTtlSeconds: number;
  /** At most this many failed-job entries (FAILED_JOB_MAX_RETAIN). */
  failedMaxRetain: number;
  /** Lifetime of idempotency keys (IDEMPOTENCY_TTL). */
  idempotencyTtlSeconds: number;
  /** Lifetime of in-flight dedup keys (JOB_TIMEOUT + 60). */
  dedupTtlSeconds: number;
  /** Age of kept job events; at least the SSE stream timeout. */
  eventsMaxAgeSeconds: number;
  /**
   * Whether `SVC_EVENTS` also keeps every job's status events (JOB_EVENTS_REPLAY), for outside
   * JetStream followers that replay them. Off: they are core NATS messages only (the batch
   * events are kept either way).
   */
  jobEventsKept: boolean;
}

export const DefaultTopology: TopologyOptions = {
  replicas: 1,
  jobTtlSeconds: 86_400,
  failedTtlSeconds: 7 * 86_400,
  failedMaxRetain: 500,
  idempotencyTtlSeconds: 86_400,
  dedupTtlSeconds: 180,
  eventsMaxAgeSeconds: 600,
  jobEventsKept: false,
};

/**
 * The work queues' duplicate window: a message id seen within it is dropped. The reaper's
 * enqueue check relies on it to learn whether a job's envelope was ever stored.
 */
export const JOBS_DUPLICATE_WINDOW_SECONDS = 120;

/**
 * Safety margin before the duplicate window ends: past it, a message id proves nothing (the
 * reaper's probe) and a job's envelope is not published again (an idempotent repeat).
 */
export const JOBS_DUPLICATE_WINDOW_MARGIN_MS = 15_000;

/**
 * Settings every service reads. Each service's `config.ts` spreads these into its own schema.
 * Durations are seconds, as in the specification.
 */
export const SharedSettings = {
  NATS_URL: Type.String({
    default: 'nats://127.0.0.1:4222',
    description: 'NATS server URL(s), comma-separated for a cluster.',
  }),
  NATS_CREDS_FILE: Type.String({
    default: '',
    description:
      'Path of a NATS .creds file (user JWT and nkey seed; decentralized auth). Empty: not used.',
  }),
  NATS_NKEY_SEED_FILE: Type.String({
    default: '',
    description: 'Path of a file holding the NATS user nkey seed (SU...). Empty: not used.',
  }),
  NATS_USER: Type.String({
    default: '',
    description: 'NATS user name (with NATS_PASSWORD). Empty: not used.',
  }),
  NATS_PASSWORD: Type.String({
    default: '',
    description: 'Password of NATS_USER. Secret: never logged.',
  }),
  NATS_TOKEN: Type.String({
    default: '',
    description: 'NATS authorization token (instead of a user). Secret: never logged.',
  }),
  NATS_TLS_CA: Type.String({
    default: '',
    description:
      'Path of the CA certificate (PEM) that signed the NATS servers; set it to require TLS.',
  }),
  NATS_TLS_CERT: Type.String({
    default: '',
    description: 'Path of the client certificate (PEM) for NATS mutual TLS (with NATS_TLS_KEY).',
  }),
  NATS_TLS_KEY: Type.String({
    default: '',
    description: 'Path of the private key (PEM) of NATS_TLS_CERT.',
  }),
  NATS_REPLICAS: Type.Integer({
    default: 1,
    minimum: 1,
    maximum: 5,
    description: 'Replicas of streams and buckets (3 on a 3-node cluster).',
  }),
  LOG_LEVEL: Type.String({ default: 'INFO', description: 'DEBUG, INFO, WARNING or ERROR.' }),
  LOG_FORMAT: Type.String({
    default: '',
    pattern: '^(|json|pretty)$',
    description:
      'json or pretty (human-readable, by pino-pretty). Empty: pretty when stdout is a terminal, else JSON.',
  }),
  SVC_ENCRYPTION_KEY: Type.String({
    default: '',
    description:
      'AES-256-GCM keyring sealing device credentials: comma-separated base64 32-byte keys, newest first. Required.',
  }),
  JOB_TIMEOUT: Type.Integer({
    default: 120,
    minimum: 1,
    description: 'Seconds a job may run before it fails with JOB_TIMEOUT.',
  }),
  JOB_TTL_SUCCESS: Type.Integer({
    default: 86_400,
    minimum: 60,
    description: 'Seconds a job record (and its results) is kept.',
  }),
  JOB_TTL_FAILED: Type.Integer({
    default: 604_800,
    minimum: 60,
    description: 'Seconds a failed job stays in the failed-job registry.',
  }),
  FAILED_JOB_MAX_RETAIN: Type.Integer({
    default: 500,
    minimum: 1,
    description: 'Most entries kept in the failed-job registry.',
  }),
  IDEMPOTENCY_TTL: Type.Integer({
    default: 86_400,
    minimum: 1,
    description: 'Seconds an X-Idempotency-Key is remembered.',
  }),
  JOB_EVENTS_REPLAY: Type.Boolean({
    default: false,
    description:
      "true: SVC_EVENTS also keeps every job's status events (svc.events.job.>) for JetStream followers that replay them (three stored messages per job). false: they are core NATS messages for live subscribers; a stream that already keeps them goes on doing so (no service removes a subject: docs/events.md).",
  }),
  LOCKOUT_THRESHOLD: Type.Integer({
    default: 10,
    minimum: 1,
    description:
      'Failed device logins per user per device within LOCKOUT_WINDOW that lock the user out.',
  }),
  LOCKOUT_WINDOW: Type.Integer({
    default: 600,
    minimum: 1,
    description: 'Sliding window of the device lockout, seconds.',
  }),
  OTEL_SDK_DISABLED: Type.Boolean({
    default: false,
    description: 'true: no OpenTelemetry at all, whatever the other OTEL_* variables say.',
  }),
  OTEL_TRACES_EXPORTER: Type.String({
    default: '',
    pattern: '^((otlp|console|none)(,(otlp|console|none))*)?$',
    description:
      'Where spans go: otlp, console or none (comma-separated for several; none wins). Empty: otlp when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_ENABLED=true, else none (tracing off).',
  }),
  OTEL_ENABLED: Type.Boolean({
    default: false,
    description:
      'Deprecated (the specification names it): true means OTEL_TRACES_EXPORTER=otlp when that is empty, and OTLP over gRPC to http://localhost:4317 unless the protocol and endpoint are set.',
  }),
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.String({
    default: '',
    description:
      'OTLP base endpoint of the collector; setting it turns tracing on. For http/protobuf and http/json, /v1/traces is appended for traces. Empty: http://localhost:4318 (http) or http://localhost:4317 (grpc), as the SDK defaults.',
  }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Type.String({
    default: '',
    description:
      'OTLP endpoint for traces, used as given (http: the full URL, e.g. http://collector:4318/v1/traces); setting it turns tracing on. Empty: from OTEL_EXPORTER_OTLP_ENDPOINT.',
  }),
  OTEL_EXPORTER_OTLP_PROTOCOL: Type.String({
    default: '',
    pattern: '^(grpc|http/protobuf|http/json)?$',
    description:
      'OTLP transport: http/protobuf, http/json or grpc. Empty: http/protobuf (the OpenTelemetry SDK default), grpc under the deprecated OTEL_ENABLED=true.',
  }),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: Type.String({
    default: '',
    pattern: '^(grpc|http/protobuf|http/json)?$',
    description: 'OTLP transport for traces. Empty: OTEL_EXPORTER_OTLP_PROTOCOL.',
  }),
  OTEL_TRACES_SAMPLER: Type.String({
    default: '',
    pattern:
      '^(always_on|always_off|traceidratio|parentbased_always_on|parentbased_always_off|parentbased_traceidratio)?$',
    description:
      'Which spans are recorded: always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio. Empty: parentbased_always_on (the SDK default).',
  }),
  OTEL_TRACES_SAMPLER_ARG: Type.String({
    default: '',
    description:
      'The ratio of the traceidratio samplers, 0 to 1. Empty or not a number in [0, 1]: 1 (as the SDK).',
  }),
  OTEL_RESOURCE_ATTRIBUTES: Type.String({
    default: '',
    description:
      'Extra resource attributes, key=value pairs separated by commas (values percent-encoded), e.g. deployment.environment=prod.',
  }),
  OTEL_SERVICE_NAME: Type.String({
    default: 'svc',
    description: 'service.name of the spans (wins over service.name in OTEL_RESOURCE_ATTRIBUTES).',
  }),
  SVC_BUILD_COMMIT: Type.String({
    default: '',
    description:
      'Source commit of this build, shown as the commit label of svc_build_info (the image sets it from a build argument). Empty: unknown.',
  }),
  SSE_TIMEOUT: Type.Integer({
    default: 300,
    minimum: 1,
    description: 'Seconds an SSE stream stays open before its timeout event.',
  }),
};

type SharedValues = {
  NATS_REPLICAS: number;
  JOB_TIMEOUT: number;
  JOB_TTL_SUCCESS: number;
  JOB_TTL_FAILED: number;
  FAILED_JOB_MAX_RETAIN: number;
  IDEMPOTENCY_TTL: number;
  JOB_EVENTS_REPLAY: boolean;
  SSE_TIMEOUT: number;
};

export function topologyFrom(config: SharedValues): TopologyOptions {
  return {
    replicas: config.NATS_REPLICAS,
    jobTtlSeconds: config.JOB_TTL_SUCCESS,
    failedTtlSeconds: config.JOB_TTL_FAILED,
    failedMaxRetain: config.FAILED_JOB_MAX_RETAIN,
    idempotencyTtlSeconds: config.IDEMPOTENCY_TTL,
    dedupTtlSeconds: config.JOB_TIMEOUT + 60,
    eventsMaxAgeSeconds: Math.max(600, config.SSE_TIMEOUT * 2),
    jobEventsKept: config.JOB_EVENTS_REPLAY,
  };
}
