import { test } from 'node:test';
import {
  NatsServerProcess,
  ScenarioClients,
  assertPromiseKept,
  countOutcome,
  startProcessStack,
  testEnv,
  waitForEnds,
  scenarioLoad,
  startScenarioFleet,
  untilJobsBeforeFault,
} from '../harness/mod.js';

/**
 * Fault scenario of issue 23, run by `npm run test:faults`: every service as its own process
 * (2 gateways, 2 dispatchers, 2 actor hosts, a reaper), devices answering in 300 ms, one client
 * per device sending distinct jobs with an idempotency key each, retried with the same key on
 * the other gateway when refused or unanswered; one gateway is SIGKILLed under load. A request
 * in flight on it either got its 202 or is retried on the other gateway; a record it wrote
 * without its message ends `NOT_ENQUEUED` (ENQUEUE_GRACE 5 s). Every accepted job ends, none
 * twice, in its device's acceptance order.
 */
// The scenario's light load; SVC_FAULT_LOAD=issue runs the (docs/operations.md).
const LOAD = scenarioLoad({
  devices: 6,
  commandLatencyMs: 300,
  clients: { pauseMs: 150 },
  jobsBeforeFault: 30,
});

test('when a gateway is killed under load, then every accepted job ends once, in its order, the other gateway taking the retries', async (t) => {
  const nats = await NatsServerProcess.start();
  const { fleet, auth } = await startScenarioFleet(LOAD);
  const env = testEnv(nats.url, { ENQUEUE_GRACE: '5', LOG_LEVEL: 'INFO' });
  const stack = await startProcessStack(env, { gateways: 2, dispatchers: 2, actors: 2 });
  t.after(async () => {
    await stack.stop();
    await fleet.stop();
    await nats.stop();
  });

  const clients = new ScenarioClients(stack.urls, fleet.devices, auth, LOAD.clients);
  await untilJobsBeforeFault(clients, LOAD, 'the kill');
  await stack.gateways[0]!.kill('SIGKILL');
  const killedAt = Date.now();
  const acceptedAtKill = clients.accepted.length;
  await clients.stopAfter(12_000);

  const ends = await waitForEnds(stack.urls, clients.accepted, auth);
  const result = await countOutcome(
    'SIGKILL of one of two gateways',
    stack.urls,
    fleet.devices,
    clients.accepted,
    ends,
    auth,
  );
  const firstAfter = clients.acceptedAt.find((at) => at > killedAt);
  result['accepted_before_kill'] = acceptedAtKill;
  result['refusals'] = clients.refusals;
  result['client_timeouts_or_refused_connections'] = clients.timeouts;
  result['first_202_after_kill_s'] =
    firstAfter === undefined ? null : (firstAfter - killedAt) / 1000;
  console.log(JSON.stringify(result));
  assertPromiseKept(result, { allowedCodes: ['NOT_ENQUEUED'] });
});
