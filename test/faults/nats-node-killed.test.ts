import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { startFleet } from '@svc/test/support';
import {
  NatsCluster,
  ScenarioClients,
  assertPromiseKept,
  countOutcome,
  http,
  startInProcessStack,
  waitForEnds,
  waitHealthy,
  waitUntil,
} from '../harness/mod.js';

/**
 * Fault scenario of issue 23 (finding 4), run by `npm run test:faults`: a 3-node cluster (R3),
 * all services in one process (2 actor hosts), one client per device with an idempotency key
 * per job; the node leading SVC_JOBS is SIGKILLed under load and restarted with its old data
 * 5 s later (a replica that may keep messages its leader removed meanwhile). Every accepted job
 * ends, none twice, in its device's acceptance order; once they all ended the queue depth the
 * gateway reports (from any node leading) is 0: no phantom queue.
 */
const DEVICES = 5;

test('when the node leading SVC_JOBS is SIGKILLed and restarted under load, then every accepted job ends once, in its order, and no phantom queue remains', async (t) => {
  const cluster = await NatsCluster.start(3);
  const fleet = await startFleet({ count: DEVICES, enable: 'svc-demo', commandLatencyMs: 50 });
  const stack = await startInProcessStack(cluster.url, {
    actors: 2,
    env: {
      NATS_REPLICAS: '3',
      DISPATCH_LEASE: '3',
      WORKER_STALE_THRESHOLD: '60',
      DISPATCH_HOST_LIVENESS: '15',
      ENQUEUE_GRACE: '10',
    },
  });
  t.after(async () => {
    await stack.stop();
    await fleet.stop();
    await cluster.stop();
  });
  await waitHealthy(stack.url, 60_000);
  const d0 = fleet.devices[0]!;
  const auth = { basic: { username: d0.username, password: d0.password } };
  const urls = [stack.url];
  const clients = new ScenarioClients(urls, fleet.devices, auth, { pauseMs: 100 });
  await waitUntil(() => clients.accepted.length >= 20, '20 accepted jobs before the kill', {
    timeoutMs: 120_000,
  });

  const nc = await connect({ servers: cluster.url.split(',') });
  const leader = (await (await jetstreamManager(nc)).streams.info('SVC_JOBS')).cluster?.leader;
  await nc.close();
  const index = Math.max(0, Number(String(leader).slice(1)) - 1);
  const node = cluster.nodes[index]!;
  process.kill(node.pid!, 'SIGKILL');
  const killedAt = Date.now();
  await node.stop(); // reaps the child process
  // Restarted once the two others serve without it (jobs accepted after the kill), so that its
  // replica comes back stale: the phantom queue of finding 4.
  await waitUntil(
    () => clients.acceptedAt.filter((at) => at > killedAt).length >= 10,
    '10 jobs accepted by the cluster without the killed node',
    { timeoutMs: 120_000 },
  );
  await cluster.restart(index);
  await clients.stopAfter(15_000);

  const ends = await waitForEnds(urls, clients.accepted, auth);
  const result = await countOutcome(
    'SIGKILL and restart of the SVC_JOBS leader',
    urls,
    fleet.devices,
    clients.accepted,
    ends,
    auth,
  );
  const firstAfter = clients.acceptedAt.find((at) => at > killedAt);
  result['refusals_503'] = clients.refusals;
  result['client_timeouts'] = clients.timeouts;
  result['first_202_after_kill_s'] =
    firstAfter === undefined ? null : (firstAfter - killedAt) / 1000;
  const contexts = await waitUntil(async () => {
    const r = await http('GET', `${stack.url}/v2/contexts`, auth).catch(() => null);
    return r?.status === 200 ? r : null;
  }, 'the contexts answered');
  result['queue_depth_after'] = contexts.json.contexts[0].queue_depth;
  console.log(JSON.stringify(result));
  assertPromiseKept(result, { allowedCodes: ['NOT_ENQUEUED'] });
  // Reported, not yet held: a depth of 1 in 1 run of 4 (docs/operations.md, "What remains").
  await t.test('no phantom queue once every job ended', { todo: 'issue 23' }, () => {
    assert.equal(result['queue_depth_after'], 0);
  });
});
