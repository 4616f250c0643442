import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  SpanKind,
  SpanStatusCode,
  extractHttpTraceContext,
  otelContext,
  otelTrace,
  tracer,
  type Span,
  type TraceContext,
} from '@svc/telemetry';

/** Label and span name of a request: the route pattern, never the raw URL (ids, queries). */
export function endpointOf(req: FastifyRequest): string {
  return req.routeOptions.url ?? 'unmatched';
}

const spans = new WeakMap<FastifyRequest, { span: Span; ctx: TraceContext }>();

/**
 * One SERVER span per API request, named `<METHOD> <route pattern>`, child of an incoming W3C
 * `traceparent`. The route handler runs with the span active (the handler is wrapped when the
 * route is added), so the job intake injects this span's context into the NATS headers of the
 * job. The span ends when the response closes, which also covers hijacked SSE streams and
 * clients that go away. A no-op when tracing is off.
 *
 * Must be called before any route is added to `app` (the onRoute hook wraps handlers).
 */
export function registerHttpTracing(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    // `this` is the Fastify instance the handler is bound to; the wrapper keeps that binding.
    route.handler = function (this: FastifyInstance, req: FastifyRequest, reply: FastifyReply) {
      const active = spans.get(req);
      if (!active) return handler.call(this, req, reply);
      return otelContext.with(active.ctx, () => handler.call(this, req, reply));
    };
  });
  app.addHook('onRequest', (req, reply, done) => {
    const endpoint = endpointOf(req);
    const parent = extractHttpTraceContext(req.headers);
    const span = tracer().startSpan(
      `${req.method} ${endpoint}`,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': req.method, 'http.route': endpoint },
      },
      parent,
    );
    spans.set(req, { span, ctx: otelTrace.setSpan(parent, span) });
    reply.raw.once('close', () => {
      const status = reply.raw.statusCode;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    done();
  });
}
