import { DeliverPolicy, type ConsumerMessages } from '@nats-io/jetstream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  Streams,
  Subjects,
  decodeJson,
  isTerminal,
  type JobEvent,
  type JobRecord,
  type JobStatus,
} from '@svc/proto';
import type { GatewayContext } from '../gateway-context.js';
import { HttpError } from '../http-errors.js';
import { guarded } from './context.js';

type JobParams = { Params: { job_id: string } };

/** Seconds between SSE comment lines that keep proxies from closing an idle stream. */
const KEEPALIVE_MS = 15_000;

/**
 * Open streams per gateway process (both HTTP servers count against one SSE_MAX_CONNECTIONS),
 * keyed by the gateway's context so that two gateways in one test process stay apart.
 */
const openStreams = new WeakMap<GatewayContext, { count: number }>();

/**
 * GET /v2/jobs/{job_id}/stream and GET /v2/send-command/{job_id}/stream: Server-Sent Events.
 *
 * `status` (job_id, status) on every change, one `result` (job_id, status, results) at the
 * terminal state and the stream ends; `timeout` (job_id, message) after SSE_TIMEOUT. Fed by an
 * ordered JetStream consumer of `svc.events.job.<job_id>.>` (deliver all: the few events of
 * the job so far, then live ones), never by polling. A job that already ended gets its result
 * at once without a consumer.
 */
export function registerStreamRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  let counter = openStreams.get(ctx);
  if (!counter) {
    counter = { count: 0 };
    openStreams.set(ctx, counter);
  }
  const open = counter;
  const closers = new Set<() => void>();
  // Hijacked responses would keep `close()` waiting until their SSE_TIMEOUT: end them first.
  app.addHook('preClose', (done) => {
    for (const close of [...closers]) close();
    done();
  });

  const stream = guarded<FastifyRequest<JobParams>>(async (req, reply) => {
    const caller = await ctx.authenticate(req);
    if (open.count >= ctx.config.SSE_MAX_CONNECTIONS) {
      throw new HttpError(
        429,
        `too many open streams (SSE_MAX_CONNECTIONS=${ctx.config.SSE_MAX_CONNECTIONS})`,
        {
          'Retry-After': '5',
        },
      );
    }
    open.count++;
    let counted = true;
    const release = () => {
      if (counted) open.count--;
      counted = false;
    };
    try {
      const record = await ctx.control.read(caller, req.params.job_id);
      return await serve(reply, record, release);
    } catch (err) {
      release();
      throw err;
    }
  }, ctx.onStoreError);

  async function serve(reply: FastifyReply, record: JobRecord, release: () => void): Promise<void> {
    const jobId = record.job_id;
    let messages: ConsumerMessages | null = null;
    if (!isTerminal(record.status)) {
      // Opened before the headers go out so that a NATS failure is still a 503.
      const consumer = await ctx.js.consumers.get(Streams.events, {
        filter_subjects: Subjects.jobEvents(jobId), // a string: nats-server 2.9 has one filter
        deliver_policy: DeliverPolicy.All,
      });
      messages = await consumer.consume();
    }
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
    const keepalive = setInterval(() => {
      if (!ended) res.write(': keepalive\n\n');
    }, KEEPALIVE_MS);
    const timeout = setTimeout(() => {
      send('timeout', {
        job_id: jobId,
        message: `stream closed after SSE_TIMEOUT (${ctx.config.SSE_TIMEOUT} s); read the job or reconnect`,
      });
      finish();
    }, ctx.config.SSE_TIMEOUT * 1000);
    function finish() {
      if (ended) return;
      ended = true;
      clearInterval(keepalive);
      clearTimeout(timeout);
      closers.delete(finish);
      release();
      void messages?.close().catch(() => undefined);
      res.end();
    }
    closers.add(finish);
    // The client went away (or the server closed): free the consumer, timers and the slot.
    res.once('close', finish);

    let last: JobStatus | null = null;
    const onStatus = async (status: JobStatus) => {
      if (status !== last) {
        last = status;
        send('status', { job_id: jobId, status });
      }
      if (!isTerminal(status)) return;
      // Results are not in events (they can be large): read the record once, at the end.
      const final = (await ctx.jobs.get(jobId).catch(() => null))?.record ?? null;
      send('result', {
        job_id: jobId,
        status: final?.status ?? status,
        results: final?.results ?? null,
      });
      finish();
    };

    await onStatus(record.status);
    if (!messages || ended) return;
    const events = messages;
    void (async () => {
      try {
        for await (const m of events) {
          if (ended) break;
          let event: JobEvent;
          try {
            event = decodeJson<JobEvent>(m.data);
          } catch {
            continue;
          }
          // Events of earlier states replayed by "deliver all" are older than the record read.
          if (rank(event.status) < rank(last ?? 'queued')) continue;
          await onStatus(event.status);
        }
      } catch (err) {
        ctx.log.warn({ err, job_id: jobId }, 'sse event feed failed');
      } finally {
        finish();
      }
    })();
  }

  app.get<JobParams>('/v2/jobs/:job_id/stream', stream);
  app.get<JobParams>('/v2/send-command/:job_id/stream', stream);
}

/** Order of statuses in a job's life; terminal ones share the last rank. */
function rank(status: JobStatus): number {
  return status === 'queued' ? 0 : status === 'started' ? 1 : 2;
}
