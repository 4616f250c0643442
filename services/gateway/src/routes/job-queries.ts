import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bucketKeys, watchBucket, type BucketWatch, type BucketWatchEntry } from '@svc/nats';
import { Type, type Static } from 'typebox';
import {
  Buckets,
  Streams,
  DateTime,
  JobStatus,
  TAG_PATTERN,
  Tags,
  decodeOrDrop,
  FailedJob,
  JobRecord,
  PageSizes,
} from '@svc/proto';
import { mayAccessJob, mayUseContext, type Caller } from '../caller.js';
import type { GatewayContext } from '../gateway-context.js';
import { guarded } from './context.js';
import { validInput } from '../request-input.js';
import {
  EXAMPLE_JOB_ID,
  ISSUE,
  ref,
  routeSchema,
  type IssueText,
  type RouteDoc,
} from './route-schemas.js';

const NullableString = Type.Union([Type.String(), Type.Null()]);

/** One entry of GET /v2/jobs. */
export const JobSummary = Type.Object(
  {
    job_id: Type.String(),
    status: Type.Enum(Object.values(JobStatus)),
    created_at: Type.Union([DateTime(), Type.Null()], { description: 'ISO 8601 enqueue time' }),
    ended_at: Type.Union([DateTime(), Type.Null()]),
    tags: Tags,
  },
  { $id: 'JobSummary' },
);
export type JobSummary = Static<typeof JobSummary>;

export const Pagination = Type.Object(
  {
    page: Type.Integer({ minimum: 1 }),
    per_page: Type.Integer({ minimum: 1, maximum: 100 }),
    total: Type.Integer({ minimum: 0, description: 'jobs matching the filters' }),
    pages: Type.Integer({ minimum: 0 }),
  },
  { $id: 'Pagination' },
);

export const JobList = Type.Object(
  { jobs: Type.Array(JobSummary), pagination: Pagination },
  { $id: 'JobList' },
);
export type JobList = Static<typeof JobList>;

/** A failed-job entry as served: the registry entry without its owner. */
export const FailedJobItem = Type.Object(
  {
    job_id: Type.String(),
    error: Type.Union([Type.String(), Type.Null()], { description: 'sanitized message' }),
    error_code: NullableString,
    error_retryable: Type.Union([Type.Boolean(), Type.Null()]),
    failed_at: Type.Union([DateTime(), Type.Null()]),
    func: Type.String({ default: '' }),
    host: Type.String({ default: '' }),
    platform: Type.String({ default: '' }),
    port: Type.Integer({ default: 22 }),
  },
  { $id: 'FailedJobItem' },
);
export type FailedJobItem = Static<typeof FailedJobItem>;

export const FailedJobList = Type.Object(
  { jobs: Type.Array(FailedJobItem), total: Type.Integer() },
  { $id: 'FailedJobList' },
);

export const ContextRecord = Type.Object(
  {
    name: Type.String(),
    workers: Type.Integer({ description: 'live actor hosts serving the context' }),
    queue_depth: Type.Integer({ description: 'jobs waiting (approximate)' }),
  },
  { $id: 'ContextRecord' },
);
export const ContextList = Type.Object(
  { contexts: Type.Array(ContextRecord) },
  { $id: 'ContextList' },
);

/** The named answers of the job queries (components of the OpenAPI document). */
export const JOB_QUERY_SCHEMAS = [JobList, FailedJobList, ContextList];

/** Statuses GET /v2/jobs filters by (the specification's four, and cancelled). */
export const LIST_STATUSES: readonly string[] = Object.values(JobStatus);

/** A tag filter `key:value`: the key ends at the first colon, the value is any tag text. */
const TAG_TEXT = TAG_PATTERN.slice(1, -1);
const TAG_FILTER = `^${TAG_TEXT.replace(':', '')}:${TAG_TEXT}$`;

/**
 * The query of GET /v2/jobs: the schema Fastify validates it with and the document shows. Its
 * values are converted from text (request-input.ts); unknown parameters are ignored.
 */
