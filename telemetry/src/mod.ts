export { createLogger, renamedLogger, REDACT_PATHS } from './logging.js';
export type { Logger } from './logging.js';
export { AuditLog, AuditEvent } from './audit.js';
export type { AuditFields } from './audit.js';
export {
  startTracing,
  tracingPlan,
  parseResourceAttributes,
  activeTraceIds,
  tracer,
  injectTraceContext,
  extractTraceContext,
  extractHttpTraceContext,
  withSpan,
  SpanKind,
  SpanStatusCode,
  otelContext,
  otelTrace,
} from './tracing.js';
export type {
  TracingSettings,
  TracingPlan,
  RunningTracing,
  HeaderCarrier,
  Span,
  TraceContext,
  SpanAttributes,
} from './tracing.js';
export {
  MetricsRegistry,
  createMetricsRegistry,
  jobFailureCounter,
  metricsSettings,
  startMetricsServer,
} from './service-metrics.js';
export type { MetricsServer } from './service-metrics.js';
