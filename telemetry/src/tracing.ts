import {
  SpanKind,
  SpanStatusCode,
  context,
  isSpanContextValid,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';
import type { tracing as SdkTracing } from '@opentelemetry/sdk-node';
import { Headers } from '@svc/proto';

/** The tracing settings of SharedSettings (the standard OTEL_* variables, plus OTEL_ENABLED). */
export interface TracingSettings {
  OTEL_SDK_DISABLED: boolean;
  OTEL_TRACES_EXPORTER: string;
  OTEL_ENABLED: boolean;
  OTEL_EXPORTER_OTLP_ENDPOINT: string;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: string;
  OTEL_EXPORTER_OTLP_PROTOCOL: string;
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: string;
  OTEL_RESOURCE_ATTRIBUTES: string;
  OTEL_SERVICE_NAME: string;
  OTEL_TRACES_SAMPLER: string;
  OTEL_TRACES_SAMPLER_ARG: string;
}

/** The samplers OTEL_TRACES_SAMPLER names (as the OpenTelemetry SDK reads it). */
export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

export interface RunningTracing {
  /** Whether spans are exported (false: every span is a no-op). */
  enabled: boolean;
  /** Flushes pending spans and shuts the exporter down; safe to call twice. */
  stop(): Promise<void>;
}

/** What the OTEL_* settings ask for, resolved once (exported for tests and the docs). */
export interface TracingPlan {
  exporters: ('otlp' | 'console')[];
  protocol: 'grpc' | 'http/protobuf' | 'http/json';
  /** The URL the OTLP exporter posts to (empty when no OTLP exporter). */
  url: string;
  attributes: Record<string, string>;
  /** OTEL_TRACES_SAMPLER and the ratio of OTEL_TRACES_SAMPLER_ARG (1 unless a ratio sampler). */
  sampler: { name: SamplerName; ratio: number };
}

/**
 * Resolves the OTEL_* settings as the OpenTelemetry SDK reads them: an OTLP endpoint
 * (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) turns tracing on with
 * the `otlp` exporter, over http/protobuf unless a protocol is named; OTEL_TRACES_EXPORTER
 * says otherwise when set (`none` turns it off). With nothing set tracing is off, as the
 * service specification asks; its deprecated OTEL_ENABLED=true means OTLP over gRPC to
 * http://localhost:4317 unless the protocol and endpoint are set. OTEL_SDK_DISABLED=true wins
 * over everything.
 */
export function tracingPlan(settings: TracingSettings, component: string): TracingPlan {
  const endpointSet = Boolean(
    settings.OTEL_EXPORTER_OTLP_ENDPOINT || settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
  );
  const names = settings.OTEL_TRACES_EXPORTER
    ? settings.OTEL_TRACES_EXPORTER.split(',')
    : settings.OTEL_ENABLED || endpointSet
      ? ['otlp']
      : [];
  const exporters =
    settings.OTEL_SDK_DISABLED || names.includes('none')
      ? []
      : [...new Set(names.filter((n): n is 'otlp' | 'console' => n === 'otlp' || n === 'console'))];
  const protocol = (settings.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ||
    settings.OTEL_EXPORTER_OTLP_PROTOCOL ||
    (settings.OTEL_ENABLED ? 'grpc' : 'http/protobuf')) as TracingPlan['protocol'];
  // Per the OTLP exporter specification: a per-signal endpoint is used as given; the base
  // endpoint gets the signal's path appended for HTTP (gRPC has no path).
  const base =
    settings.OTEL_EXPORTER_OTLP_ENDPOINT ||
    (protocol === 'grpc' ? 'http://localhost:4317' : 'http://localhost:4318');
  const url =
    settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ||
    (protocol === 'grpc' ? base : `${base.replace(/\/+$/, '')}/v1/traces`);
  return {
    exporters,
    protocol,
    url: exporters.includes('otlp') ? url : '',
    attributes: {
      ...parseResourceAttributes(settings.OTEL_RESOURCE_ATTRIBUTES),
      'service.name': settings.OTEL_SERVICE_NAME,
      'svc.component': component,
    },
    sampler: samplerOf(settings),
  };
}

function samplerOf(settings: TracingSettings): TracingPlan['sampler'] {
  const name = (settings.OTEL_TRACES_SAMPLER || 'parentbased_always_on') as SamplerName;
  const arg = settings.OTEL_TRACES_SAMPLER_ARG.trim();
  const ratio = arg === '' ? NaN : Number(arg);
  // As the SDK: a missing or out-of-range ratio is 1.
  return { name, ratio: ratio >= 0 && ratio <= 1 ? ratio : 1 };
}

/**
 * OTEL_RESOURCE_ATTRIBUTES: `key=value` pairs separated by commas, values percent-encoded.
 * A malformed pair is skipped, as the OpenTelemetry SDKs do.
 */
export function parseResourceAttributes(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    try {
      out[key] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      // not valid percent-encoding: skipped
    }
  }
  return out;
}

