import { test } from 'node:test';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Consumers, Streams } from '@svc/proto';
import { startFleet } from '@svc/test/support';
import {
  NatsCluster,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  waitUntil,
} from '../harness/mod.js';

/**
 * Issue 23, the queue depth of 1 left by `nats-node-killed`: the acknowledgement of an ended
 * job sent while the node leading the actor host's consumer is gone (frozen, then killed) and
 * no other node leads it yet. A plain ack is fire-and-forget: it is lost with that node, and
 * the job's message stays pending on the consumer for its ack wait (6 h), counted in the
 * queue depth. The services all use one node (n1), so only the acknowledgement depends on the
 * victim: every stream leader is moved off it first, the consumer's leader onto it.
 */
test('when the node leading an actor host consumer dies as a job ends, then its acknowledgement still lands and the queue depth returns to 0', async (t) => {
  const cluster = await NatsCluster.start(3);
  const fleet = await startFleet({ count: 1, enable: 'svc-demo' });
  const stack = await startInProcessStack(cluster.nodes[0]!.url, {
    actors: 1,
    env: { NATS_REPLICAS: '3', WORKER_STALE_THRESHOLD: '600', DISPATCH_HOST_LIVENESS: '600' },
  });
  let nc: NatsConnection | null = null;
  t.after(async () => {
    await nc?.close();
    await stack.stop();
    await fleet.stop();
    await cluster.stop();
  });
  await waitHealthy(stack.url, 60_000);
  const device = fleet.devices[0]!;
  const auth = { basic: { username: device.username, password: device.password } };
  const submit = async (command: string) => {
    const r = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: { host: device.host, port: device.port, commands: [command] },
    });
    if (r.status !== 202) throw new Error(`submission answered ${r.status}`);
    return r.json.job_id as string;
  };
  // A first job creates the host's consumer and a warm session.
  await waitForJob(stack.url, await submit('show version'), auth, 60_000);

  nc = await connect({ servers: cluster.nodes[1]!.url });
  const jsm = await jetstreamManager(nc);
  const consumer = Consumers.actor(stack.actors[0]!.hostId);
  const consumerLeader = async () =>
    (await jsm.consumers.info(Streams.actor, consumer).catch(() => null))?.cluster?.leader;
  // The consumer led by n2 or n3 (not the services' node), every stream led elsewhere.
  const victim = await waitUntil(
    async () => {
      const leader = await consumerLeader();
      if (leader === 'n2' || leader === 'n3') return leader;
      await stepDown(nc!, `$JS.API.CONSUMER.LEADER.STEPDOWN.${Streams.actor}.${consumer}`);
      return null;
    },
    'the actor consumer led by n2 or n3',
    { everyMs: 500 },
  );
  await moveStreamLeadersOff(nc, jsm, victim);
  const node = cluster.nodes[Number(victim.slice(1)) - 1]!;

  await device.setFaults({ commandLatencyMs: 1500 });
  const command = 'show interface GigabitEthernet0/1';
  const jobId = await submit(command);
  await waitUntil(
    () => device.stats.commands.some((c) => c.command === command),
    'the job command on the device',
  );
  // Frozen before the device answers: the ack goes to the frozen leader (no other node leads
  // the consumer before an election, seconds later); killed, its buffered input is gone.
  process.kill(node.pid!, 'SIGSTOP');
  await waitForJob(stack.url, jobId, auth, 60_000);
  process.kill(node.pid!, 'SIGKILL');
  await node.stop();
  await nc.close();
  nc = await connect({ servers: cluster.nodes[0]!.url });
  const index = cluster.nodes.indexOf(node);
  await cluster.restart(index);

  await waitUntil(
    async () => {
      const r = await http('GET', `${stack.url}/v2/contexts`, auth).catch(() => null);
      return r?.status === 200 && r.json.contexts[0].queue_depth === 0;
    },
    'a queue depth of 0 once the job ended',
    { timeoutMs: 90_000, everyMs: 500 },
  );
});

/** A leader stepdown request; a failed one (no leader at the moment) is tried again by the caller. */
async function stepDown(nc: NatsConnection, subject: string): Promise<void> {
  await nc.request(subject, '', { timeout: 5000 }).catch(() => undefined);
}

async function moveStreamLeadersOff(
  nc: NatsConnection,
  jsm: JetStreamManager,
  victim: string,
): Promise<void> {
  const names: string[] = [];
  for await (const s of jsm.streams.list()) names.push(s.config.name);
  for (const name of names) {
    await waitUntil(
      async () => {
        const leader = (await jsm.streams.info(name).catch(() => null))?.cluster?.leader;
        if (leader !== undefined && leader !== victim) return true;
        await stepDown(nc, `$JS.API.STREAM.LEADER.STEPDOWN.${name}`);
        return false;
      },
      `stream ${name} led by a node other than ${victim}`,
      { everyMs: 500 },
    );
  }
}
