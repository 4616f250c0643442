// A device's jobs run one at a time, in acceptance order, once each, when its shard changes owner
// (docs/shards.md). Re-targeted from the relay's mechanics (issue 23: a drain handed back some of
// a device's jobs and not the next one; a device's job waited for its earlier job's copy, started
// on another live host, through `Svc-After`). Here the same orders under the shard's two ways of
// changing owner while the device holds a job and has later ones waiting behind it:
// - a release (a host joins and the shard moves to it): the owner gives up the waiting jobs, lets
//   the running one end, then marks the shard released; the new owner runs the rest;
// - a takeover from an owner that is stopping and still runs the device's job (its heartbeat
//   says draining): the new owner takes the shard at once, and the device's next job waits for
//   the one its earlier owner runs;
// - two takeovers in a row before a job the first one fenced has started: the last owner fences
//   it from the first takeover's epoch and runs it once.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { NatsConnection } from '@nats-io/transport-node';
import { DefaultTopology, JOB_SHARDS } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  ShardOwners,
  captureLogs,
  cleanupForTest,
  deviceStackForTest,
  hostNamed,
  http,
  keepsWhenJoined,
  shardOfDevice,
  startInProcessStack,
  startNamedActor,
  submitCommand,
  submitHeldJob,
  waitForJob,
  waitHealthy,
  waitForJobLine,
  waitUntil,
  type TestDeviceStack,
} from '../harness/mod.js';

const ENV = { JOB_DEDUP_ENABLED: 'false', SHUTDOWN_GRACE: '60' };
const command = (n: number) => `show interface GigabitEthernet0/${n}`;
/** The device's job that holds it (answered once the test clears the fault). */
const HELD = command(1);

interface Lab extends TestDeviceStack {
  nc: NatsConnection;
  jobs: Jobs;
  owners: ShardOwners;
  shard: number;
  submit(command: string): Promise<string>;
  /** Stopped before the stack (actor hosts started by the test). */
  later: { stop(): Promise<void> }[];
}

/** A NATS server, a device, and a stack whose only actor host is named by `ownerName`. */
async function lab(
  t: TestContext,
  ownerName: (shard: number) => string,
): Promise<Lab & { owner: string }> {
  const ownerOf = (device: SimulatedDevice) => ownerName(shardOfDevice(device));
  const l = await deviceStackForTest(
    t,
    { platform: 'cisco_ios', enable: 'svc-demo' },
    (device) => ({ env: { ...ENV, ACTOR_HOST_ID: ownerOf(device) }, actors: 1 }),
  );
  const later: { stop(): Promise<void> }[] = [];
  const nc = await connectNats(l.nats.url, 'actors-device-order-test');
  l.cleanup.push(() => nc.close());
  l.cleanup.push(async () => {
    for (const s of later.reverse()) await s.stop().catch(() => undefined);
  });
  return {
    ...l,
    nc,
    jobs: await Jobs.open(nc, await ensureTopology(nc, DefaultTopology)),
    owners: await ShardOwners.open(nc),
    shard: shardOfDevice(l.device),
    owner: ownerOf(l.device),
    later,
    submit: (command) => submitCommand(l.stack.url, l.auth, l.device, command),
  };
}

/**
 * The device holds `HELD` (its answer waits for the fault to be cleared); then `later`
 * are accepted and delivered to the shard's owner behind it. Returns the held job's id and
 * the later ones'.
 */
async function behindAHeldJob(l: Lab, later: string[]): Promise<{ held: string; ids: string[] }> {
  const held = await submitHeldJob(
    l.device,
    { hold: `^${HELD}$` },
    HELD,
    (command) => l.submit(command),
    'the held job to reach the device',
  );
  const ids: string[] = [];
  for (const command of later) ids.push(await l.submit(command));
  await waitUntil(
    async () => (await l.owners.ackPending(l.shard)) === 1 + later.length,
    "the device's jobs delivered to its shard's owner",
  );
  return { held, ids };
}

/** The commands the device ran, of those given, in the order it received them. */
function ran(device: SimulatedDevice, commands: string[]): string[] {
  return device.stats.commands.map((c) => c.command).filter((c) => commands.includes(c));
}

