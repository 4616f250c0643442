import { DeliverPolicy } from '@nats-io/jetstream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Streams, Subjects, decodeJson, type BatchSummary, type JobEvent } from '@svc/proto';
import type { Batches } from '../batches.js';
import type { GatewayContext } from '../gateway-context.js';
import { HttpError } from '../http-errors.js';
import { guarded } from './context.js';

type BatchParams = { Params: { batch_id: string } };
type PageQuery = {
  Params: { batch_id: string };
  Querystring: { page?: string; per_page?: string };
};

const MAX_PER_PAGE = 500;

/** POST/GET/DELETE /v2/batches… and the batch's SSE stream. */
export function registerBatchRoutes(
  app: FastifyInstance,
  ctx: GatewayContext,
  batches: Batches,
): void {
  const { authenticate, onStoreError } = ctx;
  const closers = new Set<() => void>();
  app.addHook('preClose', (done) => {
    for (const close of [...closers]) close();
    done();
  });

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
   * `svc.events.batch.<id>.>` from the start, so a late client still sees every device.
   */
  app.get<BatchParams>(
    '/v2/batches/:batch_id/stream',
    guarded<FastifyRequest<BatchParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      const batchId = req.params.batch_id;
      const first = await batches.summary(caller, batchId);
      const consumer =
        first.status === 'running'
          ? await ctx.js.consumers.get(Streams.events, {
              filter_subjects: Subjects.batchEvents(batchId),
              deliver_policy: DeliverPolicy.All,
            })
          : null;
      const messages = consumer ? await consumer.consume() : null;
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      let ended = false;
      const send = (event: string, data: unknown) => {
        if (!ended) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      };
      const keepalive = setInterval(() => !ended && res.write(': keepalive\n\n'), 15_000);
      const timeout = setTimeout(() => {
        send('timeout', {
          batch_id: batchId,
          message: 'stream closed after SSE_TIMEOUT; reconnect',
        });
        finish();
      }, ctx.config.SSE_TIMEOUT * 1000);
      function finish() {
        if (ended) return;
        ended = true;
        clearInterval(keepalive);
        clearTimeout(timeout);
        closers.delete(finish);
        void messages?.close().catch(() => undefined);
        res.end();
      }
      closers.add(finish);
      res.once('close', finish);
      if (!messages) {
        send('summary', first);
        finish();
        return;
      }
      void (async () => {
        try {
          for await (const m of messages) {
            if (ended) break;
            const parts = m.subject.split('.');
            if (parts[4] === 'job') {
              const e = decodeJson<JobEvent>(m.data);
              send('job', {
                job_id: e.job_id,
                host: e.host,
                status: e.status,
                error_code: e.error_code ?? null,
              });
            } else {
              send('summary', decodeJson<BatchSummary>(m.data));
              break;
            }
          }
        } catch (err) {
          ctx.log.warn({ err, batch_id: batchId }, 'batch sse feed failed');
        } finally {
          finish();
        }
      })();
    }, onStoreError),
  );
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
