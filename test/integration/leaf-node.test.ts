import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Kvm } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { findNatsServer } from '@svc/launcher';
import { loadDeviceActorConfig, startDeviceActorService } from '@svc/device-actor';
import { Buckets, Sealer, decodeJson, type JobRecord } from '@svc/proto';
import { connectNats } from '@svc/nats';
import {
  NatsServerProcess,
  TEST_ENCRYPTION_KEY,
  freePort,
  http,
  silentLogger,
  startInProcessStack,
  testEnv,
  waitForJob,
  waitUntil,
} from '../harness/mod.js';
import { startDevice, type SimulatedDevice } from '../support/mod.js';

// A remote site: the actor host inside an isolated segment reaches the central NATS only through
// a leaf node that it runs next to it. The leaf has no JetStream of its own, so JetStream (streams,
// consumers, KV) is served by the hub across the leaf connection, in one domain. On 2.9 both sides
// need `default_js_domain: {"$G": ""}`, or each adds a deny for $JS.API.>, $KV.> and $OBJ.> to the
// leaf connection (deploy/nats/leaf-hub.conf explains; docs/operations.md, "Remote sites").
const JS_OVER_LEAF = 'default_js_domain: { "$G": "" }';

const natsServer = findNatsServer(process.env);

async function waitForJetStreamOver(nc: NatsConnection, timeoutMs = 10_000): Promise<void> {
  await waitUntil(
    async () => {
      const jsm = await jetstreamManager(nc, { timeout: 1000 }).catch(() => null);
      return (await jsm?.getAccountInfo().catch(() => null)) ?? null;
    },
    'JetStream through the leaf node',
    { timeoutMs, everyMs: 100 },
  );
}

function submit(url: string, device: SimulatedDevice, context: string, command: string) {
  return http('POST', `${url}/v2/send-command`, {
    basic: { username: device.username, password: device.password },
    body: {
      host: device.host,
      port: device.port,
      platform: 'cisco_ios',
      enable: device.enable,
      context,
      commands: [command],
    },
  });
}

test(
  'when an actor host serves site-a behind a leaf node, then site-a jobs run only there and default jobs only on the hub',
  {
    skip: natsServer ? false : 'nats-server not found on PATH (set NATS_SERVER_BIN)',
    timeout: 90_000,
  },
  async (t) => {
    // node:test runs t.after hooks in registration order; tear down in reverse (services before
    // the servers they talk to).
    const cleanup: (() => Promise<unknown>)[] = [];
    t.after(async () => {
      for (const step of cleanup.reverse()) await step().catch(() => undefined);
    });
    const leafPort = await freePort();
    const hub = await NatsServerProcess.start({
      extraConfig: `${JS_OVER_LEAF}\nleafnodes { listen: "127.0.0.1:${leafPort}" }`,
    });
    cleanup.push(() => hub.stop());
    const leaf = await NatsServerProcess.start({
      jetstream: false,
      extraConfig: [
        // Replaces the default name: hub and leaf must differ.
        'server_name: "site-a-leaf"',
        JS_OVER_LEAF,
        `leafnodes { remotes: [ { urls: ["nats-leaf://127.0.0.1:${leafPort}"] } ] }`,
      ].join('\n'),
    });
    cleanup.push(() => leaf.stop());

    // Central services on the hub: gateway, dispatcher, reaper, an actor host for `default`.
    const contexts = { SVC_CONTEXTS: 'default,site-a' };
    const stack = await startInProcessStack(hub.url, { env: contexts });
    cleanup.push(() => stack.stop());

    // The site's actor host talks only to its leaf node.
    const siteNc = await connectNats(leaf.url, 'actor-site-a');
    cleanup.push(() => siteNc.close());
    await waitForJetStreamOver(siteNc);
    const siteActor = await startDeviceActorService(
      loadDeviceActorConfig(testEnv(leaf.url, { ...contexts, WORKER_CONTEXTS: 'site-a' })),
      {
        nc: siteNc,
        log: silentLogger('device-actor'),
        sealer: Sealer.fromSetting(TEST_ENCRYPTION_KEY),
      },
    );
    cleanup.push(() => siteActor.stop());
    const hubActor = stack.actors[0];
    assert.ok(hubActor);
    assert.notEqual(siteActor.hostId, hubActor.hostId);

    const siteDevice = await startDevice({ platform: 'cisco_ios', hostname: 'SITE-A-R1' });
    cleanup.push(() => siteDevice.stop());
    const hqDevice = await startDevice({ platform: 'cisco_ios', hostname: 'HQ-R1' });
    cleanup.push(() => hqDevice.stop());

    const kv = await new Kvm(stack.connections[0]!).open(Buckets.jobs);
    const record = async (jobId: string): Promise<JobRecord> => {
      const entry = await kv.get(jobId);
      assert.ok(entry, `no record for ${jobId}`);
      return decodeJson<JobRecord>(entry.value);
    };
    const auth = (d: SimulatedDevice) => ({
      basic: { username: d.username, password: d.password },
    });

    // Three jobs per context, submitted together, so that a wrong placement would show.
    const submitted: { context: string; device: SimulatedDevice; jobId: string }[] = [];
    for (let i = 0; i < 3; i++) {
      for (const [context, device] of [
        ['site-a', siteDevice],
        ['default', hqDevice],
      ] as const) {
        // Distinct commands: identical in-flight submissions would be deduplicated into one job.
        const answer = await submit(
          stack.url,
          device,
          context,
          `show interface GigabitEthernet0/${i}`,
        );
        assert.equal(answer.status, 202, answer.text);
        assert.equal((answer.json as { deduplicated?: boolean }).deduplicated, false);
        submitted.push({ context, device, jobId: (answer.json as { job_id: string }).job_id });
      }
    }
    const started = Date.now();
    for (const job of submitted) {
      const done = await waitForJob(stack.url, job.jobId, auth(job.device), 30_000);
      assert.equal(done.json.status, 'finished', `${job.context} job: ${done.text}`);
      const rec = await record(job.jobId);
      const expected: string = job.context === 'site-a' ? siteActor.hostId : hubActor.hostId;
      assert.equal(rec.actor_host, expected, `${job.context} job ran on ${rec.actor_host}`);
      assert.equal(rec.spec.context, job.context);
    }
    t.diagnostic(`6 jobs finished ${Date.now() - started} ms after the last submit`);
    // The devices saw exactly their own jobs: each ran its three interface commands once.
    for (const device of [siteDevice, hqDevice]) {
      const runs = device.stats.commands
        .map((c) => c.command)
        .filter((c) => c.startsWith('show interface '));
      assert.deepEqual(
        runs.sort(),
        [0, 1, 2].map((i) => `show interface GigabitEthernet0/${i}`),
      );
      assert.ok(device.stats.handshakes >= 1);
    }
  },
);