export const ListQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 1 })),
  per_page: Type.Optional(
    Type.Integer({ minimum: 1, maximum: PageSizes.jobs.max, default: PageSizes.jobs.default }),
  ),
  status: Type.Optional(Type.Enum(LIST_STATUSES)),
  tag: Type.Optional(
    Type.String({
      pattern: TAG_FILTER,
      description: 'key:value',
      [ISSUE]: {
        msg: 'tag must be key:value (each 1-64 of A-Z a-z 0-9 _ : -)',
        type: 'value_error',
      } satisfies IssueText,
    }),
  ),
});
/** A valid query, its defaults filled in. */
export type ListQuery = Static<typeof ListQuery> & { page: number; per_page: number };

/** Route schemas of the job queries; v1 reuses them, deprecated. */
export function jobQuerySchemas(v1: boolean) {
  const doc = (d: Omit<RouteDoc, 'tags' | 'access'>) =>
    routeSchema({
      ...d,
      tags: [v1 ? 'v1' : 'jobs'],
      access: 'caller',
      ...(v1
        ? {
            deprecated: true,
            operationId: `v1${d.operationId[0]!.toUpperCase()}${d.operationId.slice(1)}`,
          }
        : {}),
    });
  return {
    list: doc({
      operationId: 'listJobs',
      summary: "The caller's jobs, newest first (admin keys: every job of their contexts)",
      querystring: ListQuery,
      ok: {
        200: {
          description: 'A page of job summaries.',
          body: ref(JobList),
          example: {
            jobs: [
              {
                job_id: EXAMPLE_JOB_ID,
                status: 'finished',
                created_at: '2026-01-15T09:30:00.000Z',
                ended_at: '2026-01-15T09:30:01.480Z',
                tags: { site: 'lab' },
              },
            ],
            pagination: { page: 1, per_page: 20, total: 1, pages: 1 },
          },
        },
      },
      errors: [422],
    }),
    failed: doc({
      operationId: 'listFailedJobs',
      summary: "The caller's failed jobs (sanitized, no credentials)",
      ok: {
        200: {
          description: 'Failed-job registry entries, newest first.',
          body: ref(FailedJobList),
          example: {
            jobs: [
              {
                job_id: EXAMPLE_JOB_ID,
                error: 'connection timed out',
                error_code: 'CONNECTION_TIMEOUT',
                error_retryable: true,
                failed_at: '2026-01-15T09:30:11.000Z',
                func: 'send_command',
                host: '192.0.2.10',
                platform: 'cisco_ios',
                port: 22,
              },
            ],
            total: 1,
          },
        },
      },
    }),
    contexts: doc({
      operationId: 'listContexts',
      summary: 'Routing contexts the caller may use, with live workers and queue depth',
      ok: {
        200: {
          description: 'The contexts.',
          body: ref(ContextList),
          example: { contexts: [{ name: 'default', workers: 2, queue_depth: 0 }] },
        },
      },
    }),
  };
}

interface IndexedJob extends JobSummary {
  owner: string;
  context: string;
  /** When the record was last written (its bucket TTL counts from there), ms. */
  writtenAt: number;
}

/**
 * The gateway's in-memory index of job summaries, fed by a watch of the `svc-jobs` bucket, so a
 * list request scans memory instead of every key in NATS. Limits (docs/observability.md):
 * every gateway receives every record write (results included); at most SVC_JOB_INDEX_MAX
 * summaries are kept (oldest dropped); a list scans the summaries in memory, O(jobs kept).
 * Each request first waits until the index has seen the bucket's last write, so a job is listed
 * as soon as its 202 was answered, by any gateway.
 */
export class JobIndex {
  readonly #entries = new Map<string, IndexedJob>();
  #seen = 0;
  #waiters: { seq: number; resolve: () => void }[] = [];
  #watch: BucketWatch | null = null;

  constructor(
    private readonly ctx: GatewayContext,
    private readonly maxEntries: number,
    private readonly ttlMs: number,
  ) {}

