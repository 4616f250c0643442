import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isTerminal, type JobRecord, type JobStatus } from '@svc/proto';
import type { RecordFollower } from '@svc/jobs';
import type { GatewayContext } from '../gateway-context.js';
import { lastEventId, type SseSlot } from '../sse.js';
import { guarded } from './context.js';
import { JobIdParam, LastEventIdHeader, SSE_ANSWER, routeSchema } from './route-schemas.js';

type JobParams = { Params: { job_id: string } };

/**
 * Event ids of a job's stream: the job's state-change sequence. Statuses only move forward
 * (queued, started, one terminal status), so the id of an event follows from the job alone and
 * is the same on every gateway: a client may reconnect to any of them.
 */
const RESULT_ID = 4;
function statusId(status: JobStatus): number {
  return status === 'queued' ? 1 : status === 'started' ? 2 : 3;
}

/** A `Last-Event-ID` of this scheme, or null (absent or foreign: the stream starts afresh). */
function seenId(req: FastifyRequest): number | null {
  const id = lastEventId(req);
  return id !== null && /^[1-4]$/.test(id) ? Number(id) : null;
}

/**
 * GET /v2/jobs/{job_id}/stream and GET /v2/send-command/{job_id}/stream: Server-Sent Events.
 *
 * `status` (job_id, status) on every change, one `result` (job_id, status, results, error,
 * error_code, error_retryable) at the terminal state and the stream ends; `timeout` (job_id,
 * message, no id) after SSE_TIMEOUT. Fed by a watch of the job's record (its current value,
 * then each write: the record holds every state, the job's events are not stored per state),
 * never by polling. A job that already ended gets its result at once without a consumer.
 * With `Last-Event-ID` only the events after it are sent; once the client has the result the
 * answer is 204, which tells EventSource clients to stop reconnecting.
 */
export function registerStreamRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const stream = guarded<FastifyRequest<JobParams>>(async (req, reply) => {
    const caller = await ctx.authenticate(req);
    const slot = ctx.sse.reserve(caller.id);
    try {
      const record = await ctx.control.read(caller, req.params.job_id);
      return await serve(reply, record, seenId(req), slot);
    } catch (err) {
      slot.release();
      throw err;
    }
  }, ctx.onStoreError);

  async function serve(
    reply: FastifyReply,
    record: JobRecord,
    seen: number | null,
    slot: SseSlot,
  ): Promise<unknown> {
    const jobId = record.job_id;
    if (isTerminal(record.status) && seen === RESULT_ID) {
      slot.release();
      return reply.code(204).send();
    }
    let follower: RecordFollower | null = null;
    if (!isTerminal(record.status)) {
      // Opened before the headers go out so that a NATS failure is still a 503.
      follower = await ctx.jobs.follow(jobId, (err, revision) =>
        ctx.log.warn({ err, job_id: jobId, revision }, 'sse: a record failed its schema; skipped'),
      );
    }
    const sse = slot.start(reply, () => ({
      event: 'timeout',
      data: {
        job_id: jobId,
        message: `stream closed after SSE_TIMEOUT (${ctx.config.SSE_TIMEOUT} s); read the job or reconnect`,
      },
    }));
    sse.onEnd(() => follower?.stop());

    // The highest id the client has: nothing at or below it is sent again.
    let sent = seen ?? 0;
    const sendStatus = (status: JobStatus) => {
      const id = statusId(status);
      if (id <= sent) return;
      sent = id;
      sse.send('status', { job_id: jobId, status }, String(id));
    };
    const onRecord = async (current: JobRecord) => {
      // A client that has a status (this stream's or a resumed one's) gets every later status
      // in order, `started` too when the record has moved past it since.
      if (sent > 0 && current.status !== 'started' && current.started_at) sendStatus('started');
      sendStatus(current.status);
      if (!isTerminal(current.status)) return;
      // Results are not in the record when they are large: read them once, at the end.
      const final = await ctx.jobs.withResults(current).catch(() => current);
      sse.send(
        'result',
        {
          job_id: jobId,
          status: final.status,
          results: final.results ?? null,
          error: final.error ?? null,
          error_code: final.error_code ?? null,
          error_retryable: final.error_retryable ?? null,
        },
        String(RESULT_ID),
      );
      sse.end();
    };

    await onRecord(record);
    if (!follower || sse.ended) return;
    const records = follower.records;
    void (async () => {
      try {
        // The record's current value comes first (it may be newer than the one read above),
        // then each write; statuses only move forward, so those the client has are at or
        // below `sent` and are not sent again.
        for await (const { record: current } of records) {
          if (sse.ended) break;
          await onRecord(current);
        }
      } catch (err) {
        ctx.log.warn({ err, job_id: jobId }, 'sse record feed failed');
      } finally {
        sse.end();
      }
    })();
  }

  const schema = (operationId: string) => ({
    schema: routeSchema({
      operationId,
      summary: 'Server-Sent Events of a job: status, result, timeout',
      description:
        'Events: `status` (data: job_id, status) on every change; `result` (data: job_id, status, results, error, error_code, error_retryable) once at the terminal state, then the stream ends; `timeout` (data: job_id, message) after SSE_TIMEOUT. The stream starts with `retry:` (SSE_RETRY); `status` and `result` carry `id:` (queued 1, started 2, terminal status 3, result 4). With Last-Event-ID only later events are sent; 204 once the client has the result of an ended job. At most SSE_MAX_CONNECTIONS streams per gateway process (429 beyond).',
      tags: ['streams'],
      access: 'caller',
      params: JobIdParam,
      requestHeaders: LastEventIdHeader,
      ok: {
        200: SSE_ANSWER,
        204: { description: 'The job ended and the client has its result (Last-Event-ID): stop.' },
      },
      errors: [403, 404],
    }),
  });
  app.get<JobParams>('/v2/jobs/:job_id/stream', schema('streamJob'), stream);
  app.get<JobParams>('/v2/send-command/:job_id/stream', schema('streamSendCommandJob'), stream);
}
