// OpenTelemetry as its SDK reads the standard variables (issue 24, finding 6): an endpoint alone
// turns tracing on (http/protobuf by default), http/json works, the sampler and resource
// variables are honoured. Real gateway process, real nats-server, real OTLP/HTTP collectors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  NatsServerProcess,
  OtlpHttpCollector,
  ServiceProcess,
  http,
  testEnv,
} from '../harness/mod.js';

let nats: NatsServerProcess;
const procs: ServiceProcess[] = [];

before(async () => {
  nats = await NatsServerProcess.start();
});

after(async () => {
  for (const p of procs) await p.kill('SIGTERM');
  await nats?.stop();
});

/** A gateway with these OTEL_* variables; a request to it makes a span. */
async function gatewayWith(otel: Record<string, string>): Promise<void> {
  const gateway = ServiceProcess.start(
    'gateway',
    testEnv(nats.url, { LOG_LEVEL: 'INFO', OTEL_BSP_SCHEDULE_DELAY: '100', ...otel }),
  );
  procs.push(gateway);
  const url = await gateway.httpUrl();
  const a = await http('GET', `${url}/v2/send-command/no-such-job`);
  assert.equal(a.status, 401);
}

test('when only OTEL_EXPORTER_OTLP_ENDPOINT is set, then spans are exported over OTLP http/protobuf with the service name and resource attributes', async (t) => {
  const collector = await OtlpHttpCollector.start();
  t.after(() => collector.stop());
  await gatewayWith({
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.tracesUrl.replace(/\/v1\/traces$/, ''),
    OTEL_SERVICE_NAME: 'svc-standard-env',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=ci',
  });
  await collector.waitFor((spans) => spans.some((s) => s.component === 'gateway'));
  const span = collector.spans.find((s) => s.component === 'gateway')!;
  assert.equal(span.serviceName, 'svc-standard-env');
  assert.equal(span.resource['deployment.environment'], 'ci');
});

test('when OTEL_EXPORTER_OTLP_PROTOCOL is http/json, then the service starts and spans arrive as OTLP JSON', async (t) => {
  const collector = await OtlpHttpCollector.start({ json: true });
  t.after(() => collector.stop());
  await gatewayWith({
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: collector.tracesUrl,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: '1',
  });
  await collector.waitFor((spans) => spans.some((s) => s.component === 'gateway'));
  assert.deepEqual(collector.refused, []);
});
