import { test } from 'node:test';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { startFleet } from '@svc/test/support';
import {
  NatsCluster,
  assertPromiseKept,
  countOutcome,
  http,
  scenarioLogSink,
  startInProcessStack,
  waitForEnds,
  waitHealthy,
  type AcceptedJob,
} from '../harness/mod.js';

/**
 * Finding 7 of issue 23, run by `npm run test:faults`: a planned restart of the node leading
 * SVC_JOBS under a steady load (one job every 50 ms), once with SIGTERM and once in lame-duck
 * mode (SIGUSR2, what `nats-server --signal ldm` sends). Prints the refusals (503) of each;
 * asserts that every accepted job ends, none twice, in its device's acceptance order.
 */
test('when the node leading SVC_JOBS is restarted with SIGTERM or in lame-duck mode under load, then the refusals are counted and every accepted job ends', async (t) => {
  const cluster = await NatsCluster.start(3);
  const fleet = await startFleet({ count: 3, enable: 'svc-demo', commandLatencyMs: 5 });
  const stack = await startInProcessStack(cluster.url, {
    logSink: scenarioLogSink('nats-restart'),
    env: {
      NATS_REPLICAS: '3',
      DISPATCH_LEASE: '3',
      WORKER_STALE_THRESHOLD: '60',
      DISPATCH_HOST_LIVENESS: '15',
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
  const accepted: AcceptedJob[] = [];
  let n = 0;
  /** Sends one job every 50 ms while `during` runs; returns the refusals. */
  const loadWhile = async (during: Promise<void>): Promise<number> => {
    let done = false;
    void during.then(() => (done = true));
    let refused = 0;
    while (!done) {
      const device = n % fleet.devices.length;
      const d = fleet.devices[device]!;
      const command = `show interface Gi0/${n++}`;
      const a = await http('POST', `${stack.url}/v2/send-command`, {
        ...auth,
        body: { host: d.host, port: d.port, commands: [command] },
      }).catch(() => null);
      if (a?.status === 202) accepted.push({ jobId: a.json.job_id as string, device, command });
      else refused++;
      await new Promise((r) => setTimeout(r, 50));
    }
    return refused;
  };
  const jobsLeader = async (): Promise<number> => {
    const nc = await connect({ servers: cluster.url.split(',') });
    try {
      const leader = (await (await jetstreamManager(nc)).streams.info('SVC_JOBS')).cluster?.leader;
      return Math.max(0, Number(String(leader).slice(1)) - 1);
    } finally {
      await nc.close();
    }
  };
  const restart = async (signal: NodeJS.Signals) => {
    const index = await jobsLeader();
    const node = cluster.nodes[index]!;
    const exited = new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        try {
          process.kill(node.pid!, 0);
        } catch {
          clearInterval(poll);
          resolve();
        }
      }, 100);
    });
    process.kill(node.pid!, signal);
    await exited;
    await node.stop(); // reaps the child process
    await cluster.restart(index);
    // Back in the cluster and current again before the next fault.
    await waitHealthy(stack.url, 60_000);
    await new Promise((r) => setTimeout(r, 5000));
  };
  const warm = new Promise<void>((r) => setTimeout(r, 3000));
  await loadWhile(warm);
  const sigterm = await loadWhile(restart('SIGTERM'));
  const lameDuck = await loadWhile(restart('SIGUSR2'));
  console.log(
    JSON.stringify({
      scenario: 'restart of the SVC_JOBS leader',
      sigterm_refusals: sigterm,
      lame_duck_refusals: lameDuck,
      accepted: accepted.length,
    }),
  );

  const urls = [stack.url];
  const ends = await waitForEnds(urls, accepted, auth, 120_000);
  const result = await countOutcome(
    'restart of the SVC_JOBS leader',
    urls,
    fleet.devices,
    accepted,
    ends,
    auth,
  );
  console.log(JSON.stringify(result));
  // Refused requests were never accepted: nothing to retry with a key here.
  assertPromiseKept(result, { allowedCodes: ['NOT_ENQUEUED'] });
});
