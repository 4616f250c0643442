import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startDevice } from '@svc/test/support';
import { DefaultTopology } from '@svc/proto';
import { connectNats, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import {
  NatsServerProcess,
  ServiceProcess,
  http,
  testEnv,
  waitForJob,
  waitUntil,
  waitWorkers,
} from '../harness/mod.js';

const PASSWORD = 'svc-demo';

async function waitStatus(
  url: string,
  id: string,
  auth: object,
  status: string,
  timeoutMs = 15_000,
) {
  return waitUntil(
    async () => {
      const a = await http('GET', `${url}/v2/send-command/${id}`, auth);
      return a.json?.status === status && a;
    },
    `job ${id} to be ${status}`,
    { timeoutMs },
  );
}

/**
 * Reaper, dispatcher, one actor host and a gateway as processes; stopped (newest first) after the
 * test, then `cleanup`. Further processes pushed on `procs` are stopped too.
 */
async function startOneActorStack(
  t: { after(fn: () => Promise<void>): void },
  env: Record<string, string>,
  cleanup: () => Promise<void>,
) {
  const procs: ServiceProcess[] = [];
  t.after(async () => {
    for (const p of procs.reverse()) await p.kill('SIGTERM');
    await cleanup();
  });
  procs.push(ServiceProcess.start('reaper', env), ServiceProcess.start('dispatcher', env));
  const first = ServiceProcess.start('device-actor', env);
  const gateway = ServiceProcess.start('gateway', env);
  procs.push(first, gateway);
  const url = await gateway.httpUrl();
  await waitWorkers(url, 1);
  return { procs, first, gateway, url };
}

test('when an actor host is killed with SIGKILL mid-job, then that job fails WORKER_LOST and is never rerun, and its queued jobs finish on another host', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({
    platform: 'cisco_ios',
    enable: PASSWORD,
    commandLatencyMs: 0,
  });
  const env = testEnv(nats.url, {
    LOG_LEVEL: 'INFO',
    WORKER_STALE_THRESHOLD: '2',
    JOB_REAPER_INTERVAL: '0.5',
  });
  const { procs, first, gateway, url } = await startOneActorStack(t, env, async () => {
    await device.stop();
    await nats.stop();
  });
  const auth = { basic: { username: device.username, password: PASSWORD } };

  // The first job hangs on the device, so it is running when its host dies.
  await device.setFaults({ hang: '^show interface GigabitEthernet0/1$' });
  const submit = async (n: number) => {
    const a = await http('POST', `${url}/v2/send-command`, {
      ...auth,
      body: {
        host: device.host,
        port: device.port,
        commands: [`show interface GigabitEthernet0/${n}`],
        read_timeout: 60,
      },
    });
    assert.equal(a.status, 202, a.text);
    return a.json.job_id as string;
  };
  const running = await submit(1);
  await waitStatus(url, running, auth, 'started');
  const queued = [await submit(2), await submit(3)];

  const second = ServiceProcess.start('device-actor', env);
  procs.push(second);
  await waitWorkers(url, 2);
  await first.kill('SIGKILL');
  await device.setFaults({});

  const lost = await waitForJob(url, running, auth, 20_000);
  assert.equal(lost.json.status, 'failed');
  assert.equal(lost.json.error_code, 'WORKER_LOST');
  assert.equal(lost.json.error_retryable, false);
  // Failed by the reaper for its host's silence (WORKER_STALE_THRESHOLD), not by the job's own
  // 60 s read timeout nor anything else: the reason and the reaper's audit line say so.
  assert.match(String(lost.json.error), /stopped sending heartbeats/, lost.text);
  const orphaned = await waitUntil(
    () =>
      procs[0]!.output.find(
        (l) => l.includes('"event_type":"job.orphaned"') && l.includes(running),
      ),
    'the reaper to log the lost job as orphaned',
  );
  assert.match(orphaned, /"worker_name":"[^"]+"/);

  for (const id of queued) {
    const done = await waitForJob(url, id, auth, 20_000);
    assert.equal(done.json.status, 'finished', done.text);
  }
  // A later job on the same device runs after anything still due there: once it finished, a
  // second run of the lost job would have shown on the device.
  const later = await waitForJob(url, await submit(4), auth, 20_000);
  assert.equal(later.json.status, 'finished', later.text);
  const ran = device.stats.commands
    .map((c) => c.command)
    .filter((c) => c.startsWith('show interface'));
  assert.equal(ran.filter((c) => c.endsWith('/1')).length, 1, 'the lost job never ran again');
  assert.deepEqual(ran.slice(1), [
    'show interface GigabitEthernet0/2',
    'show interface GigabitEthernet0/3',
    'show interface GigabitEthernet0/4',
  ]);
  assert.ok(gateway.output.length > 0);
  const reaperLog = procs[0]!.output.join('\n');
  assert.match(reaperLog, /"event_type":"job.orphaned"/);
});