  async start(): Promise<void> {
    const watch = await watchBucket(this.ctx.stores[Buckets.jobs], { log: this.ctx.log });
    this.#watch = watch;
    void (async () => {
      for await (const e of watch) this.#apply(e);
    })().catch((err: unknown) => this.ctx.log.error({ err }, 'job index watch ended'));
  }

  stop(): void {
    this.#watch?.stop();
    for (const w of this.#waiters) w.resolve();
    this.#waiters = [];
  }

  #apply(e: BucketWatchEntry): void {
    if (e.operation === 'PUT') {
      const r = decodeOrDrop(JobRecord, e.value, {
        consumer: 'job_index',
        log: this.ctx.log,
        where: { key: e.key },
      });
      if (r) {
        this.#entries.set(e.key, {
          job_id: r.job_id,
          status: r.status,
          created_at: r.enqueued_at,
          ended_at: r.ended_at,
          tags: r.spec.tags,
          owner: r.owner,
          context: r.spec.context,
          writtenAt: e.created.getTime(),
        });
      }
      if (this.#entries.size > this.maxEntries) {
        const oldest = this.#entries.keys().next();
        if (!oldest.done) this.#entries.delete(oldest.value);
      }
    } else {
      this.#entries.delete(e.key);
    }
    this.#seen = Math.max(this.#seen, e.revision);
    if (this.#waiters.length > 0) {
      this.#waiters = this.#waiters.filter((w) => {
        if (w.seq > this.#seen) return true;
        w.resolve();
        return false;
      });
    }
  }

  /** Waits (at most `timeoutMs`) until every write made before this call has been applied. */
  async catchUp(timeoutMs = 2000): Promise<void> {
    const info = await this.ctx.jsm.streams.info(Streams.kv(Buckets.jobs));
    const last = info.state.last_seq;
    if (info.state.messages === 0 || this.#seen >= last) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.#waiters.push({
        seq: last,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  list(caller: Caller, q: ListQuery): JobList {
    const colon = q.tag?.indexOf(':') ?? -1;
    const tag = q.tag && { key: q.tag.slice(0, colon), value: q.tag.slice(colon + 1) };
    const now = Date.now();
    const matches: IndexedJob[] = [];
    for (const [key, j] of this.#entries) {
      // The bucket's TTL removes records without telling watchers: drop them here too.
      if (now - j.writtenAt > this.ttlMs) {
        this.#entries.delete(key);
        continue;
      }
      if (!mayAccessJob(caller, j.owner, j.context)) continue;
      if (q.status !== undefined && j.status !== q.status) continue;
      if (tag && j.tags?.[tag.key] !== tag.value) continue;
      matches.push(j);
    }
    matches.sort(
      (a, b) =>
        (b.created_at ?? '').localeCompare(a.created_at ?? '') || a.job_id.localeCompare(b.job_id),
    );
    const start = (q.page - 1) * q.per_page;
    const jobs = matches.slice(start, start + q.per_page).map((j) => ({
      job_id: j.job_id,
      status: j.status,
      created_at: j.created_at,
      ended_at: j.ended_at,
      tags: j.tags,
    }));
    return {
      jobs,
      pagination: {
        page: q.page,
        per_page: q.per_page,
        total: matches.length,
        pages: Math.ceil(matches.length / q.per_page),
      },
    };
  }
}

interface SharedIndex {
  users: number;
  index: JobIndex;
  ready: Promise<void> | null;
}

/** One index per gateway, shared by its HTTP servers; stopped when the last one closes. */
const indexes = new WeakMap<GatewayContext, SharedIndex>();

function acquireIndex(ctx: GatewayContext): SharedIndex {
  let shared = indexes.get(ctx);
  if (!shared) {
    shared = {
      users: 0,
      index: new JobIndex(ctx, ctx.config.SVC_JOB_INDEX_MAX, ctx.config.JOB_TTL_SUCCESS * 1000),
      ready: null,
    };
    indexes.set(ctx, shared);
  }
  shared.users++;
  return shared;
}

/** Route bodies of the job queries; the v1 routes reuse them. */
export interface JobQueryHandlers {
  list: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  failed: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  contexts: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

const handlersOf = new WeakMap<GatewayContext, JobQueryHandlers>();

/** The job-query route bodies of a gateway (created once; their index starts on first use). */
export function jobQueryHandlers(app: FastifyInstance, ctx: GatewayContext): JobQueryHandlers {
  const shared = acquireIndex(ctx);
  app.addHook('onClose', (_instance, done) => {
    if (--shared.users === 0) {
      shared.index.stop();
      indexes.delete(ctx);
    }
    done();
  });
  const existing = handlersOf.get(ctx);
  if (existing) return existing;

  const indexReady = async (): Promise<JobIndex> => {
    shared.ready ??= shared.index.start().catch((err: unknown) => {
      shared.ready = null; // NATS was down: the next request tries again
      throw err;
    });
    await shared.ready;
    await shared.index.catchUp();
    return shared.index;
  };

  const handlers: JobQueryHandlers = {
    list: guarded(async (req, reply) => {
      const caller = await ctx.authenticate(req);
      const q = validInput<ListQuery>(req, 'querystring');
      const index = await indexReady();
      return reply.code(200).send(index.list(caller, q));
    }, ctx.onStoreError),

    failed: guarded(async (req, reply) => {
      const caller = await ctx.authenticate(req);
      const kv = ctx.stores[Buckets.failed];
      // The registry is capped at FAILED_JOB_MAX_RETAIN entries, so a key scan is bounded.
      const keys = await bucketKeys(kv);
      const jobs: FailedJobItem[] = [];
      for (let i = 0; i < keys.length; i += 50) {
        const batch = await Promise.all(keys.slice(i, i + 50).map((k) => kv.get(k)));
        for (const e of batch) {
          if (!e || e.operation !== 'PUT') continue;
          const f = decodeOrDrop(FailedJob, e.value, {
            consumer: 'failed_jobs',
            log: ctx.log,
            where: { key: e.key },
          });
          if (!f || !mayAccessJob(caller, f.owner, f.context)) continue;
          jobs.push(sanitize(f));
        }
      }
      jobs.sort((a, b) => (b.failed_at ?? '').localeCompare(a.failed_at ?? ''));
      return reply.code(200).send({ jobs, total: jobs.length });
    }, ctx.onStoreError),

    contexts: guarded(async (req, reply) => {
      const caller = await ctx.authenticate(req);
      const hosts = await ctx.status.liveWorkers();
      const names = ctx.config.SVC_CONTEXTS.filter((c) => mayUseContext(caller, c));
      const depths = await ctx.depth.byContext(names);
      const contexts = names.map((name) => ({
        name,
        workers: hosts.filter((h) => !h.draining && h.contexts.includes(name)).length,
        queue_depth: depths.get(name) ?? 0,
      }));
      return reply.code(200).send({ contexts });
    }, ctx.onStoreError),
  };
  handlersOf.set(ctx, handlers);
  return handlers;
}

/** Only the fields of the specification's failed-job record: never the owner or secrets. */
function sanitize(f: FailedJob): FailedJobItem {
  return {
    job_id: f.job_id,
    error: f.error,
    error_code: f.error_code,
    error_retryable: f.error_retryable,
    failed_at: f.failed_at,
    // Entries written by older releases may lack these; the specification gives their defaults.
    func: f.func ?? '',
    host: f.host ?? '',
    platform: f.platform ?? '',
    port: f.port ?? 22,
  };
}

/** GET /v2/jobs, GET /v2/jobs/failed, GET /v2/contexts (GET /v1/contexts lives in v1.ts). */
export function registerJobQueryRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const h = jobQueryHandlers(app, ctx);
  const s = jobQuerySchemas(false);
  app.get('/v2/jobs', { schema: s.list }, h.list);
  app.get('/v2/jobs/failed', { schema: s.failed }, h.failed);
  app.get('/v2/contexts', { schema: s.contexts }, h.contexts);
}
