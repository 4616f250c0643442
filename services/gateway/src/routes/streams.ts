import { DeliverPolicy, type ConsumerMessages } from '@nats-io/jetstream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  Streams,
  Subjects,
  decodeOrDrop,
  isTerminal,
  JobEvent,
  type JobRecord,
  type JobStatus,
} from '@svc/proto';
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
 * message, no id) after SSE_TIMEOUT. Fed by an ordered JetStream consumer of
 * `svc.events.job.<job_id>.>` (deliver all: the few events of the job so far, then live ones),
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
    let messages: ConsumerMessages | null = null;
    if (!isTerminal(record.status)) {
      // Opened before the headers go out so that a NATS failure is still a 503.
      const consumer = await ctx.js.consumers.get(Streams.events, {
        filter_subjects: Subjects.jobEvents(jobId), // a string: nats-server 2.9 has one filter
        deliver_policy: DeliverPolicy.All,
      });
      messages = await consumer.consume();
    }
    const sse = slot.start(reply, () => ({
      event: 'timeout',
      data: {
        job_id: jobId,
        message: `stream closed after SSE_TIMEOUT (${ctx.config.SSE_TIMEOUT} s); read the job or reconnect`,
      },
    }));
    sse.onEnd(() => void messages?.close().catch(() => undefined));

    // The highest id the client has: nothing at or below it is sent again.
    let sent = seen ?? 0;
    const sendStatus = (status: JobStatus) => {
      const id = statusId(status);
      if (id <= sent) return;
      sent = id;
      sse.send('status', { job_id: jobId, status }, String(id));
    };
    const onStatus = async (status: JobStatus) => {
      sendStatus(status);
      if (!isTerminal(status)) return;
      // Results are not in events (they can be large): read the record once, at the end.
      const stored = (await ctx.jobs.get(jobId).catch(() => null))?.record ?? null;
      const final = stored && (await ctx.jobs.withResults(stored).catch(() => stored));
      sse.send(
        'result',
        {
          job_id: jobId,
          status: final?.status ?? status,
          results: final?.results ?? null,
          error: final?.error ?? null,
          error_code: final?.error_code ?? null,
          error_retryable: final?.error_retryable ?? null,
        },
        String(RESULT_ID),
      );
      sse.end();
    };

    // A resuming client missed `started` too when the job went through it since its last id.
    if (seen !== null && record.status !== 'started' && record.started_at) sendStatus('started');
    await onStatus(record.status);
    if (!messages || sse.ended) return;
    const events = messages;
    void (async () => {
      try {
        for await (const m of events) {
          if (sse.ended) break;
          const event = decodeOrDrop(JobEvent, m.data, {
            consumer: 'job_stream',
            log: ctx.log,
            where: { subject: m.subject, seq: m.seq },
          });
          if (!event) continue;
          // Events of states the client has (replayed by "deliver all") are at or below `sent`.
          await onStatus(event.status);
        }
      } catch (err) {
        ctx.log.warn({ err, job_id: jobId }, 'sse event feed failed');
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
