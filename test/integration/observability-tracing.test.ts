import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
// @grpc/grpc-js comes with the OTLP gRPC exporter; the test plays the collector with it.
import { Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  ServiceProcess,
  http,
  testEnv,
  waitForJob,
  waitHealthy,
  decodeExportTraceRequest,
  type ReceivedSpan,
  waitUntil,
} from '../harness/mod.js';

let nats: NatsServerProcess;
let device: SimulatedDevice;
let collector: Server;
let procs: ServiceProcess[] = [];
const received: ReceivedSpan[] = [];

before(async () => {
  collector = new Server();
  collector.addService(
    {
      export: {
        path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
        requestStream: false,
        responseStream: false,
        requestSerialize: (b: Buffer) => b,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: (b: Buffer) => b,
        responseDeserialize: (b: Buffer) => b,
      },
    },
    {
      export: (call: ServerUnaryCall<Buffer, Buffer>, done: sendUnaryData<Buffer>) => {
        received.push(...decodeExportTraceRequest(call.request));
        done(null, Buffer.alloc(0)); // an empty ExportTraceServiceResponse
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    collector.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  nats = await NatsServerProcess.start();
  device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
  const env = testEnv(nats.url, {
    LOG_LEVEL: 'INFO',
    OTEL_ENABLED: 'true',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    // The SDK's batch processor reads this: export within 100 ms instead of 5 s.
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  procs = [
    ServiceProcess.start('dispatcher', env),
    ServiceProcess.start('device-actor', env),
    ServiceProcess.start('gateway', env),
  ];
});

after(async () => {
  for (const p of procs) await p.kill('SIGTERM');
  await device?.stop();
  await nats?.stop();
  collector?.forceShutdown();
});

test('when the deprecated OTEL_ENABLED is set (OTLP over gRPC by default), then one trace spans gateway route, actor job and device session', async () => {
  const url = await procs[2]!.httpUrl();
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
  const done = await waitForJob(url, a.json.job_id as string, auth);
  assert.equal(done.json.status, 'finished');

  const find = (name: string, component: string) =>
    received.find((s) => s.name === name && s.component === component);
  await waitUntil(
    () => find('POST /v2/send-command', 'gateway') && find('device session', 'device-actor'),
    'the route and device session spans',
    { timeoutMs: 15_000, everyMs: 100 },
  ).catch(() =>
    assert.fail(`spans missing; got ${JSON.stringify(received.map((s) => [s.component, s.name]))}`),
  );
  const route = find('POST /v2/send-command', 'gateway')!;
  const job = received.find((s) => s.name === 'job run' && s.traceId === route.traceId);
  const session = received.find((s) => s.name === 'device session' && s.traceId === route.traceId);
  assert.ok(job, 'the actor continued the trace');
  assert.ok(session, 'the device session is in the trace');
  assert.equal(job.component, 'device-actor');
  // The job goes from the gateway to its shard's owner (docs/shards.md): no hop between.
  assert.equal(job.parentSpanId, route.spanId);
  assert.equal(session.parentSpanId, job.spanId);
  assert.equal(route.serviceName, 'svc');
  assert.equal(route.parentSpanId, '', 'the route span is the root');
});
