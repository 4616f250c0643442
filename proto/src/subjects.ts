/**
 * Every NATS name the services share: subjects, streams, consumers, buckets and headers.
 * Builders reject tokens that would change a subject's shape (`.`, `*`, `>`, whitespace).
 */

const UNSAFE_TOKEN = /[.*>\s]/;

/** A UUID version 4 in any case (a JSON Schema pattern has no flags): what a job id is. */
export const UUID_V4_PATTERN =
  '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$';
const UUID_V4 = new RegExp(UUID_V4_PATTERN);

/** Whether a value read from a message (a header) is a job id. */
export function isJobId(value: string): boolean {
  return UUID_V4.test(value);
}

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

/**
 * How many shards a context's job subject is split into (`Subjects.jobShard`). Part of the
 * contract: a device's shard decides which consumer and so which actor host takes its jobs, and
 * every gateway, dispatcher and actor host must agree on it. A context's jobs spread over at most
 * this many actor hosts; each shard is a consumer of `SVC_JOBS`, which nats-server 2.9 pays for
 * on every message stored there (docs/performance.md, "the relay removed, and how many shards").
 */
export const JOB_SHARDS = 8;

/**
 * The shard of a device's jobs: FNV-1a (32 bit) of its device key, modulo `JOB_SHARDS`. Every
 * job of one device is on one shard subject, in the order it was stored.
 */
