import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseResourceAttributes, tracingPlan, type TracingSettings } from '../src/mod.js';

const defaults: TracingSettings = {
  OTEL_SDK_DISABLED: false,
  OTEL_TRACES_EXPORTER: '',
  OTEL_ENABLED: false,
  OTEL_EXPORTER_OTLP_ENDPOINT: '',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
  OTEL_EXPORTER_OTLP_PROTOCOL: '',
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: '',
  OTEL_RESOURCE_ATTRIBUTES: '',
  OTEL_SERVICE_NAME: 'svc',
  OTEL_TRACES_SAMPLER: '',
  OTEL_TRACES_SAMPLER_ARG: '',
};
const plan = (s: Partial<TracingSettings>) => tracingPlan({ ...defaults, ...s }, 'gateway');

test('when no OTEL_* variable is set, then tracing is off (the specification default)', () => {
  assert.deepEqual(plan({}).exporters, []);
});

test('when the deprecated OTEL_ENABLED is true, then spans go over OTLP/gRPC to the default endpoint', () => {
  const p = plan({ OTEL_ENABLED: true });
  assert.deepEqual(p.exporters, ['otlp']);
  assert.equal(p.protocol, 'grpc');
  assert.equal(p.url, 'http://localhost:4317');
});

test('when OTEL_SDK_DISABLED is true, then nothing is exported whatever else is set', () => {
  assert.deepEqual(
    plan({ OTEL_SDK_DISABLED: true, OTEL_TRACES_EXPORTER: 'otlp,console' }).exporters,
    [],
  );
  assert.deepEqual(plan({ OTEL_SDK_DISABLED: true, OTEL_ENABLED: true }).exporters, []);
});

test('when OTEL_TRACES_EXPORTER is none, then OTEL_ENABLED does not turn tracing on', () => {
  assert.deepEqual(plan({ OTEL_TRACES_EXPORTER: 'none', OTEL_ENABLED: true }).exporters, []);
  assert.deepEqual(plan({ OTEL_TRACES_EXPORTER: 'console' }).exporters, ['console']);
  assert.equal(plan({ OTEL_TRACES_EXPORTER: 'console' }).url, '');
});

test('when the protocol is http/protobuf, then the base endpoint gets /v1/traces and a per-signal endpoint is used as given', () => {
  const base = plan({
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
  });
  assert.equal(base.protocol, 'http/protobuf');
  assert.equal(base.url, 'http://collector:4318/v1/traces');
  const own = plan({
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/custom',
  });
  assert.equal(own.protocol, 'http/protobuf', 'the per-signal protocol wins');
  assert.equal(own.url, 'http://traces:9999/custom');
});

test('when OTEL_RESOURCE_ATTRIBUTES is set, then its pairs are decoded and OTEL_SERVICE_NAME wins over its service.name', () => {
  assert.deepEqual(parseResourceAttributes('a=1, b = x%20y ,bad,=nokey,c=%zz'), {
    a: '1',
    b: 'x y',
  });
  const p = plan({
    OTEL_RESOURCE_ATTRIBUTES: 'service.name=other,deployment.environment=prod',
    OTEL_SERVICE_NAME: 'svc-prod',
  });
  assert.deepEqual(p.attributes, {
    'service.name': 'svc-prod',
    'deployment.environment': 'prod',
    'svc.component': 'gateway',
  });
});

// Issue 24, finding 6: the standard variables as the OpenTelemetry SDK reads them.
test('when only OTEL_EXPORTER_OTLP_ENDPOINT is set, then spans go over OTLP http/protobuf to its /v1/traces (the SDK defaults)', () => {
  const p = plan({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' });
  assert.deepEqual(p.exporters, ['otlp']);
  assert.equal(p.protocol, 'http/protobuf');
  assert.equal(p.url, 'http://collector:4318/v1/traces');
});

test('when only OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, then tracing is on and the URL is used as given', () => {
  const p = plan({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/custom' });
  assert.deepEqual(p.exporters, ['otlp']);
  assert.equal(p.url, 'http://traces:9999/custom');
});

test('when OTEL_TRACES_EXPORTER is none, then an endpoint does not turn tracing on', () => {
  assert.deepEqual(
    plan({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).exporters,
    [],
  );
});

test('when OTEL_EXPORTER_OTLP_PROTOCOL is http/json, then it is the protocol, to /v1/traces', () => {
  const p = plan({
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  });
  assert.equal(p.protocol, 'http/json');
  assert.equal(p.url, 'http://collector:4318/v1/traces');
});

test('when OTEL_TRACES_EXPORTER is otlp and no endpoint is set, then the SDK default endpoint of the protocol is used', () => {
  assert.equal(plan({ OTEL_TRACES_EXPORTER: 'otlp' }).url, 'http://localhost:4318/v1/traces');
  assert.equal(
    plan({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }).url,
    'http://localhost:4317',
  );
});

test('when OTEL_TRACES_SAMPLER and its argument are set, then the plan samples as they say; the default is parentbased_always_on', () => {
  assert.deepEqual(plan({}).sampler, { name: 'parentbased_always_on', ratio: 1 });
  assert.deepEqual(
    plan({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' })
      .sampler,
    { name: 'parentbased_traceidratio', ratio: 0.25 },
  );
  // As the SDK: a ratio outside [0, 1] or not a number is the default, 1.
  assert.deepEqual(
    plan({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: 'x' }).sampler,
    { name: 'traceidratio', ratio: 1 },
  );
});
