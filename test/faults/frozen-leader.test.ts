import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { startFleet } from '@svc/test/support';
import { NatsCluster, http, startInProcessStack, waitHealthy, waitUntil } from '../harness/mod.js';

/**
 * Fault scenario of issue 23 (finding 1 and 5), run by `npm run test:faults`, not by `npm test`:
 * a 3-node cluster, R3 streams; clients send distinct jobs with an idempotency key each, give up
 * after 10 s and retry with the same key until they get a 202; the node leading SVC_JOBS is
 * frozen (SIGSTOP) for FREEZE_SECONDS, then resumed. Every 202 must name a job that exists and
 * ends, no command may run twice, no job may fail INTERNAL. Prints the scenario's numbers.
 */
const FREEZE_MS = Number(process.env['SVC_FAULT_FREEZE_SECONDS'] ?? '20') * 1000;
const DEVICES = 5;

test('when the node leading SVC_JOBS is frozen and resumed under load, then every 202 names a job that ends, none runs twice', async (t) => {
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
  let frozen: number | null = null;
  t.after(async () => {
    if (frozen !== null) process.kill(frozen, 'SIGCONT');
    await stack.stop();
    await fleet.stop();
    await cluster.stop();
  });
  await waitHealthy(stack.url, 60_000);
  const d0 = fleet.devices[0]!;
  const auth = { basic: { username: d0.username, password: d0.password } };

  // Per device, the jobs in the order their 202 arrived (each device has one client loop).
  const accepted: { jobId: string; device: number; command: string }[] = [];
  let refusals = 0;
  let timeouts = 0;
  let stopAt = Number.POSITIVE_INFINITY;
  let frozenAt = 0;
  let firstAfterFreeze: number | null = null;
  let n = 0;
  const client = async (device: number) => {
    const d = fleet.devices[device]!;
    while (Date.now() < stopAt) {
      const command = `show interface GigabitEthernet0/${n++}`;
      const key = randomUUID();
      for (;;) {
        const a = await http('POST', `${stack.url}/v2/send-command`, {
          ...auth,
          timeoutMs: 10_000,
          headers: { 'x-idempotency-key': key },
          body: { host: d.host, port: d.port, commands: [command] },
        }).catch(() => null);
        if (a?.status === 202) {
          accepted.push({ jobId: a.json.job_id as string, device, command });
          if (frozenAt && firstAfterFreeze === null) firstAfterFreeze = Date.now() - frozenAt;
          break;
        }
        if (a === null) timeouts++;
        else refusals++;
        await new Promise((r) => setTimeout(r, 250));
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const clients = Array.from({ length: DEVICES }, (_, i) => client(i));
  await waitUntil(() => accepted.length >= 20, '20 accepted jobs before the freeze', {
    timeoutMs: 120_000,
  });

  const nc = await connect({ servers: cluster.url.split(',') });
  const leader = (await (await jetstreamManager(nc)).streams.info('SVC_JOBS')).cluster?.leader;
  await nc.close();
  const victim = cluster.nodes[Math.max(0, Number(String(leader).slice(1)) - 1)]!;
  frozen = victim.pid!;
  process.kill(frozen, 'SIGSTOP');
  frozenAt = Date.now();
  await new Promise((r) => setTimeout(r, FREEZE_MS));
  process.kill(frozen, 'SIGCONT');
  frozen = null;
  const acceptedBeforeResume = accepted.length;
  stopAt = Date.now() + 10_000;
  await Promise.all(clients);

  // Every accepted job ends (reads retried through 503s; 404 counts as lost).
  const ends = new Map<string, { status: string; code: string | null }>();
  const deadline = Date.now() + 180_000;
  while (ends.size < accepted.length && Date.now() < deadline) {
    for (const a of accepted) {
      if (ends.has(a.jobId)) continue;
      const r = await http('GET', `${stack.url}/v2/send-command/${a.jobId}`, auth).catch(
        () => null,
      );
      if (r?.status === 404) ends.set(a.jobId, { status: 'lost', code: null });
      const s = r?.json?.status as string | undefined;
      if (s === 'finished' || s === 'failed' || s === 'cancelled') {
        ends.set(a.jobId, { status: s, code: (r!.json.error_code as string | null) ?? null });
      }
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  const count = (f: (e: { status: string; code: string | null }) => boolean) =>
    [...ends.values()].filter(f).length;
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
    duplicated += [...runs.values()].filter((v) => v > 1).length;
    const position = new Map(ran.map((c, k) => [c, k]));
    const order = accepted.filter((a) => a.device === i && position.has(a.command));
    for (let a = 0; a < order.length; a++) {
      for (let b = a + 1; b < order.length; b++) {
        if (position.get(order[a]!.command)! > position.get(order[b]!.command)!) inversions++;
      }
    }
  }
  // Where the jobs that never ended are (status and host), to tell where they stopped.
  const strandedAt: Record<string, number> = {};
  for (const a of accepted) {
    if (ends.has(a.jobId)) continue;
    const r = await http('GET', `${stack.url}/v2/send-command/${a.jobId}`, auth).catch(() => null);
    const where = `${String(r?.status)}:${String(r?.json?.status)}`;
    strandedAt[where] = (strandedAt[where] ?? 0) + 1;
  }
  const result = {
    scenario: `SIGSTOP of the SVC_JOBS leader for ${FREEZE_MS / 1000} s`,
    accepted: accepted.length,
    accepted_during_freeze: acceptedBeforeResume,
    finished: count((e) => e.status === 'finished'),
    failed_by_code: byCode,
    lost: count((e) => e.status === 'lost'),
    stranded: accepted.length - ends.size,
    stranded_at: strandedAt,
    duplicated,
    order_inversions: inversions,
    refusals_503: refusals,
    client_timeouts: timeouts,
    first_202_after_freeze_s: firstAfterFreeze === null ? null : firstAfterFreeze / 1000,
  };
  console.log(JSON.stringify(result));
  assert.equal(result.lost, 0, 'a 202 for a job that does not exist');
  assert.equal(result.stranded, 0, 'a 202 for a job that never ends');
  assert.equal(result.duplicated, 0, 'a command ran twice');
  assert.equal(byCode['INTERNAL'] ?? 0, 0, 'INTERNAL failures');
});
