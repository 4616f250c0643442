import { DeliverPolicy, type ConsumerMessages } from '@nats-io/jetstream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Streams, Subjects, decodeJson, type BatchSummary, type JobEvent } from '@svc/proto';
import type { Batches } from '../batches.js';
import type { GatewayContext } from '../gateway-context.js';
import { HttpError } from '../http-errors.js';
import { lastEventId, type SseSlot } from '../sse.js';
import { guarded } from './context.js';

type BatchParams = { Params: { batch_id: string } };
type PageQuery = {
  Params: { batch_id: string };
  Querystring: { page?: string; per_page?: string };
};

const MAX_PER_PAGE = 500;
/** Event id of a batch stream's `summary`: a client that has it has the whole batch. */
const SUMMARY_ID = 'end';

/** POST/GET/DELETE /v2/batches… and the batch's SSE stream. */
export function registerBatchRoutes(
  app: FastifyInstance,
  ctx: GatewayContext,
  batches: Batches,
): void {
  const { authenticate, onStoreError } = ctx;

  app.post(
    '/v2/batches',
    guarded(async (req, reply) => {
      const caller = await authenticate(req);
      const traceparent = req.headers['traceparent'];
      const created = await batches.create(
        caller,
        req.body as string | undefined,
        typeof traceparent === 'string' ? traceparent : undefined,
        req.ip,
      );
      return reply.code(202).send(created);
    }, onStoreError),
  );

  app.get(
    '/v2/batches',
    guarded(async (req, reply) => {
      const caller = await authenticate(req);
      return reply.code(200).send({ batches: batches.list(caller) });
    }, onStoreError),
  );

  app.get<BatchParams>(
    '/v2/batches/:batch_id',
    guarded<FastifyRequest<BatchParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      return reply.code(200).send(await batches.summary(caller, req.params.batch_id));
    }, onStoreError),
  );

  app.get<PageQuery>(
    '/v2/batches/:batch_id/jobs',
    guarded<FastifyRequest<PageQuery>>(async (req, reply) => {
      const caller = await authenticate(req);
      const page = positive(req.query.page, 'page', 1, Number.MAX_SAFE_INTEGER);
      const perPage = positive(req.query.per_page, 'per_page', 50, MAX_PER_PAGE);
      return reply.code(200).send(await batches.page(caller, req.params.batch_id, page, perPage));
    }, onStoreError),
  );

  app.delete<BatchParams>(
    '/v2/batches/:batch_id',
    guarded<FastifyRequest<BatchParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      return reply.code(200).send(await batches.cancel(caller, req.params.batch_id));
    }, onStoreError),
  );

  /**
   * `job` (job_id, host, status, error_code) for every device event, then one `summary` (the
   * batch's GET body) when the batch ends, and the stream ends. Fed by an ordered consumer of
   * `svc.events.batch.<id>.>` from the start, so a late client still sees every device. Event
   * ids: a `job` event's is its sequence in SVC_EVENTS (the same on every gateway), the
   * summary's is `end`; with `Last-Event-ID` the stream resumes after that event, and a client
   * that has the summary of an ended batch gets 204 (EventSource clients stop reconnecting).
   */
  app.get<BatchParams>(
    '/v2/batches/:batch_id/stream',
    guarded<FastifyRequest<BatchParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      const slot = ctx.sse.reserve();
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
    const after = seen !== null && /^[1-9][0-9]{0,15}$/.test(seen) ? Number(seen) : null;
    let messages: ConsumerMessages | null = null;
    // Events of the batch still to send when it already ended (the rest, then the summary).
    let pending = Infinity;
    if (running || after !== null) {
      const consumer = await ctx.js.consumers.get(Streams.events, {
        filter_subjects: Subjects.batchEvents(batchId),
        ...(after === null
          ? { deliver_policy: DeliverPolicy.All }
          : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 }),
      });
      if (!running) pending = (await consumer.info()).num_pending;
      if (pending > 0) messages = await consumer.consume();
    }
    const sse = slot.start(reply, () => ({
      event: 'timeout',
      data: { batch_id: batchId, message: 'stream closed after SSE_TIMEOUT; reconnect' },
    }));
    sse.onEnd(() => void messages?.close().catch(() => undefined));
    if (!messages) {
      sse.send('summary', first, SUMMARY_ID);
      sse.end();
      return;
    }
    const feed = messages;
    void (async () => {
      try {
        for await (const m of feed) {
          if (sse.ended) break;
          pending--;
          const parts = m.subject.split('.');
          if (parts[4] === 'job') {
            const e = decodeJson<JobEvent>(m.data);
            sse.send(
              'job',
              {
                job_id: e.job_id,
                host: e.host,
                status: e.status,
                error_code: e.error_code ?? null,
              },
              String(m.seq),
            );
            // An ended batch whose end event is gone from the stream: its record has the summary.
            if (pending === 0) sse.send('summary', first, SUMMARY_ID);
          } else {
            sse.send('summary', decodeJson<BatchSummary>(m.data), SUMMARY_ID);
          }
          if (pending === 0 || parts[4] !== 'job') break;
        }
      } catch (err) {
        ctx.log.warn({ err, batch_id: batchId }, 'batch sse feed failed');
      } finally {
        sse.end();
      }
    })();
  }
}

function positive(value: string | undefined, name: string, fallback: number, max: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw HttpError.validation([
      { loc: ['query', name], msg: `must be an integer from 1 to ${max}`, type: 'value_error' },
    ]);
  }
  return n;
}