test('when the dispatcher and a gateway are killed with SIGKILL under load, then every accepted job ends and none runs twice', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({ platform: 'cisco_ios', enable: PASSWORD });
  const device2 = await startDevice({ platform: 'cisco_ios', enable: PASSWORD });
  const env = testEnv(nats.url, { LOG_LEVEL: 'INFO', DISPATCH_LEASE: '2' });
  const procs: ServiceProcess[] = [];
  t.after(async () => {
    for (const p of procs.reverse()) await p.kill('SIGTERM');
    await device.stop();
    await device2.stop();
    await nats.stop();
  });
  procs.push(ServiceProcess.start('reaper', env), ServiceProcess.start('device-actor', env));
  const dispatcher = ServiceProcess.start('dispatcher', env);
  const g1 = ServiceProcess.start('gateway', env);
  const g2 = ServiceProcess.start('gateway', env);
  procs.push(dispatcher, g1, g2);
  const urls = [await g1.httpUrl(), await g2.httpUrl()];
  await waitWorkers(urls[1]!, 1);
  const auth = { basic: { username: device.username, password: PASSWORD } };

  const accepted: { id: string; command: string; url: string }[] = [];
  let n = 0;
  let stop = false;
  const load = (async () => {
    while (!stop) {
      const i = n++;
      const url = urls[i % 2]!;
      const d = i % 3 === 0 ? device2 : device;
      const command = `show interface GigabitEthernet0/${i}`;
      const a = await http('POST', `${url}/v2/send-command`, {
        ...auth,
        body: { host: d.host, port: d.port, commands: [command] },
      }).catch(() => null); // a killed gateway refuses connections: not accepted
      // One request at a time: each answer paces the next.
      if (a?.status === 202) accepted.push({ id: a.json.job_id as string, command, url: urls[1]! });
    }
  })();
  // Each kill comes after a number of accepted jobs, not after a time: a slow machine only
  // makes the phases longer.
  const acceptedAtLeast = (count: number) =>
    waitUntil(() => accepted.length >= count, `${count} accepted jobs`, { timeoutMs: 60_000 });
  await acceptedAtLeast(10);
  await dispatcher.kill('SIGKILL');
  const dispatcher2 = ServiceProcess.start('dispatcher', env);
  procs.push(dispatcher2);
  await acceptedAtLeast(20);
  await g1.kill('SIGKILL');
  await acceptedAtLeast(30);
  stop = true;
  await load;
  assert.ok(accepted.length >= 30, `only ${accepted.length} jobs accepted`);

  for (const job of accepted) {
    const done = await waitForJob(job.url, job.id, auth, 40_000);
    assert.equal(done.json.status, 'finished', done.text);
  }
  const seen = [...device.stats.commands, ...device2.stats.commands].map((c) => c.command);
  for (const job of accepted) {
    assert.equal(
      seen.filter((c) => c === job.command).length,
      1,
      `${job.command} ran exactly once`,
    );
  }
});

test('when an actor host gets SIGTERM, then it finishes its running job, leaves its queued ones in their shard for the next owner, and exits cleanly', async (t) => {
  const nats = await NatsServerProcess.start();
  const device = await startDevice({
    platform: 'cisco_ios',
    enable: PASSWORD,
    commandLatencyMs: 1500,
  });
  const env = testEnv(nats.url, { LOG_LEVEL: 'INFO', SHUTDOWN_GRACE: '20' });
  const { procs, first, url } = await startOneActorStack(t, env, async () => {
    await device.stop();
    await nats.stop();
  });
  const auth = { basic: { username: device.username, password: PASSWORD } };
  const ids: string[] = [];
  for (const n of [1, 2, 3]) {
    const a = await http('POST', `${url}/v2/send-command`, {
      ...auth,
      body: {
        host: device.host,
        port: device.port,
        commands: [`show interface GigabitEthernet0/${n}`],
      },
    });
    assert.equal(a.status, 202, a.text);
    ids.push(a.json.job_id as string);
  }
  await waitStatus(url, ids[0]!, auth, 'started');
  procs.push(ServiceProcess.start('device-actor', env));
  await waitWorkers(url, 2);
  const exited = new Promise<number | null>((resolve) =>
    first.child.once('exit', (code) => resolve(code)),
  );
  first.child.kill('SIGTERM');
  for (const id of ids) {
    const done = await waitForJob(url, id, auth, 30_000);
    assert.equal(done.json.status, 'finished', done.text);
  }
  assert.equal(await exited, 0, 'the host exited cleanly');
  assert.match(first.output.join('\n'), /actor host stopped/);
  // The queued ones ran on the next owner of their shard, not on the stopping host.
  const nc = await connectNats(nats.url, 'test');
  t.after(() => nc.close());
  const jobs = await Jobs.open(nc, await ensureTopology(nc, DefaultTopology));
  const [running, ...queued] = await Promise.all(
    ids.map(async (id) => (await jobs.get(id))!.record.actor_host),
  );
  for (const host of queued) {
    assert.ok(host && host !== running, `a queued job ran on ${host}, beside ${running}`);
  }
  const ran = device.stats.commands
    .map((c) => c.command)
    .filter((c) => c.startsWith('show interface'));
  assert.deepEqual(ran, [
    'show interface GigabitEthernet0/1',
    'show interface GigabitEthernet0/2',
    'show interface GigabitEthernet0/3',
  ]);
});
