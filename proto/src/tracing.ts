import {
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';
import { Headers } from './subjects.js';

/** The tracing settings of SharedSettings (OTEL_*). */
export interface TracingSettings {
  OTEL_ENABLED: boolean;
  OTEL_EXPORTER_OTLP_ENDPOINT: string;
  OTEL_SERVICE_NAME: string;
}

export interface RunningTracing {
  /** Whether spans are exported (false: every span is a no-op). */
  enabled: boolean;
  /** Flushes pending spans and shuts the exporter down; safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts OpenTelemetry for this process: OTLP/gRPC export to OTEL_EXPORTER_OTLP_ENDPOINT, W3C
 * trace context propagation. With OTEL_ENABLED=false (the default) nothing is registered, so
 * the API's no-op tracer makes every span below free. Only `main.ts` files and the all-in-one
 * launcher call this: the SDK is process-global.
 *
 * @param component which service this process is (`gateway`, `dispatcher`, `device-actor`,
 *   `reaper`, `all-in-one`), recorded as the resource attribute `svc.component` so that
 *   services sharing one OTEL_SERVICE_NAME stay apart in a trace view.
 */
export async function startTracing(
  settings: TracingSettings,
  component: string,
): Promise<RunningTracing> {
  if (!settings.OTEL_ENABLED) return { enabled: false, stop: () => Promise.resolve() };
  // Loaded only when enabled: the SDK and its gRPC stack take a third of a second to import.
  const [{ OTLPTraceExporter }, { NodeSDK, resources }] = await Promise.all([
    import('@opentelemetry/exporter-trace-otlp-grpc'),
    import('@opentelemetry/sdk-node'),
  ]);
  const sdk = new NodeSDK({
    resource: resources.resourceFromAttributes({
      'service.name': settings.OTEL_SERVICE_NAME,
      'svc.component': component,
    }),
    // Resource detectors would read OTEL_RESOURCE_ATTRIBUTES and the host; the two above are
    // what an operator filters by, and detection must not slow a start.
    autoDetectResources: false,
    traceExporter: new OTLPTraceExporter({ url: settings.OTEL_EXPORTER_OTLP_ENDPOINT }),
    // No auto-instrumentation: spans are made where the job moves (routes, placement, actor).
    instrumentations: [],
  });
  sdk.start();
  let stopped: Promise<void> | null = null;
  return {
    enabled: true,
    stop() {
      stopped ??= sdk.shutdown().catch(() => undefined);
      return stopped;
    },
  };
}

/** The tracer every service uses; a no-op until `startTracing` registered a provider. */
export function tracer() {
  return trace.getTracer('svc');
}

/** Anything with get/set of string headers: NATS `MsgHdrs`, Node's incoming headers via a map. */
export interface HeaderCarrier {
  get(key: string): string;
  set(key: string, value: string): void;
}

const natsSetter: TextMapSetter<HeaderCarrier> = {
  set: (carrier, key, value) => carrier.set(key, value),
};

const natsGetter: TextMapGetter<HeaderCarrier | undefined> = {
  get: (carrier, key) => carrier?.get(key) || undefined,
  keys: () => [Headers.traceparent, Headers.tracestate],
};

/**
 * Puts the active span's trace context into NATS message headers. When tracing is off (or no
 * span is active) the `fallback` traceparent, if any, is passed on unchanged, so a caller's
 * own trace id still travels to the actor.
 */
export function injectTraceContext(headers: HeaderCarrier, fallback?: string): void {
  propagation.inject(context.active(), headers, natsSetter);
  if (!headers.get(Headers.traceparent) && fallback) headers.set(Headers.traceparent, fallback);
}

/** The trace context carried by NATS message headers (root context when there is none). */
export function extractTraceContext(headers: HeaderCarrier | undefined): Context {
  return propagation.extract(context.active(), headers, natsGetter);
}

/** Extracts a trace context from HTTP request headers (`traceparent`, `tracestate`). */
export function extractHttpTraceContext(
  headers: Readonly<Record<string, string | string[] | undefined>>,
): Context {
  const getter: TextMapGetter<typeof headers> = {
    get: (carrier, key) => {
      const v = carrier[key.toLowerCase()];
      return Array.isArray(v) ? v[0] : v;
    },
    keys: (carrier) => Object.keys(carrier),
  };
  return propagation.extract(context.active(), headers, getter);
}

/**
 * Runs `fn` inside a new span (child of `parent`, or of the active span), records a thrown
 * error on it and ends it. The span is the active one while `fn` runs, so spans made inside
 * and trace context injected inside belong to it.
 */
export async function withSpan<T>(
  name: string,
  options: { parent?: Context; attributes?: Attributes; kind?: SpanKind },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      ...(options.attributes ? { attributes: options.attributes } : {}),
    },
    parent,
  );
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    span.recordException(err instanceof Error ? err : String(err));
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: err instanceof Error ? err.message : String(err),
    });
    throw err;
  } finally {
    span.end();
  }
}

export { SpanKind, SpanStatusCode, context as otelContext, trace as otelTrace };
export type { Span, Context as TraceContext, Attributes as SpanAttributes };
