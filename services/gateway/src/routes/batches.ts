import type { JsMsg } from '@nats-io/jetstream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { followStream, type StreamFollower } from '@svc/nats';
import {
  BatchCreated,
  BatchRequest,
  BatchSummary,
  BatchState,
  DateTime,
  JobKind,
  JobResult,
  Streams,
  Subjects,
  SubjectParsers,
  decodeOrDrop,
  JobEvent,
  PageSizes,
} from '@svc/proto';
import { Type, type Static } from 'typebox';
import type { Batches } from '../batches.js';
import type { GatewayContext } from '../gateway-context.js';
import { JobIntake } from '../job-intake.js';
import { validInput } from '../request-input.js';
import { lastEventId, type SseSlot } from '../sse.js';
import { guarded } from './context.js';
import {
  BatchIdParam,
  ISSUE,
  LastEventIdHeader,
  SSE_ANSWER,
  batchLocation,
  ref,
  routeSchema,
  type IssueText,
  type RouteDoc,
} from './route-schemas.js';

type BatchParams = { Params: { batch_id: string } };

/** Where a page number is out of its range or not an integer: the route's own words. */
const pageIssue = (max: number): IssueText => ({
  msg: `must be an integer from 1 to ${max}`,
  type: 'value_error',
});

/**
 * The query of GET /v2/batches/{batch_id}/jobs: the schema Fastify validates it with and the
 * document shows. Its values are converted from text (request-input.ts); unknown parameters
 * are ignored.
 */
export const BatchJobsQuery = Type.Object({
  page: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      default: 1,
      [ISSUE]: pageIssue(Number.MAX_SAFE_INTEGER),
    }),
  ),
  per_page: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: PageSizes.batchJobs.max,
      default: PageSizes.batchJobs.default,
      [ISSUE]: pageIssue(PageSizes.batchJobs.max),
    }),
  ),
});
/** A valid query, its defaults filled in. */
type BatchJobsQuery = Static<typeof BatchJobsQuery> & { page: number; per_page: number };
/** Event id of a batch stream's `summary`: a client that has it has the whole batch. */
const SUMMARY_ID = 'end';

/** GET /v2/batches: the caller's batches. */
export const BatchList = Type.Object(
  {
    batches: Type.Array(
      Type.Object({
        batch_id: Type.String(),
        kind: Type.Enum(Object.values(JobKind)),
        status: Type.Enum(Object.values(BatchState)),
        total: Type.Integer(),
        created_at: DateTime(),
        ended_at: Type.Union([DateTime(), Type.Null()]),
        stopped_reason: Type.Union([Type.String(), Type.Null()]),
      }),
    ),
  },
  { $id: 'BatchList' },
);

/** GET /v2/batches/{batch_id}/jobs: a page of the batch's jobs, in device order. */
export const BatchJobPage = Type.Object(
  {
    batch_id: Type.String(),
    page: Type.Integer({ minimum: 1 }),
    per_page: Type.Integer({ minimum: 1, maximum: PageSizes.batchJobs.max }),
    total: Type.Integer({ minimum: 0 }),
    jobs: Type.Array(
      Type.Intersect([
        JobResult,
        Type.Object({
          host: Type.String(),
          port: Type.Integer(),
          name: Type.Union([Type.String(), Type.Null()], {
            description: "The device entry's inventory name; null when it had none.",
          }),
        }),
      ]),
    ),
  },
  { $id: 'BatchJobPage' },
);

const batchDoc = (d: Omit<RouteDoc, 'tags' | 'access'>) => ({
  schema: routeSchema({ ...d, tags: ['batches'], access: 'caller' }),
});

