import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import { SubjectParsers, Subjects } from '@svc/proto';
import { connectNats } from '@svc/nats';
import {
  NatsServerProcess,
  OtlpHttpCollector,
  ServiceProcess,
  http,
  testEnv,
  waitForJob,
  waitHealthy,
  waitUntil,
} from '../harness/mod.js';

let nats: NatsServerProcess;
let device: SimulatedDevice;
let collector: OtlpHttpCollector;
let watcher: NatsConnection;
let events: Subscription;
const received: Msg[] = [];
let procs: ServiceProcess[] = [];

before(async () => {
  collector = await OtlpHttpCollector.start();
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  // Only the standard OTEL_* variables: no OTEL_ENABLED. The gateway names the base endpoint
  // and protocol (the SDK appends /v1/traces), the others the per-signal ones.
  const base = testEnv(nats.url, {
    LOG_LEVEL: 'INFO',
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_SERVICE_NAME: 'svc-under-test',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=ci,team=net%20ops',
    // The SDK's batch processor reads this: export within 100 ms instead of 5 s.
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  const perSignal = {
    ...base,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: collector.tracesUrl,
  };
  const baseEndpoint = {
    ...base,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.tracesUrl.replace(/\/v1\/traces$/, ''),
  };
  watcher = await connectNats(nats.url, 'otlp-test-watcher');
  events = watcher.subscribe(Subjects.eventsAll, { callback: (_err, m) => void received.push(m) });
  procs = [
    ServiceProcess.start('dispatcher', perSignal),
    ServiceProcess.start('device-actor', perSignal),
    ServiceProcess.start('gateway', baseEndpoint),
  ];
});

after(async () => {
  for (const p of procs) await p.kill('SIGTERM');
  events?.unsubscribe();
  await watcher?.close();
  await device?.stop();
  await nats?.stop();
  await collector?.stop();
});

test('when only OTEL_* variables ask for OTLP over http/protobuf, then one job is one trace across gateway and actor, its log lines and job events carry that trace', async () => {
  const gateway = procs[2]!;
  const actor = procs[1]!;
  const url = await gateway.httpUrl();
  await waitHealthy(url);
  const auth = { basic: { username: device.username, password: device.password } };
  const a = await http('POST', `${url}/v2/send-command`, {
    ...auth,
    body: {
      host: '127.0.0.1',
      port: device.port,
      platform: 'cisco_ios',
      commands: ['show version'],
    },
  });
  assert.equal(a.status, 202, a.text);
  const jobId = a.json.job_id as string;
  const done = await waitForJob(url, jobId, auth);
  assert.equal(done.json.status, 'finished');

  // Spans: the route span of the gateway and the job's spans in the actor share one trace.
  await collector.waitFor(
    (spans) =>
      spans.some((s) => s.name === 'POST /v2/send-command' && s.component === 'gateway') &&
      spans.some((s) => s.name === 'device session' && s.component === 'device-actor'),
  );
  const route = collector.spans.find(
    (s) => s.name === 'POST /v2/send-command' && s.component === 'gateway',
  )!;
  const traceId = route.traceId;
  assert.match(traceId, /^[0-9a-f]{32}$/);
  const inTrace = collector.spans.filter((s) => s.traceId === traceId);
  const job = inTrace.find((s) => s.name === 'job run');
  assert.ok(job, 'the actor continued the gateway trace');
  assert.equal(job.component, 'device-actor');
  assert.equal(job.parentSpanId, route.spanId, 'the job span is the route span’s child');
  assert.ok(inTrace.some((s) => s.name === 'device session' && s.parentSpanId === job.spanId));
  // Resource: service name, OTEL_RESOURCE_ATTRIBUTES (percent-decoded) and detected attributes.
  for (const span of [route, job]) {
    assert.equal(span.serviceName, 'svc-under-test');
    assert.equal(span.resource['deployment.environment'], 'ci');
    assert.equal(span.resource['team'], 'net ops');
    assert.ok(span.resource['host.name'], 'host detected');
    assert.ok(span.resource['service.instance.id'], 'instance id detected');
  }
  assert.deepEqual(collector.refused, [], 'every export was protobuf to /v1/traces');

  // Log lines of the job carry its trace id (the actor's job lines, the gateway's audit line).
  const lineOf = (proc: ServiceProcess, pattern: RegExp) =>
    proc.waitFor(pattern).then((l) => JSON.parse(l) as Record<string, unknown>);
  const startedLine = await lineOf(actor, new RegExp(`"message":"${jobId} started"`));
  const endedLine = await lineOf(actor, new RegExp(`"message":"${jobId} finished"`));
  const submitted = await lineOf(
    gateway,
    new RegExp(`"event_type":"job.submitted".*"${jobId}"|"${jobId}".*"event_type":"job.submitted"`),
  );
  for (const line of [startedLine, endedLine, submitted]) {
    assert.equal(line['trace_id'], traceId, JSON.stringify(line));
    assert.match(String(line['span_id']), /^[0-9a-f]{16}$/);
  }
  assert.equal(startedLine['span_id'], job.spanId);

  // Job events on NATS carry a traceparent of the same trace (queued: gateway; started and
  // finished: actor).
  const ofJob = () => received.filter((m) => SubjectParsers.jobEvent(m.subject)?.jobId === jobId);
  await waitUntil(() => ofJob().length >= 3, 'three events of the job', { timeoutMs: 10_000 });
  const statuses = ofJob().map((m) => SubjectParsers.jobEvent(m.subject)?.status);
  assert.deepEqual(statuses, ['queued', 'started', 'finished']);
  for (const m of ofJob()) {
    const traceparent = m.headers?.get('traceparent') ?? '';
    assert.match(traceparent, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`), m.subject);
  }
});
