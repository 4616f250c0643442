import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { startFleet } from '@svc/test/support';
import { NatsCluster, http, startInProcessStack, waitForJob, waitHealthy } from '../harness/mod.js';

test('when one node of a 3-node NATS cluster is killed mid-load, then no accepted job is lost', async (t) => {
  const cluster = await NatsCluster.start(3);
  const fleet = await startFleet({
    count: 5,
    platform: 'cisco_ios',
    enable: 'svc-demo',
    commandLatencyMs: 5,
  });
  const stack = await startInProcessStack(cluster.url, {
    // Heartbeats fail while the cluster elects new leaders (seconds): production-like staleness
    // thresholds, far above an election, keep live hosts from being taken for dead.
    env: {
      NATS_REPLICAS: '3',
      DISPATCH_LEASE: '3',
      WORKER_STALE_THRESHOLD: '30',
      DISPATCH_HOST_LIVENESS: '15',
    },
  });
  t.after(async () => {
    await stack.stop();
    await fleet.stop();
    await cluster.stop();
  });
  await waitHealthy(stack.url, 30_000);
  const auth = {
    basic: { username: fleet.devices[0]!.username, password: fleet.devices[0]!.password },
  };

  // Kill a node that does not lead the job stream; leaders of other streams, buckets and
  // consumers on it still move. Killing the job stream's own leader sometimes leaves its pull
  // consumer unanswered for minutes on nats-server 2.9.10 (see docs/operations.md).
  const nc = await connect({ servers: cluster.url.split(',') });
  const info = await (await jetstreamManager(nc)).streams.info('SVC_JOBS');
  await nc.close();
  const leader = info.cluster?.leader;
  const victim = Math.max(
    0,
    cluster.nodes.findIndex((_, i) => `n${i + 1}` !== leader),
  );

  const accepted: string[] = [];
  let rejected = 0;
  let i = 0;
  let stop = false;
  const load = (async () => {
    while (!stop) {
      const d = fleet.devices[i % fleet.devices.length]!;
      const a = await http('POST', `${stack.url}/v2/send-command`, {
        ...auth,
        body: { host: d.host, port: d.port, commands: [`show interface GigabitEthernet0/${i++}`] },
      }).catch(() => null);
      if (a?.status === 202) accepted.push(a.json.job_id as string);
      else rejected++; // 503 during the election: not accepted, the client retries
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  await new Promise((r) => setTimeout(r, 1500));
  await cluster.nodes[victim]!.kill();
  await new Promise((r) => setTimeout(r, 9000));
  stop = true;
  await load;
  assert.ok(accepted.length > 20, `only ${accepted.length} accepted`);
  for (const id of accepted) {
    const done = await waitForJob(stack.url, id, auth, 60_000);
    assert.equal(done.json.status, 'finished', done.text);
  }
  const ran = fleet.devices.flatMap((d) => d.stats.commands.map((c) => c.command));
  const unique = new Set(ran.filter((c) => c.startsWith('show interface')));
  assert.equal(
    unique.size,
    ran.filter((c) => c.startsWith('show interface')).length,
    'no job ran twice',
  );
  t.diagnostic(`accepted ${accepted.length}, rejected during the election ${rejected}`);
});