test("when a host joins and a device's shard moves to it while the device holds a job, then the device's waiting jobs and one accepted during the release run after it, in order, once each, on the new owner", async (t) => {
  // An owner that gives the device's shard up when a second host joins (it keeps its best half).
  const l = await lab(t, (shard) => hostNamed('host-a', (h) => !keepsWhenJoined(h, shard)));
  const before = await l.owners.waitFor(
    l.shard,
    (o) => o.host === l.owner && o.state === 'owned',
    "the device's shard owned by the only host",
  );
  const later = [command(2), command(3)];
  const { held, ids } = await behindAHeldJob(l, later);

  const joined = 'host-b';
  l.later.push(await startNamedActor(l.nats.url, joined, ENV));
  await l.owners.waitFor(
    l.shard,
    (o) => o.state === 'releasing' && o.host === l.owner && o.to === joined,
    'the release of the shard asked of its owner',
  );
  // Accepted while the shard is being released: behind the others in the shard's stream.
  const accepted = await l.submit(command(4));
  // The owner gives the shard up only once the device's running job has ended.
  assert.equal((await l.owners.of(l.shard))?.state, 'releasing');
  assert.equal((await l.jobs.get(ids[0]!))!.record.status, 'queued');

  await l.device.setFaults({});
  const all = [held, ...ids, accepted];
  for (const id of all) {
    const ended = await waitForJob(l.stack.url, id, l.auth);
    assert.equal(ended.json.status, 'finished', ended.text);
  }
  const commands = [HELD, ...later, command(4)];
  assert.deepEqual(ran(l.device, commands), commands);
  const records = await Promise.all(all.map(async (id) => (await l.jobs.get(id))!.record));
  assert.equal(records[0]!.actor_host, l.owner, 'the held job ended on its owner');
  for (const r of records.slice(1)) assert.equal(r.actor_host, joined, JSON.stringify(r));
  for (let i = 1; i < records.length; i++) {
    assert.ok(
      Date.parse(records[i]!.started_at!) >= Date.parse(records[i - 1]!.ended_at!),
      `${records[i]!.job_id} started before ${records[i - 1]!.job_id} ended`,
    );
  }
  const after = await l.owners.of(l.shard);
  assert.deepEqual(
    { host: after?.host, epoch: after?.epoch, state: after?.state },
    { host: joined, epoch: before.epoch + 1, state: 'owned' },
  );
  // One session per device at a time (DESIGN invariant 3): the earlier owner's session to it
  // closed before the new owner opened one.
  assert.equal(l.device.stats.maxConcurrentSessions, 1);
});

test("when a device's shard is taken over from its stopping owner while that owner still runs the device's job, then the device's next job starts only once that job has ended", async (t) => {
  // An owner that keeps the device's shard when the second host joins: it is taken only when
  // the owner stops.
  const l = await lab(t, (shard) => hostNamed('host-a', (h) => keepsWhenJoined(h, shard)));
  const before = await l.owners.waitFor(
    l.shard,
    (o) => o.host === l.owner && o.state === 'owned',
    "the device's shard owned by its first host",
  );
  const logs = captureLogs();
  const next = 'host-b';
  l.later.push(await startNamedActor(l.nats.url, next, ENV, logs.sink));
  // The second host owns its share (the rebalance is over) before the device's jobs come.
  await waitUntil(async () => {
    for (let s = 0; s < JOB_SHARDS; s++) if ((await l.owners.of(s))?.host === next) return true;
    return false;
  }, 'the second host owning shards');
  const later = [command(2), command(3)];
  const { held, ids } = await behindAHeldJob(l, later);

  // The owner stops (SHUTDOWN_GRACE 60 s: it waits for its running job); its heartbeat says
  // draining, and the dispatcher gives its shards to the other host at once.
  const stopping = l.stack.actors[0]!.stop();
  const taken = await l.owners.waitFor(
    l.shard,
    (o) => o.host === next && o.state === 'owned',
    'the shard taken by the other host',
  );
  assert.equal(taken.epoch, before.epoch + 1);
  await waitForJobLine(
    logs,
    held,
    'taken over while its earlier owner runs it; waits',
    'the new owner waiting for the job its earlier owner runs',
  );
  assert.equal((await l.jobs.get(ids[0]!))!.record.status, 'queued', 'the next job waits');

  await l.device.setFaults({});
  for (const id of [held, ...ids]) {
    const ended = await waitForJob(l.stack.url, id, l.auth);
    assert.equal(ended.json.status, 'finished', ended.text);
  }
  await stopping;
  const commands = [HELD, ...later];
  assert.deepEqual(ran(l.device, commands), commands);
  const [first, second, third] = await Promise.all(
    [held, ...ids].map(async (id) => (await l.jobs.get(id))!.record),
  );
  assert.equal(first!.actor_host, l.owner);
  assert.equal(second!.actor_host, next);
  assert.equal(third!.actor_host, next);
  assert.ok(
    Date.parse(second!.started_at!) >= Date.parse(first!.ended_at!),
    `${JSON.stringify(second)} started before ${JSON.stringify(first)} ended`,
  );
  assert.ok(Date.parse(third!.started_at!) >= Date.parse(second!.ended_at!));
});

