import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startFleet } from '@svc/test/support';
import { NatsServerProcess, ServiceProcess, http, testEnv, waitUntil } from '../harness/mod.js';

/**
 * Fault scenario of issue 23 (finding 3), run by `npm run test:faults`: services as separate
 * processes, two actor hosts, devices answering in 300 ms and sent a job every 150 ms each (so
 * every device has a queue on its host); one actor host is SIGKILLed. Timings are the
 * defaults scaled down by 15 (liveness 1.5 s, reaper after 8 s). Every accepted job must end,
 * only jobs that had started on the killed host may fail (`WORKER_LOST`), no command may run
 * twice and no device may run its jobs in another order than they were accepted.
 */
const DEVICES = 6;

test("when an actor host is killed under load, then every device's jobs still run in acceptance order, none twice", async (t) => {
  const nats = await NatsServerProcess.start();
  const fleet = await startFleet({ count: DEVICES, enable: 'svc-demo', commandLatencyMs: 300 });
  const env = testEnv(nats.url, {
    DISPATCH_HOST_LIVENESS: '1.5',
    WORKER_STALE_THRESHOLD: '8',
    LOG_LEVEL: 'INFO',
  });
  const procs: ServiceProcess[] = [];
  t.after(async () => {
    for (const p of procs.reverse()) await p.kill('SIGTERM');
    await fleet.stop();
    await nats.stop();
  });
  const victim = ServiceProcess.start('device-actor', env);
  const survivor = ServiceProcess.start('device-actor', env);
  procs.push(ServiceProcess.start('reaper', env), ServiceProcess.start('dispatcher', env));
  procs.push(victim, survivor);
  const gateway = ServiceProcess.start('gateway', env);
  procs.push(gateway);
  const url = await gateway.httpUrl();
  await victim.waitFor(/actor host started/);
  await survivor.waitFor(/actor host started/);
  const d0 = fleet.devices[0]!;
  const auth = { basic: { username: d0.username, password: d0.password } };

  const accepted: { jobId: string; device: number; command: string }[] = [];
  let stopAt = Number.POSITIVE_INFINITY;
  let n = 0;
  const client = async (device: number) => {
    const d = fleet.devices[device]!;
    while (Date.now() < stopAt) {
      const command = `show interface GigabitEthernet0/${n++}`;
      const key = randomUUID();
      for (;;) {
        const a = await http('POST', `${url}/v2/send-command`, {
          ...auth,
          timeoutMs: 10_000,
          headers: { 'x-idempotency-key': key },
          body: { host: d.host, port: d.port, commands: [command] },
        }).catch(() => null);
        if (a?.status === 202) {
          accepted.push({ jobId: a.json.job_id as string, device, command });
          break;
        }
        await new Promise((r) => setTimeout(r, 250));
      }
      await new Promise((r) => setTimeout(r, 150));
    }
  };
  const clients = Array.from({ length: DEVICES }, (_, i) => client(i));
  await waitUntil(() => accepted.length >= 30, '30 accepted jobs before the kill', {
    timeoutMs: 120_000,
  });
  await victim.kill('SIGKILL');
  const acceptedAtKill = accepted.length;
  // Past the reaper's threshold, so that the killed host's jobs are handed back under load.
  stopAt = Date.now() + 12_000;
  await Promise.all(clients);

  const ends = new Map<string, { status: string; code: string | null }>();
  const deadline = Date.now() + 180_000;
  while (ends.size < accepted.length && Date.now() < deadline) {
    for (const a of accepted) {
      if (ends.has(a.jobId)) continue;
      const r = await http('GET', `${url}/v2/send-command/${a.jobId}`, auth).catch(() => null);
      if (r?.status === 404) ends.set(a.jobId, { status: 'lost', code: null });
      const s = r?.json?.status as string | undefined;
      if (s === 'finished' || s === 'failed' || s === 'cancelled') {
        ends.set(a.jobId, { status: s, code: (r!.json.error_code as string | null) ?? null });
      }
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  const byCode: Record<string, number> = {};
  for (const e of ends.values()) if (e.code) byCode[e.code] = (byCode[e.code] ?? 0) + 1;
  let duplicated = 0;
  let inversions = 0;
  for (let i = 0; i < DEVICES; i++) {
    const ran = fleet.devices[i]!.stats.commands.map((c) => c.command);
    // Jobs' commands only: every new session types its own setup lines (enable, terminal …).
    const jobCommands = new Set(accepted.map((a) => a.command));
    const runs = new Map<string, number>();
    for (const c of ran) if (jobCommands.has(c)) runs.set(c, (runs.get(c) ?? 0) + 1);
    for (const [c, v] of runs) {
      if (v < 2) continue;
      duplicated++;
      const job = accepted.find((a) => a.command === c);
      const at = fleet.devices[i]!.stats.commands.filter((r) => r.command === c).map((r) => r.at);
      console.log(
        JSON.stringify({ twice: c, job: job?.jobId, end: ends.get(job?.jobId ?? ''), at }),
      );
    }
    const position = new Map(ran.map((c, k) => [c, k]));
    const order = accepted.filter((a) => a.device === i && position.has(a.command));
    for (let a = 0; a < order.length; a++) {
      for (let b = a + 1; b < order.length; b++) {
        if (position.get(order[a]!.command)! > position.get(order[b]!.command)!) inversions++;
      }
    }
  }
  const result = {
    scenario: 'SIGKILL of one of two actor hosts',
    accepted: accepted.length,
    accepted_before_kill: acceptedAtKill,
    finished: [...ends.values()].filter((e) => e.status === 'finished').length,
    failed_by_code: byCode,
    lost: [...ends.values()].filter((e) => e.status === 'lost').length,
    stranded: accepted.length - ends.size,
    duplicated,
    order_inversions: inversions,
  };
  console.log(JSON.stringify(result));
  assert.equal(result.lost, 0);
  assert.equal(result.stranded, 0);
  assert.equal(result.duplicated, 0);
  assert.deepEqual(
    Object.keys(byCode).filter((c) => c !== 'WORKER_LOST'),
    [],
    'only WORKER_LOST',
  );
  assert.ok((byCode['WORKER_LOST'] ?? 0) <= DEVICES, 'at most one started job per device');
  assert.equal(result.order_inversions, 0, 'a device ran its jobs out of acceptance order');
});
