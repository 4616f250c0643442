import { test } from 'node:test';
import {
  NatsServerProcess,
  ScenarioClients,
  assertPromiseKept,
  countOutcome,
  startProcessStack,
  testEnv,
  waitForEnds,
  waitUntil,
  scenarioLoad,
  startScenarioFleet,
  untilJobsBeforeFault,
} from '../harness/mod.js';

/**
 * Fault scenario of issue 23, run by `npm run test:faults`: every service as its own process
 * (2 dispatchers, 2 actor hosts, a gateway, a reaper), devices answering in 300 ms, one client
 * per device; the dispatcher leading the context is SIGKILLed under load and the standby takes
 * over after its lease (DISPATCH_LEASE 3 s). Every accepted job ends, none twice, in its device's
 * acceptance order.
 */
// The scenario's light load; SVC_FAULT_LOAD=issue runs the (docs/operations.md).
const LOAD = scenarioLoad({
  devices: 6,
  commandLatencyMs: 300,
  clients: { pauseMs: 150 },
  jobsBeforeFault: 30,
});

test('when the leading dispatcher is killed under load, then the standby places every job once, in its order', async (t) => {
  const nats = await NatsServerProcess.start();
  const { fleet, auth } = await startScenarioFleet(LOAD);
  const env = testEnv(nats.url, { DISPATCH_LEASE: '3', LOG_LEVEL: 'INFO' });
  const stack = await startProcessStack(env, { gateways: 1, dispatchers: 2, actors: 2 });
  t.after(async () => {
    await stack.stop();
    await fleet.stop();
    await nats.stop();
  });

  const clients = new ScenarioClients(stack.urls, fleet.devices, auth, LOAD.clients);
  await untilJobsBeforeFault(clients, LOAD, 'the kill');
  const leader = await waitUntil(
    () => stack.dispatchers.find((d) => d.output.some((l) => /leading context/.test(l))),
    'a dispatcher leading the context',
  );
  const standby = stack.dispatchers.find((d) => d !== leader)!;
  await leader.kill('SIGKILL');
  const killedAt = Date.now();
  const acceptedAtKill = clients.accepted.length;
  await clients.stopAfter(12_000);

  const ends = await waitForEnds(stack.urls, clients.accepted, auth);
  const result = await countOutcome(
    'SIGKILL of the leading dispatcher',
    stack.urls,
    fleet.devices,
    clients.accepted,
    ends,
    auth,
  );
  const tookOver = standby.output.find((l) => /leading context/.test(l));
  result['accepted_before_kill'] = acceptedAtKill;
  const tookOverAt = tookOver
    ? Date.parse((JSON.parse(tookOver) as { timestamp: string }).timestamp)
    : NaN;
  result['standby_took_over_s'] = Number.isNaN(tookOverAt) ? null : (tookOverAt - killedAt) / 1000;
  console.log(JSON.stringify(result));
  assertPromiseKept(result);
});