test('when a shard is taken over twice before a job the first takeover fenced has started, then the job runs once, on the last owner', async (t) => {
  // Each host has one session slot. The device's job waits on the first owner behind another
  // device's job, is fenced by the second owner (epoch 2) and waits there behind a third
  // device's job; the second owner stops too, and the third takes the shard at epoch 3.
  const env = { ...ENV, ACTOR_MAX_SESSIONS: '1' };
  const cleanup = cleanupForTest(t, { ignoreFailures: true });
  const nats = cleanup.stopping(await NatsServerProcess.start());
  const devices: SimulatedDevice[] = [];
  // Three devices; the third's shard apart from the first two's.
  while (
    devices.length < 3 ||
    shardOfDevice(devices[2]!) === shardOfDevice(devices[0]!) ||
    shardOfDevice(devices[2]!) === shardOfDevice(devices[1]!)
  ) {
    if (devices.length === 3) devices.pop();
    devices.push(
      cleanup.stopping(await startDevice({ platform: 'cisco_ios', enable: 'svc-demo' })),
    );
  }
  const [device, onFirst, onSecond] = devices as [
    SimulatedDevice,
    SimulatedDevice,
    SimulatedDevice,
  ];
  const [shard, firstShard, secondShard] = devices.map((d) => shardOfDevice(d)) as [
    number,
    number,
    number,
  ];
  // The first host keeps the device's and `onFirst`'s shards when the second joins, not
  // `onSecond`'s.
  const first = hostNamed(
    'host-a',
    (h) =>
      keepsWhenJoined(h, shard) &&
      keepsWhenJoined(h, firstShard) &&
      !keepsWhenJoined(h, secondShard),
  );
  const stack = cleanup.stopping(
    await startInProcessStack(nats.url, { env: { ...env, ACTOR_HOST_ID: first }, actors: 1 }),
  );
  await waitHealthy(stack.url);
  const nc = await connectNats(nats.url, 'actors-device-order-test');
  cleanup.push(() => nc.close());
  const owners = await ShardOwners.open(nc);
  const jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology));
  const auth = { basic: { username: device.username, password: device.password } };
  const submit = (d: SimulatedDevice, n: number) => submitCommand(stack.url, auth, d, command(n));
  const holding = async (d: SimulatedDevice) => {
    await d.setFaults({ hold: `^${HELD}$` });
    // Held for as long as the test needs (the default read timeout would end it).
    const a = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: { host: d.host, port: d.port, commands: [HELD], read_timeout: 300 },
    });
    assert.equal(a.status, 202, a.text);
    const id = a.json.job_id as string;
    await waitUntil(() => d.stats.commands.some((c) => c.command === HELD), 'a held job');
    return id;
  };
  await owners.waitFor(shard, (o) => o.host === first, 'the shard owned by the first host');
  await waitUntil(() => owners.consumed(shard), 'the first host consuming it');

  const second = cleanup.stopping(await startNamedActor(nats.url, 'host-b', env));
  await owners.waitFor(
    secondShard,
    (o) => o.host === 'host-b' && o.state === 'owned',
    'a shard moved',
  );
  await waitUntil(() => owners.consumed(secondShard), 'the second host consuming it');
  const heldOnFirst = await holding(onFirst);
  const heldOnSecond = await holding(onSecond);
  const job = await submit(device, 2);
  await waitUntil(
    async () => (await owners.ackPending(shard)) === (shard === firstShard ? 2 : 1),
    'the job delivered to the first host',
  );

  // The first host stops (waiting for its running job): the second takes its shards, fences
  // the job to its epoch, and waits for its own slot.
  const firstStopping = stack.actors[0]!.stop();
  const taken = await owners.waitFor(
    shard,
    (o) => o.host === 'host-b' && o.state === 'owned',
    'the first takeover',
  );
  await waitUntil(
    async () => (await jobs.get(job))?.record.placement === taken.epoch,
    'the job fenced by the second host',
  );
  // A third host, and the second stops too: the third takes the shard.
  cleanup.stopping(await startNamedActor(nats.url, 'host-c', env));
  const secondStopping = second.stop();
  const last = await owners.waitFor(
    shard,
    (o) => o.host === 'host-c' && o.state === 'owned',
    'the second takeover',
  );
  assert.equal(last.epoch, taken.epoch + 1);

  const done = await waitForJob(stack.url, job, auth);
  assert.equal(done.json.status, 'finished', done.text);
  const record = (await jobs.get(job))!.record;
  assert.equal(record.actor_host, 'host-c');
  assert.equal(record.placement, last.epoch);

  await onFirst.setFaults({});
  await onSecond.setFaults({});
  for (const id of [heldOnFirst, heldOnSecond]) {
    assert.equal((await waitForJob(stack.url, id, auth)).json.status, 'finished');
  }
  await firstStopping;
  await secondStopping;
  assert.equal(device.stats.commands.filter((c) => c.command === command(2)).length, 1);
});
