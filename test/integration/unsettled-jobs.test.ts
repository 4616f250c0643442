// An actor host whose bookkeeping of a job failed past every retry (a store outage of its own)
// sends the job's message back and keeps the job's id, to fail the job at stop if it is still
// started there. When the job's shard moved meanwhile, the message goes to the shard's next
// owner:
// - a job that never started there is run by the next owner, and nothing is left for the host
//   to fail: it must forget the id, or it keeps one more for its whole life at every outage;
// - a job it ran, whose end it could not store, waits at the next owner for as long as the host
//   beats (a job its earlier owner started): the host, which knows the outcome is lost, must
//   fail it, as it does when the message comes back to itself, or the job stays `started` for
//   the host's whole life.
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Buckets, DefaultTopology } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsPublishFilter,
  NatsServerProcess,
  ShardOwners,
  captureLogs,
  cleanupForTest,
  hostNamed,
  http,
  keepsWhenJoined,
  shardOfDevice,
  startInProcessStack,
  startNamedActor,
  waitForJob,
  waitForJobLine,
  waitUntil,
  type LogCapture,
  type TestCleanup,
} from '../harness/mod.js';

const PASSWORD = 'svc-demo';
const STORE_RETRY_MS = 5000;

interface Lab {
  cleanup: TestCleanup;
  nats: NatsServerProcess;
  /** What the first host's writes go through: `cutOffRecords` drops its writes of job records. */
  filter: NatsPublishFilter;
  device: SimulatedDevice;
  url: string;
  auth: { basic: { username: string; password: string } };
  jobs: Jobs;
  owners: ShardOwners;
  shard: number;
  /** The device's shard's owner, which gives it to `host-b` when that one joins. */
  first: Awaited<ReturnType<typeof startNamedActor>>;
  firstId: string;
  logs: LogCapture;
}

async function firstHostOwningTheShard(t: TestContext): Promise<Lab> {
  const cleanup = cleanupForTest(t, { ignoreFailures: true });
  const nats = cleanup.stopping(await NatsServerProcess.start());
  const filter = cleanup.stopping(await NatsPublishFilter.start(nats.url));
  const device = cleanup.stopping(await startDevice({ platform: 'cisco_ios', enable: PASSWORD }));
  const stack = cleanup.stopping(await startInProcessStack(nats.url, { actors: 0 }));
  const nc = await connectNats(nats.url, 'test');
  cleanup.push(() => nc.close());
  const owners = await ShardOwners.open(nc);
  const jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology));
  const shard = shardOfDevice(device);
  const firstId = hostNamed('host-a', (h) => !keepsWhenJoined(h, shard));
  const logs = captureLogs();
  // Its state changes retry through the outage for 5 s instead of 60 s: what follows the last
  // retry is what these tests are about.
  const first = cleanup.stopping(
    await startNamedActor(filter.url, firstId, {}, logs.sink, STORE_RETRY_MS),
  );
  await owners.waitFor(shard, (o) => o.host === firstId && o.state === 'owned', 'shard owned');
  await waitUntil(() => owners.consumed(shard), 'the first host consuming it');
  const auth = { basic: { username: device.username, password: PASSWORD } };
  return {
    cleanup,
    nats,
    filter,
    device,
    url: stack.url,
    auth,
    jobs,
    owners,
    shard,
    first,
    firstId,
    logs,
  };
}

/** The first host's writes of job records are dropped from now on, until the test ends. */
function cutOffRecords(lab: Lab): void {
  lab.filter.drop((subject) => subject.startsWith(`$KV.${Buckets.jobs}.`));
  lab.cleanup.push(() => lab.filter.drop(null));
}

async function submit(lab: Lab): Promise<string> {
  const submitted = await http('POST', `${lab.url}/v2/send-command`, {
    ...lab.auth,
    body: { host: lab.device.host, port: lab.device.port, commands: ['show version'] },
  });
  assert.equal(submitted.status, 202, submitted.text);
  return submitted.json.job_id as string;
}

/** Resolves once the first host has given the job up (its bookkeeping failed past retries). */
async function bookkeepingFailed(lab: Lab, jobId: string): Promise<void> {
  await waitForJobLine(
    lab.logs,
    jobId,
    'job bookkeeping failed; will retry',
    "the first host's bookkeeping of the job to fail",
    { timeoutMs: 150_000 },
  );
}

// Each test waits out the first host's retries on its own stack: they run side by side.
describe('an actor host whose bookkeeping of a job failed', { concurrency: 2 }, () => {
  test("when a job whose start its host could not store is run by its shard's next owner, then the host no longer keeps it to fail", async (t) => {
    const lab = await firstHostOwningTheShard(t);
    cutOffRecords(lab);
    const jobId = await submit(lab);
    await waitUntil(
      async () => (await lab.owners.ackPending(lab.shard)) === 1,
      'the job delivered',
    );

    // The second host joins while the first retries the job's start: the shard's release waits
    // for it, and goes once the first host has given up and sent the message back.
    lab.cleanup.stopping(await startNamedActor(lab.nats.url, 'host-b'));
    const done = await waitForJob(lab.url, jobId, lab.auth, 150_000);
    assert.equal(done.json.status, 'finished', done.text);
    assert.equal((await lab.jobs.get(jobId))?.record.actor_host, 'host-b');
    assert.ok(
      lab.logs.records.some(
        (r) => r['job_id'] === jobId && r['message'] === 'job bookkeeping failed; will retry',
      ),
      "the first host's bookkeeping of the job failed",
    );

    await waitUntil(() => lab.first.unsettled() === 0, 'the first host to forget the job');
  });

  test("when a host that ran a job cannot store its end and the job's shard moves meanwhile, then the job is failed INTERNAL while that host lives, not left started", async (t) => {
    const lab = await firstHostOwningTheShard(t);
    // The job reaches the device and is held there: started on the record, its end not written.
    await lab.device.setFaults({ hold: '^show version$' });
    const jobId = await submit(lab);
    await waitUntil(
      () => lab.device.stats.commands.some((c) => c.command === 'show version'),
      'the job on the device',
    );
    assert.equal((await lab.jobs.get(jobId))?.record.status, 'started');
    cutOffRecords(lab);
    // The second host joins while the job runs: the shard is being given to it, and goes once
    // the first host's job is over (its end not stored, its message sent back).
    const logsB = captureLogs();
    lab.cleanup.stopping(await startNamedActor(lab.nats.url, 'host-b', {}, logsB.sink));
    await lab.owners.waitFor(
      lab.shard,
      (o) => o.state === 'releasing' && o.to === 'host-b',
      'the shard being given to the second host',
    );
    await lab.device.setFaults({});
    await bookkeepingFailed(lab, jobId);
    // The next owner has the job, and waits for the first host, which still beats.
    await waitForJobLine(
      logsB,
      jobId,
      'taken over while its earlier owner runs it; waits',
      'the second host to wait for the job',
    );
    lab.filter.drop(null);

    const done = await waitForJob(lab.url, jobId, lab.auth, 60_000);
    assert.equal(done.json.status, 'failed', done.text);
    assert.equal(done.json.error_code, 'INTERNAL', done.text);
    assert.match(done.json.error, /outcome of this job could not be stored/, done.text);
    assert.equal((await lab.jobs.get(jobId))?.record.actor_host, lab.firstId);
    await waitUntil(() => lab.first.unsettled() === 0, 'the first host to forget the job');
    // The next owner acknowledged the job's message: nothing of it is left in the shard.
    await waitUntil(
      async () => (await lab.owners.ackPending(lab.shard)) === 0 || null,
      'the job gone from its shard',
    );
  });
});