/** POST/GET/DELETE /v2/batches… and the batch's SSE stream. */
export function registerBatchRoutes(
  app: FastifyInstance,
  ctx: GatewayContext,
  batches: Batches,
): void {
  const { authenticate, onStoreError } = ctx;

  app.post(
    '/v2/batches',
    batchDoc({
      operationId: 'createBatch',
      summary: 'Run one job per device (command, config or structured), with rollout control',
      body: ref(BatchRequest),
      bodyExample: {
        kind: 'command',
        platform: 'cisco_ios',
        commands: ['show version'],
        devices: [{ host: '192.0.2.10' }, { host: '192.0.2.11' }],
      },
      ok: {
        202: {
          description: 'Accepted: one job per device; read the batch at Location.',
          body: ref(BatchCreated),
          headers: ['Location'],
        },
      },
      errors: [403, 422],
    }),
    guarded(async (req, reply) => {
      const caller = await authenticate(req);
      JobIntake.mustSubmit(caller);
      const traceparent = req.headers['traceparent'];
      const created = await batches.create(
        caller,
        validInput<BatchRequest>(req, 'body'),
        typeof traceparent === 'string' ? traceparent : undefined,
        req.ip,
      );
      return reply.code(202).header('Location', batchLocation(created.batch_id)).send(created);
    }, onStoreError),
  );

  app.get(
    '/v2/batches',
    batchDoc({
      operationId: 'listBatches',
      summary: "The caller's batches, newest first",
      ok: { 200: { description: 'The batches.', body: ref(BatchList) } },
    }),
    guarded(async (req, reply) => {
      const caller = await authenticate(req);
      return reply.code(200).send({ batches: batches.list(caller) });
    }, onStoreError),
  );

  app.get<BatchParams>(
    '/v2/batches/:batch_id',
    batchDoc({
      operationId: 'getBatch',
      summary: 'A batch: status, counts per job status and per error code',
      params: BatchIdParam,
      ok: { 200: { description: 'The batch.', body: ref(BatchSummary) } },
      errors: [403, 404],
    }),
    guarded<FastifyRequest<BatchParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      return reply.code(200).send(await batches.summary(caller, req.params.batch_id));
    }, onStoreError),
  );

  app.get<BatchParams>(
    '/v2/batches/:batch_id/jobs',
    batchDoc({
      operationId: 'listBatchJobs',
      summary: 'The jobs of a batch with their results, in device order',
      params: BatchIdParam,
      querystring: BatchJobsQuery,
      ok: { 200: { description: 'A page of jobs.', body: ref(BatchJobPage) } },
      errors: [403, 404, 422],
    }),
    guarded<FastifyRequest<BatchParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      const q = validInput<BatchJobsQuery>(req, 'querystring');
      return reply
        .code(200)
        .send(await batches.page(caller, req.params.batch_id, q.page, q.per_page));
    }, onStoreError),
  );

  app.delete<BatchParams>(
    '/v2/batches/:batch_id',
    batchDoc({
      operationId: 'cancelBatch',
      summary: 'Cancel the jobs of a batch that have not started',
      params: BatchIdParam,
      ok: { 200: { description: 'The batch after the cancellation.', body: ref(BatchSummary) } },
      errors: [403, 404, 409],
    }),
    guarded<FastifyRequest<BatchParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      return reply.code(200).send(await batches.cancel(caller, req.params.batch_id));
    }, onStoreError),
  );

  /**
   * `job` (job_id, host, port, name, status, error_code) for every device event, then one `summary` (the
   * batch's GET body) when the batch ends, and the stream ends. Fed by an ordered consumer of
   * `svc.events.batch.<id>.>` from the start, so a late client still sees every device. Event
   * ids: a `job` event's is its sequence in SVC_EVENTS (the same on every gateway), the
   * summary's is `end`; with `Last-Event-ID` the stream resumes after that event, and a client
   * that has the summary of an ended batch gets 204 (EventSource clients stop reconnecting).
   */
  app.get<BatchParams>(
    '/v2/batches/:batch_id/stream',
    batchDoc({
      operationId: 'streamBatch',
      summary: 'Server-Sent Events of a batch: one `job` per device event, then `summary`',
      description:
        "Events: `job` (data: job_id, host, port, name (the device entry's inventory name, or null), status, error_code; id: its SVC_EVENTS sequence) for every status change of every device, from the start of the batch; `summary` (data: the GET body; id: `end`) once the batch ended, then the stream ends; `timeout` after SSE_TIMEOUT. With Last-Event-ID only later events are sent; 204 once the client has the summary. Counts against SSE_MAX_CONNECTIONS.",
      params: BatchIdParam,
      requestHeaders: LastEventIdHeader,
      ok: {
        200: SSE_ANSWER,
        204: { description: 'The batch ended and the client has its summary: stop.' },
      },
      errors: [403, 404],
    }),
    guarded<FastifyRequest<BatchParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      const slot = ctx.sse.reserve(caller.id);
      try {
        return await serve(req, reply, await batches.summary(caller, req.params.batch_id), slot);
      } catch (err) {
        slot.release();
        throw err;
      }
    }, onStoreError),
  );

  async function serve(
    req: FastifyRequest<BatchParams>,
    reply: FastifyReply,
    first: BatchSummary,
    slot: SseSlot,
  ): Promise<unknown> {
    const batchId = first.batch_id;
    const running = first.status === 'running';
    const seen = lastEventId(req);
    if (!running && seen === SUMMARY_ID) {
      slot.release();
      return reply.code(204).send();
    }
    // `0`: before the first event (a client that counts from the stream's start).
    const after = seen !== null && /^(0|[1-9][0-9]{0,15})$/.test(seen) ? Number(seen) : null;
    // Events of the batch still to send when it already ended (the rest, then the summary).
    let pending = Infinity;
    // The batch's events after `after` (all when null), as they are stored. Its consumer has one
    // replica: lost with its NATS node, it is made again on a node that lives after the last
    // event sent, and the client keeps its connection (an EventSource that reconnected during
    // the election would be answered 503, and a 503 ends it for good): no gap, nothing twice.
    let feed: StreamFollower | null = null;
    if (running || after !== null) {
      feed = await followStream(ctx.js, Streams.events, {
        filter: Subjects.batchEvents(batchId),
        from: after === null ? 'all' : { afterSeq: after },
        what: `batch stream ${batchId}`,
        log: ctx.log,
        countPending: !running,
      });
      if (!running) pending = feed.pendingAtOpen;
      if (pending === 0) {
        feed.stop();
        feed = null;
      }
    }
    const sse = slot.start(reply, () => ({
      event: 'timeout',
      data: { batch_id: batchId, message: 'stream closed after SSE_TIMEOUT; reconnect' },
    }));
    sse.onEnd(() => feed?.stop());
    if (!feed) {
      sse.send('summary', first, SUMMARY_ID);
      sse.end();
      return;
    }
    const events = feed;
    void (async () => {
      try {
        // It ends without the summary only when the gateway's NATS connection closed: the
        // client reconnects, to a gateway that has one.
        for await (const m of events) {
          if (sse.ended) break;
          pending--;
          if (sendEvent(m)) break;
        }
      } catch (err) {
        ctx.log.warn({ err, batch_id: batchId }, 'batch sse feed failed');
      } finally {
        events.stop();
        sse.end();
      }
    })();

    /** Sends one event of the feed; true once the stream has said everything (the summary). */
    function sendEvent(m: JsMsg): boolean {
      const ofJob = SubjectParsers.batchEvent(m.subject)?.job === true;
      const where = { subject: m.subject, seq: m.seq };
      if (ofJob) {
        const e = decodeOrDrop(JobEvent, m.data, {
          consumer: 'batch_stream',
          log: ctx.log,
          where,
        });
        // A malformed one is not sent, but it was one of the events before the live ones.
        if (e) {
          sse.send(
            'job',
            {
              job_id: e.job_id,
              host: e.host,
              port: e.port ?? null,
              name: e.name ?? null,
              status: e.status,
              error_code: e.error_code ?? null,
            },
            String(m.seq),
          );
        }
        // An ended batch whose end event is gone from the stream: its record has the summary.
        if (pending === 0) sse.send('summary', first, SUMMARY_ID);
      } else {
        const summary = decodeOrDrop(BatchSummary, m.data, {
          consumer: 'batch_stream',
          log: ctx.log,
          where,
        });
        // A malformed one is not the end: the feed goes on.
        if (!summary) return false;
        sse.send('summary', summary, SUMMARY_ID);
        return true;
      }
      return pending === 0;
    }
  }
}