/**
 * Starts OpenTelemetry for this process as the OTEL_* settings say (see `tracingPlan`): OTLP
 * over gRPC or HTTP/protobuf and/or the console, W3C trace context propagation, resource
 * detection (host, OS, process, instance id) under the attributes of OTEL_RESOURCE_ATTRIBUTES,
 * OTEL_SERVICE_NAME and `svc.component`. With no exporter nothing is registered, so the API's
 * no-op tracer makes every span below free. Only `main.ts` files and the all-in-one launcher
 * call this: the SDK is process-global. The exporters also read the standard variables this
 * service does not interpret (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _CERTIFICATE, OTEL_BSP_*).
 *
 * @param component which service this process is (`gateway`, `dispatcher`, `device-actor`,
 *   `reaper`, `all-in-one`), recorded as the resource attribute `svc.component` so that
 *   services sharing one OTEL_SERVICE_NAME stay apart in a trace view.
 */
export async function startTracing(
  settings: TracingSettings,
  component: string,
): Promise<RunningTracing> {
  const plan = tracingPlan(settings, component);
  if (plan.exporters.length === 0) return { enabled: false, stop: () => Promise.resolve() };
  // Loaded only when enabled: the SDK and its gRPC stack take a third of a second to import.
  const { NodeSDK, resources, tracing } = await import('@opentelemetry/sdk-node');
  const processors: SdkTracing.SpanProcessor[] = [];
  if (plan.exporters.includes('otlp')) {
    const exporter =
      plan.protocol === 'grpc'
        ? new (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter({
            url: plan.url,
          })
        : plan.protocol === 'http/json'
          ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({
              url: plan.url,
            })
          : new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter({
              url: plan.url,
            });
    processors.push(new tracing.BatchSpanProcessor(exporter));
  }
  if (plan.exporters.includes('console')) {
    processors.push(new tracing.SimpleSpanProcessor(new tracing.ConsoleSpanExporter()));
  }
  const sdk = new NodeSDK({
    resource: resources.resourceFromAttributes(plan.attributes),
    // The environment detector is left out: OTEL_RESOURCE_ATTRIBUTES is read with the other
    // settings (the all-in-one launcher and tests pass settings, not process.env).
    autoDetectResources: true,
    resourceDetectors: [
      resources.hostDetector,
      resources.osDetector,
      resources.processDetector,
      resources.serviceInstanceIdDetector,
    ],
    spanProcessors: processors,
    sampler: samplerFor(plan.sampler, tracing),
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

/** The SDK sampler for the plan's OTEL_TRACES_SAMPLER (read here, not by the SDK from env). */
function samplerFor(s: TracingPlan['sampler'], sdk: typeof SdkTracing): SdkTracing.Sampler {
  const ratio = new sdk.TraceIdRatioBasedSampler(s.ratio);
  switch (s.name) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: ratio });
    case 'parentbased_always_on':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
  }
}

/**
 * The ids of the active span, for log lines (`trace_id`, `span_id`); empty when there is none
 * (tracing off, or outside a request or job).
 */
export function activeTraceIds(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpanContext(context.active());
  if (!span || !isSpanContextValid(span)) return {};
  return { trace_id: span.traceId, span_id: span.spanId };
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