export function jobShardOf(deviceKey: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(deviceKey, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % JOB_SHARDS;
}

function shardToken(shard: number): string {
  if (!Number.isInteger(shard) || shard < 0 || shard >= JOB_SHARDS) {
    throw new Error(`not a job shard: ${shard}`);
  }
  return String(shard);
}

export const Streams = {
  /** Accepted jobs, one subject per routing context. Work-queue retention. */
  jobs: 'SVC_JOBS',
  /** Job status and result events for SSE, webhooks and outside subscribers. */
  events: 'SVC_EVENTS',
  /** The stream that holds a KV bucket's entries. */
  kv: (bucket: string) => `KV_${bucket}`,
} as const;

export const Subjects = {
  jobsAll: 'svc.jobs.>',
  jobs: (context: string) => `svc.jobs.${subjectToken(context)}`,
  /** One shard of a context's jobs (`jobShardOf` the device key): one consumer, one owner. */
  jobShard: (context: string, shard: number) =>
    `svc.jobs.${subjectToken(context)}.${shardToken(shard)}`,
  /** Every shard of a context's jobs. */
  jobShards: (context: string) => `svc.jobs.${subjectToken(context)}.*`,
  /** Every shard of every context's jobs (not `svc.jobs.<context>`, a token shorter). */
  jobShardsAll: 'svc.jobs.*.*',
  eventsAll: 'svc.events.job.>',
  jobEvents: (jobId: string) => `svc.events.job.${subjectToken(jobId)}.>`,
  jobEvent: (jobId: string, status: string) =>
    `svc.events.job.${subjectToken(jobId)}.${subjectToken(status)}`,
  /** Events of batches: per-device `job.<status>` and the batch's own `finished`/`cancelled`. */
  batchEventsAll: 'svc.events.batch.>',
  batchEvents: (batchId: string) => `svc.events.batch.${subjectToken(batchId)}.>`,
  batchJobEvent: (batchId: string, status: string) =>
    `svc.events.batch.${subjectToken(batchId)}.job.${subjectToken(status)}`,
  /** Every job event of one batch, whatever its status. */
  batchJobEvents: (batchId: string) => `svc.events.batch.${subjectToken(batchId)}.job.*`,
  batchEvent: (batchId: string, name: string) =>
    `svc.events.batch.${subjectToken(batchId)}.${subjectToken(name)}`,
  cancelAll: 'svc.control.cancel.>',
  cancel: (jobId: string) => `svc.control.cancel.${subjectToken(jobId)}`,
  /** `$KV.<bucket>.<key>`: where a KV bucket stores a key (what the KV client's put publishes to). */
  kvEntry: (bucket: string, key: string) => `$KV.${bucket}.${key}`,
} as const;

/**
 * Message ids (the `Nats-Msg-Id` header): within a stream's duplicate window a second message
 * with the same id is dropped, which is what makes each of these publishes safe to repeat.
 */
export const MessageIds = {
  /** A job's envelope on its shard subject, and the reaper's enqueue probe for it. */
  envelope: (jobId: string) => jobId,
  /**
   * An envelope a gateway of an earlier release stored on `svc.jobs.<context>`, forwarded by the
   * dispatcher to its shard subject (the envelope's own id is taken in the same stream).
   */
  forwarded: (jobId: string) => `${jobId}.f`,
  /** A job's status event (`svc.events.job.<job>.<status>`). */
  jobEvent: (jobId: string, status: string) => `${jobId}.${status}`,
  /** A job's status event on its batch's subject. */
  batchJobEvent: (batchId: string, jobId: string, status: string) =>
    `${batchId}.${jobId}.${status}`,
  /** A batch's end (`svc.events.batch.<batch>.<finished|cancelled>`). */
  batchEnd: (batchId: string) => `${batchId}.end`,
} as const;

/** A subject's tokens after `prefix` (itself dot-separated), or null when it does not start so. */
function tokensAfter(subject: string, prefix: string, count: number): string[] | null {
  if (!subject.startsWith(`${prefix}.`)) return null;
  const rest = subject.slice(prefix.length + 1).split('.');
  return rest.length === count && rest.every((t) => t.length > 0) ? rest : null;
}

/** The inverse of `Subjects`' builders: what a received message's subject names. */
export const SubjectParsers = {
  /** `svc.control.cancel.<job>` → the job id. */
  cancel(subject: string): string | null {
    return tokensAfter(subject, 'svc.control.cancel', 1)?.[0] ?? null;
  },
  /** `svc.events.job.<job>.<status>`. */
  jobEvent(subject: string): { jobId: string; status: string } | null {
    const t = tokensAfter(subject, 'svc.events.job', 2);
    return t ? { jobId: t[0]!, status: t[1]! } : null;
  },
  /**
   * `svc.events.batch.<batch>.job.<status>` (a job of the batch) or
   * `svc.events.batch.<batch>.<name>` (the batch's own `finished`/`cancelled`).
   */
  batchEvent(
    subject: string,
  ):
    | { batchId: string; job: true; status: string }
    | { batchId: string; job: false; name: string }
    | null {
    const job = tokensAfter(subject, 'svc.events.batch', 3);
    if (job) return job[1] === 'job' ? { batchId: job[0]!, job: true, status: job[2]! } : null;
    const own = tokensAfter(subject, 'svc.events.batch', 2);
    return own && own[1] !== 'job' ? { batchId: own[0]!, job: false, name: own[1]! } : null;
  },
  /** `svc.jobs.<context>.<shard>` → the context and the shard. */
  jobShard(subject: string): { context: string; shard: number } | null {
    const t = tokensAfter(subject, 'svc.jobs', 2);
    if (!t || !/^(0|[1-9][0-9]*)$/.test(t[1]!)) return null;
    const shard = Number(t[1]);
    return shard < JOB_SHARDS ? { context: t[0]!, shard } : null;
  },
  /** `$KV.<bucket>.<key>` (a KV bucket's stream subject) → the key, which may hold dots. */
  kvKey(bucket: string, subject: string): string | null {
    const prefix = `$KV.${bucket}.`;
    return subject.startsWith(prefix) && subject.length > prefix.length
      ? subject.slice(prefix.length)
      : null;
  },
} as const;

export const Consumers = {
  /**
   * The dispatcher's durable consumer of a context's `svc.jobs.<context>`, where gateways of an
   * earlier release store jobs: it forwards them to their shard subjects.
   */
  dispatch: (context: string) => `dispatch_${encodeToken(context)}`,
  /** The durable consumer of one shard of a context's jobs, consumed by the shard's owner. */
  shard: (context: string, shard: number) => `shard_${encodeToken(context)}_${shardToken(shard)}`,
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

/** Keys inside `svc-batches`. */
export const BatchKeys = {
  /** The envelope of a job of a rollout's later wave, held until its wave is released. */
  held: (batchId: string, jobId: string) => `${batchId}.held.${jobId}`,
  /** Every held envelope's key (what the reaper's enqueue check watches). */
  heldAll: '*.held.*',
} as const;

/** Keys inside `svc-locks`. */
export const LockKeys = {
  reaper: 'reaper',
  dispatcher: (context: string) => `dispatcher.${encodeToken(context)}`,
  /**
   * The claim of one device known by its pinned host key (`DeviceClaimEntry`; the device key
   * `<context>|hostkey:<fingerprint>`, encoded into one token): the one actor host that may hold
   * sessions to it, whichever of its addresses (and so shards) a job comes by.
   */
  device: (deviceKey: string) => `device.${encodeToken(deviceKey)}`,
  /**
   * The owner of one shard of a context's jobs (`ShardOwner`), written by the context's leading
   * dispatcher and by the owner when it releases the shard.
   */
  shard: (context: string, shard: number) => `shard.${encodeToken(context)}.${shardToken(shard)}`,
  /** Every shard's owner key (`shard`): what actor hosts and dispatchers watch. */
  shardAll: 'shard.>',
  /** Every device's claim key (`device`): what actor hosts watch. */
  deviceAll: 'device.>',
} as const;

export const Headers = {
  /** W3C trace context, carried from the gateway to the actor. */
  traceparent: 'traceparent',
  tracestate: 'tracestate',
  /** JetStream's own de-duplication header. */
  msgId: 'Nats-Msg-Id',
  /**
   * Marks the reaper's probe for a job's envelope (same message id as the envelope, on the
   * context's subject): stored only when the envelope never was, and then dropped by the
   * dispatcher (an owner drops one found on a shard subject too).
   */
  enqueueProbe: 'Svc-Enqueue-Probe',
  /**
   * On every write of a job's record in `svc-jobs`: the record's `RecordSummary` (status,
   * platform, times) as JSON, so a reader of the bucket's writes (the gateways' job counts)
   * reads headers only and never receives results.
   */
  recordSummary: 'Svc-Record-Summary',
  /** The KV client's mark of a delete or purge entry (`DEL`, `PURGE`); absent on a put. */
  kvOperation: 'KV-Operation',
  /**
   * The compare-and-set a write was made with (the KV client's `create`/`update`, the job store's
   * record writes): `0` on an entry that created its key.
   */
  expectedLastSubjectSequence: 'Nats-Expected-Last-Subject-Sequence',
} as const;
