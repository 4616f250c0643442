/**
 * Every NATS name the services share: subjects, streams, consumers, buckets and headers.
 * Builders reject tokens that would change a subject's shape (`.`, `*`, `>`, whitespace).
 */

const UNSAFE_TOKEN = /[.*>\s]/;

/** Throws when a value cannot be one subject token. */
export function subjectToken(value: string): string {
  if (value.length === 0 || UNSAFE_TOKEN.test(value)) {
    throw new Error(`not a valid subject token: ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * Encodes any string (a host name, an IPv6 address) into one safe token: letters, digits, `-`
 * and `_` are kept; every other byte becomes `_xx` (hex), so the encoding is reversible.
 */
export function encodeToken(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += /[A-Za-z0-9-]/.test(ch) ? ch : `_${byte.toString(16).padStart(2, '0')}`;
  }
  return out;
}

export const Streams = {
  /** Accepted jobs, one subject per routing context. Work-queue retention. */
  jobs: 'SVC_JOBS',
  /** Jobs placed on one actor host. Work-queue retention. */
  actor: 'SVC_ACTOR',
  /** Job status and result events for SSE, webhooks and outside subscribers. */
  events: 'SVC_EVENTS',
} as const;

export const Subjects = {
  jobsAll: 'svc.jobs.>',
  jobs: (context: string) => `svc.jobs.${subjectToken(context)}`,
  actorAll: 'svc.actor.>',
  actor: (hostId: string) => `svc.actor.${subjectToken(hostId)}`,
  eventsAll: 'svc.events.job.>',
  jobEvents: (jobId: string) => `svc.events.job.${subjectToken(jobId)}.>`,
  jobEvent: (jobId: string, status: string) =>
    `svc.events.job.${subjectToken(jobId)}.${subjectToken(status)}`,
  /** Events of batches: per-device `job.<status>` and the batch's own `finished`/`cancelled`. */
  batchEventsAll: 'svc.events.batch.>',
  batchEvents: (batchId: string) => `svc.events.batch.${subjectToken(batchId)}.>`,
  batchJobEvent: (batchId: string, status: string) =>
    `svc.events.batch.${subjectToken(batchId)}.job.${subjectToken(status)}`,
  batchEvent: (batchId: string, name: string) =>
    `svc.events.batch.${subjectToken(batchId)}.${subjectToken(name)}`,
  cancelAll: 'svc.control.cancel.>',
  cancel: (jobId: string) => `svc.control.cancel.${subjectToken(jobId)}`,
} as const;

export const Consumers = {
  /** The dispatcher's durable consumer for one context. */
  dispatch: (context: string) => `dispatch_${encodeToken(context)}`,
  /** An actor host's durable consumer of its own placement subject. */
  actor: (hostId: string) => `actor_${encodeToken(hostId)}`,
} as const;

export const Buckets = {
  jobs: 'svc-jobs',
  failed: 'svc-failed',
  dedup: 'svc-dedup',
  idempotency: 'svc-idem',
  workers: 'svc-workers',
  breakers: 'svc-breakers',
  lockout: 'svc-lockout',
  apiKeys: 'svc-apikeys',
  revoked: 'svc-revoked',
  rateLimit: 'svc-ratelimit',
  locks: 'svc-locks',
  /** Batch records (key: batch id) and held envelopes of rollout waves (`<batch>.held.<job>`). */
  batches: 'svc-batches',
  /** Pinned SSH host keys per device (context|address|port), shared cluster-wide. */
  hostKeys: 'svc-hostkeys',
  /** Device session transcripts (key: job id), kept as long as job records. */
  transcripts: 'svc-transcripts',
  /** Configuration templates per context (key: `<context>.<name>`, both encoded), with history. */
  templates: 'svc-templates',
} as const;
export type Bucket = (typeof Buckets)[keyof typeof Buckets];

/**
 * Object store buckets (stream `OBJ_<bucket>`, subjects `$O.<bucket>.C.>` for chunks and
 * `$O.<bucket>.M.>` for metadata).
 */
export const ObjectBuckets = {
  /** Job results too large for a record (key: job id); the record's `results_ref` points here. */
  results: 'svc-results',
} as const;

/** Keys inside `svc-locks`. */
export const LockKeys = {
  reaper: 'reaper',
  dispatcher: (context: string) => `dispatcher.${encodeToken(context)}`,
  device: (deviceKey: string) => `device.${encodeToken(deviceKey)}`,
  /**
   * The actor host a device's jobs are placed on (`DevicePlacementEntry`), written by the leading
   * dispatcher when it changes: a new leader keeps each device where its jobs are queued.
   */
  placement: (deviceKey: string) => `placement.${encodeToken(deviceKey)}`,
} as const;

/** Value of `LockKeys.placement`. */
export interface DevicePlacementEntry {
  device: string;
  host: string;
}

export const Headers = {
  /** W3C trace context, carried from the gateway through the dispatcher to the actor. */
  traceparent: 'traceparent',
  tracestate: 'tracestate',
  /** JetStream's own de-duplication header. */
  msgId: 'Nats-Msg-Id',
  /**
   * Marks the reaper's probe for a job's envelope on `svc.jobs.<context>` (same message id as
   * the envelope): stored only when the envelope never was, and then dropped by the dispatcher.
   */
  enqueueProbe: 'Svc-Enqueue-Probe',
} as const;
