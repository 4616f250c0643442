// Issue 23: a device's jobs keep their acceptance order when a drain hands back some of them and
// not the later ones (`frozen-leader` with the actor host's node frozen: 151 and 214 pairs out of
// order). The drain fenced the device's earlier job and sent its copy round through the
// dispatcher; the host, resumed, still held the device's later job, placed on it directly, and
// ran it first. Here the partial drain is made by hand, with the drain's own two steps (fence,
// hand back) on one job of three queued behind a job the device holds.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Consumers, DefaultTopology, Streams, decodeJson, type JobEnvelope } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  captureLogs,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  waitUntil,
  type InProcessStack,
} from '../harness/mod.js';

let nats: NatsServerProcess;
let stack: InProcessStack;
let nc: NatsConnection;
let jsm: JetStreamManager;
let jobs: Jobs;
let device: SimulatedDevice;
const logs = captureLogs();

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url, {
    env: { JOB_DEDUP_ENABLED: 'false', RATE_LIMIT_DEVICE_PER_MINUTE: '0' },
    // The device runs on one; the other is a live host for its earlier job to start on.
    actors: 2,
    logSink: logs.sink,
  });
  await waitHealthy(stack.url);
  nc = await connectNats(nats.url, 'actors-device-order-test');
  jsm = await jetstreamManager(nc);
  jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology));
  device = await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' });
});

after(async () => {
  await nc?.close();
  await stack?.stop();
  await device?.stop();
  await nats?.stop();
});

const auth = () => ({ basic: { username: device.username, password: device.password } });

async function submit(command: string): Promise<string> {
  const answer = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth(),
    body: { host: device.host, port: device.port, platform: 'cisco_ios', commands: [command] },
  });
  assert.equal(answer.status, 202, answer.text);
  return answer.json.job_id as string;
}

async function cancel(jobId: string): Promise<void> {
  const answer = await http('DELETE', `${stack.url}/v2/send-command/${jobId}`, auth());
  assert.equal(answer.status, 204, answer.text);
}

/** Jobs delivered to the host and not acknowledged (its mailbox, the running job included). */
async function heldBy(host: string): Promise<number> {
  return (await jsm.consumers.info(Streams.actor, Consumers.actor(host))).num_ack_pending;
}

/** The copy of `jobId` waiting on the host's subject, with the headers it was placed with. */
async function placedCopy(jobId: string): Promise<JobEnvelope> {
  const info = await jsm.streams.info(Streams.actor);
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(Streams.actor, { seq }).catch(() => null);
    if (!m) continue;
    const envelope = decodeJson<JobEnvelope>(m.data);
    if (envelope.job_id === jobId) return envelope;
  }
  throw new Error(`no placed copy of ${jobId}`);
}

/**
 * A job the device holds (its command never answered), then the device's jobs `first` and
 * `second` placed behind it on the same host; `first` fenced as a drain fences it. Returns the
 * held job and the host.
 */
async function behindAHeldJob(
  first: string,
  second: string,
): Promise<{ held: string; host: string; firstId: string; secondId: string }> {
  await device.setFaults({ hang: 'show clock' });
  const heldBefore = () => device.stats.commands.filter((c) => c.command === 'show clock').length;
  const seen = heldBefore();
  const held = await submit('show clock');
  await waitUntil(() => heldBefore() > seen, 'the held job to reach the device');
  const host = (await jobs.get(held))!.record.actor_host!;
  const firstId = await submit(first);
  const secondId = await submit(second);
  await waitUntil(async () => (await heldBy(host)) === 3, 'both jobs placed on the host');
  // The drain's first step: the record names the next copy; this one may not start any more.
  const copy = await placedCopy(firstId);
  const stored = (await jobs.get(firstId))!;
  const fenced = await jobs.fence(copy, copy.placement + 1, stored);
  assert.equal(fenced?.placement, copy.placement + 1);
  return { held, host, firstId, secondId };
}

test("when a drain hands back a device's job and not the next one, then the next one still runs after it", async () => {
  const { held, host, firstId, secondId } = await behindAHeldJob(
    'show version',
    'show ip interface brief',
  );
  // The drain's second step: the copy goes round through the dispatcher, back to this host,
  // behind the device's later job.
  await jobs.handBack(await placedCopy(firstId), 1);
  await waitUntil(async () => (await heldBy(host)) === 4, 'the copy placed behind the later job');
  await cancel(held);

  for (const id of [firstId, secondId]) {
    const ended = await waitForJob(stack.url, id, auth());
    assert.equal(ended.json.status, 'finished', ended.text);
  }
  const order = device.stats.commands
    .map((c) => c.command)
    .filter((c) => c === 'show version' || c === 'show ip interface brief');
  assert.deepEqual(order, ['show version', 'show ip interface brief']);
});

test("when a device's earlier job runs on another live host, then its next job starts only once that one has ended", async () => {
  const { held, host, firstId, secondId } = await behindAHeldJob(
    'show running-config',
    'show version',
  );
  // The fenced job's next copy started on the other host, which beats.
  const other = stack.actors.map((a) => a.hostId).find((id) => id !== host)!;
  const copy = await placedCopy(firstId);
  const elsewhere = await jobs.start({ ...copy, placement: copy.placement + 1 }, other);
  assert.ok(elsewhere, 'the copy started on the other host');
  await cancel(held);

  await waitUntil(
    () =>
      logs.lines.some(
        (l) => l.includes(secondId) && l.includes("waits for the device's earlier job to end"),
      ),
    'the later job to wait for the earlier one',
  );
  const waiting = (await jobs.get(secondId))!.record;
  assert.equal(waiting.status, 'queued', 'the later job has not started');

  // The other host's job ends (cancelled here): the later job goes on.
  await cancel(firstId);
  const ended = await waitForJob(stack.url, secondId, auth());
  assert.equal(ended.json.status, 'finished', ended.text);
  const first = (await jobs.get(firstId))!.record;
  const second = (await jobs.get(secondId))!.record;
  assert.ok(
    Date.parse(second.started_at!) >= Date.parse(first.ended_at!),
    `${JSON.stringify(second)} started before ${JSON.stringify(first)} ended`,
  );
});
