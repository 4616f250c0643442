// What the fault scenarios of issue 23 (test/faults, `npm run test:faults`) share: the client
// loops that send distinct jobs, the wait for every accepted job's end, and the counts each
// scenario prints and asserts (lost, stranded, run twice, order inversions per device).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Buckets, Streams } from '@svc/proto';
import { startFleet, type CommandRecord, type Fleet } from '@svc/test/support';
import { http } from './http-client.js';
import { ServiceProcess } from './stack.js';
import { waitUntil } from './wait.js';

/**
 * The load a scenario runs: its own light default, or with `SVC_FAULT_LOAD=issue` the load of
 * issue 23 (40 devices answering in 300 ms, a steady 20 jobs/s in total, the fault once 600
 * jobs were accepted, about 30 s in).
 */
export interface ScenarioLoad {
  devices: number;
  commandLatencyMs: number;
  clients: { pauseMs: number; everyMs?: number };
  /** Accepted jobs before the fault. */
  jobsBeforeFault: number;
}

export function scenarioLoad(light: ScenarioLoad): ScenarioLoad {
  if (process.env['SVC_FAULT_LOAD'] !== 'issue') return light;
  const devices = 40;
  const jobsPerSecond = 20;
  return {
    devices,
    commandLatencyMs: 300,
    clients: { pauseMs: 0, everyMs: (devices * 1000) / jobsPerSecond },
    jobsBeforeFault: jobsPerSecond * 30,
  };
}

/**
 * Where a scenario's in-process services write their log lines (DEBUG and up), for diagnosing a
 * failure seen once: with `SVC_FAULT_LOG_DIR` set, a file `<scenario>-<time>.log` there, named on
 * stderr; otherwise none (the scenarios run quiet).
 */
export function scenarioLogSink(scenario: string): WriteStream | undefined {
  const dir = process.env['SVC_FAULT_LOG_DIR'];
  if (dir === undefined || dir === '') return undefined;
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${scenario}-${new Date().toISOString().replace(/[:.]/g, '-')}.log`);
  process.stderr.write(`${scenario}: service logs in ${path}\n`);
  return createWriteStream(path);
}

/**
 * The scenario's simulated devices (`load.devices`, answering in `load.commandLatencyMs`) and
 * the credentials its clients send.
 */
export async function startScenarioFleet(
  load: ScenarioLoad,
): Promise<{ fleet: Fleet; auth: Auth }> {
  const fleet = await startFleet({
    count: load.devices,
    enable: 'svc-demo',
    commandLatencyMs: load.commandLatencyMs,
  });
  const d0 = fleet.devices[0]!;
  return { fleet, auth: { basic: { username: d0.username, password: d0.password } } };
}

/** Waits until the clients had `load.jobsBeforeFault` jobs accepted: then the fault (`what`). */
export async function untilJobsBeforeFault(
  clients: ScenarioClients,
  load: ScenarioLoad,
  what: string,
): Promise<void> {
  await waitUntil(
    () => clients.accepted.length >= load.jobsBeforeFault,
    `${load.jobsBeforeFault} accepted jobs before ${what}`,
    { timeoutMs: 120_000 },
  );
}

/** A job that got its 202: the device it was for and its one command (unique per scenario). */
export interface AcceptedJob {
  jobId: string;
  device: number;
  command: string;
}

export interface JobEnd {
  /** `lost`: the job has no record (404 on every gateway). */
  status: 'finished' | 'failed' | 'cancelled' | 'lost';
  code: string | null;
  /** The record's error text (failed or cancelled jobs). */
  error?: string | null;
}

type Auth = { basic: { username: string; password: string } };

/** A device of the fleet, as the client loops and the counts need it. */
export interface ScenarioDevice {
  host: string;
  port: number;
  stats: { commands: CommandRecord[] };
}

/**
 * One client per device: sends a job with its own idempotency key, retried with the same key
 * (on the next gateway, when there are several) until a 202, then the next job after `pauseMs`;
 * until `running()` says stop. Each device's jobs are accepted one after the other, so the order
 * of `accepted` is each device's acceptance order.
 */
export class ScenarioClients {
  readonly accepted: AcceptedJob[] = [];
  /** Answers other than 202, and requests that got no answer within the client's timeout. */
  refusals = 0;
  timeouts = 0;
  /** Epoch ms of each 202, in order. */
  readonly acceptedAt: number[] = [];
  #stopAt = Number.POSITIVE_INFINITY;
  #n = 0;
  readonly #loops: Promise<void>[];
  readonly #fleetSize: number;

  constructor(
    private readonly urls: readonly string[],
    devices: readonly ScenarioDevice[],
    private readonly auth: Auth,
    private readonly options: {
      /** After each 202, wait this long before the next job (ms). */
      pauseMs: number;
      /** Instead: one job every `everyMs` per device, start to start (a steady rate). */
      everyMs?: number;
      timeoutMs?: number;
    },
  ) {
    this.#fleetSize = devices.length;
    this.#loops = devices.map((d, i) => this.#client(d, i));
  }

  /** Stops sending new jobs after `ms`, and resolves once every loop has ended. */
  async stopAfter(ms: number): Promise<void> {
    this.#stopAt = Date.now() + ms;
    await Promise.all(this.#loops);
  }

  async #client(d: ScenarioDevice, device: number): Promise<void> {
    let gateway = device % this.urls.length;
    const every = this.options.everyMs;
    // Paced clients start spread over one period, so the total rate is steady from the start.
    let nextAt = Date.now() + (every === undefined ? 0 : (every * device) / this.#fleetSize);
    if (every !== undefined) await new Promise((r) => setTimeout(r, nextAt - Date.now()));
    while (Date.now() < this.#stopAt) {
      const command = `show interface GigabitEthernet0/${this.#n++}`;
      const key = randomUUID();
      for (;;) {
        const a = await http('POST', `${this.urls[gateway]}/v2/send-command`, {
          ...this.auth,
          timeoutMs: this.options.timeoutMs ?? 10_000,
          headers: { 'x-idempotency-key': key },
          body: { host: d.host, port: d.port, commands: [command] },
        }).catch(() => null);
        if (a?.status === 202) {
          this.accepted.push({ jobId: a.json.job_id as string, device, command });
          this.acceptedAt.push(Date.now());
          break;
        }
        if (a === null) this.timeouts++;
        else this.refusals++;
        gateway = (gateway + 1) % this.urls.length;
        await new Promise((r) => setTimeout(r, 250)); // the client's retry backoff: load shape
      }
      // One job per pause, or per period (load shape).
      if (every === undefined) nextAt = Date.now() + this.options.pauseMs;
      else nextAt = Math.max(Date.now(), nextAt + every);
      await new Promise((r) => setTimeout(r, nextAt - Date.now()));
    }
  }
}

/**
 * Polls every accepted job until it ends (or `timeoutMs` passes): a read goes to the first
 * gateway that answers; 404 means the job has no record (lost).
 */
export async function waitForEnds(
  urls: readonly string[],
  accepted: readonly AcceptedJob[],
  auth: Auth,
  timeoutMs = 180_000,
): Promise<Map<string, JobEnd>> {
  const ends = new Map<string, JobEnd>();
  const allEnded = async () => {
    for (const a of accepted) {
      if (ends.has(a.jobId)) continue;
      const r = await readJob(urls, a.jobId, auth);
      if (r?.status === 404) ends.set(a.jobId, { status: 'lost', code: null });
      const s = r?.json?.status as string | undefined;
      if (s === 'finished' || s === 'failed' || s === 'cancelled') {
        ends.set(a.jobId, {
          status: s,
          code: (r!.json.error_code as string | null) ?? null,
          error: (r!.json.error as string | null) ?? null,
        });
      }
    }
    return ends.size === accepted.length;
  };
  // At the deadline the jobs not ended are counted as stranded by the caller, not thrown.
  await waitUntil(allEnded, `${accepted.length} accepted jobs to end`, {
    timeoutMs,
    everyMs: 500,
  }).catch(() => undefined);
  return ends;
}

async function readJob(urls: readonly string[], jobId: string, auth: Auth) {
  for (const url of urls) {
    const r = await http('GET', `${url}/v2/send-command/${jobId}`, auth).catch(() => null);
    if (r && r.status !== 503) return r;
  }
  return null;
}

export interface ScenarioResult {
  scenario: string;
  accepted: number;
  finished: number;
  failed_by_code: Record<string, number>;
  lost: number;
  stranded: number;
  /** Where the jobs that never ended stand (`<http status>:<job status>`). */
  stranded_at: Record<string, number>;
  duplicated: number;
  order_inversions: number;
  [more: string]: unknown;
}

/**
 * The scenario's counts: ends by status and code, jobs whose command a device ran more than
 * once, and pairs of one device's jobs its device ran in the opposite order of their
 * acceptance. Only job commands count (every new session types its own setup lines).
 */
export async function countOutcome(
  scenario: string,
  urls: readonly string[],
  devices: readonly ScenarioDevice[],
  accepted: readonly AcceptedJob[],
  ends: Map<string, JobEnd>,
  auth: Auth,
  /** The cluster's URL: the records of inverted pairs are read from the store and printed. */
  natsUrl?: string,
): Promise<ScenarioResult> {
  const byCode: Record<string, number> = {};
  for (const e of ends.values()) if (e.code) byCode[e.code] = (byCode[e.code] ?? 0) + 1;
  const jobCommands = new Set(accepted.map((a) => a.command));
  let duplicated = 0;
  let inversions = 0;
  /** The first inverted pairs (earlier accepted, later accepted): where to look in the logs. */
  const invertedPairs: string[][] = [];
  devices.forEach((device, i) => {
    const ran = device.stats.commands.map((c) => c.command).filter((c) => jobCommands.has(c));
    const runs = new Map<string, number>();
    for (const c of ran) runs.set(c, (runs.get(c) ?? 0) + 1);
    for (const [c, v] of runs) {
      if (v < 2) continue;
      duplicated++;
      const job = accepted.find((a) => a.command === c);
      console.log(JSON.stringify({ twice: c, job: job?.jobId, end: ends.get(job?.jobId ?? '') }));
    }
    const position = new Map(ran.map((c, k) => [c, k]));
    const order = accepted.filter((a) => a.device === i && position.has(a.command));
    for (let a = 0; a < order.length; a++) {
      for (let b = a + 1; b < order.length; b++) {
        if (position.get(order[a]!.command)! > position.get(order[b]!.command)!) {
          inversions++;
          if (invertedPairs.length < 10) invertedPairs.push([order[a]!.jobId, order[b]!.jobId]);
        }
      }
    }
  });
  const strandedAt: Record<string, number> = {};
  for (const a of accepted) {
    if (ends.has(a.jobId)) continue;
    const r = await readJob(urls, a.jobId, auth);
    const where = `${String(r?.status)}:${String(r?.json?.status)}`;
    strandedAt[where] = (strandedAt[where] ?? 0) + 1;
  }
  // The records of inverted pairs: which host ran each, from which placement, when.
  const invertedRecords: unknown[] = [];
  if (natsUrl !== undefined && invertedPairs.length > 0) {
    const nc = await connect({ servers: natsUrl.split(',') });
    try {
      const kv = await new Kvm(nc).open(Buckets.jobs);
      for (const pair of invertedPairs) {
        const records = [];
        for (const jobId of pair) {
          const e = await kv.get(jobId).catch(() => null);
          const r = e?.operation === 'PUT' ? e.json<Record<string, unknown>>() : {};
          records.push({
            job_id: jobId,
            actor_host: r['actor_host'],
            placement: r['placement'],
            created_at: r['created_at'],
            started_at: r['started_at'],
            ended_at: r['ended_at'],
          });
        }
        invertedRecords.push(records);
      }
    } finally {
      await nc.close();
    }
  }
  // Jobs that did not end (stranded) or have no record (lost): where each stands, to diagnose.
  const unended = accepted
    .filter((a) => !ends.has(a.jobId) || ends.get(a.jobId)!.status === 'lost')
    .map((a) => a.jobId);
  const unendedJobs =
    natsUrl !== undefined && unended.length > 0
      ? await describeJobs(natsUrl, unended.slice(0, 20)).catch((err: unknown) => ({
          not_described: String(err),
        }))
      : undefined;
  const failures = [...ends.entries()]
    .filter(([, e]) => e.status === 'failed')
    .map(([jobId, e]) => ({ job_id: jobId, code: e.code, error: e.error }));
  const count = (status: JobEnd['status']) =>
    [...ends.values()].filter((e) => e.status === status).length;
  return {
    scenario,
    accepted: accepted.length,
    finished: count('finished'),
    failed_by_code: byCode,
    lost: count('lost'),
    stranded: accepted.length - ends.size,
    stranded_at: strandedAt,
    duplicated,
    order_inversions: inversions,
    ...(invertedPairs.length > 0
      ? { inverted_pairs: invertedRecords.length > 0 ? invertedRecords : invertedPairs }
      : {}),
    ...(unendedJobs !== undefined ? { unended_jobs: unendedJobs } : {}),
    // The first failures with their texts: which path failed them.
    ...(failures.length > 0 ? { failures: failures.slice(0, 10) } : {}),
  };
}

/**
 * For jobs that did not end or have no record: every revision of the record (status,
 * placement, host, times), its failed-registry entry, the messages naming it still in
 * `SVC_JOBS` and `SVC_ACTOR`, and every consumer's counts. (The services' log lines naming
 * the job are in the test's output: `TEST_LOG_LEVEL=DEBUG` for placements and hand-backs.)
 */
async function describeJobs(natsUrl: string, jobIds: readonly string[]): Promise<unknown> {
  const nc = await connect({ servers: natsUrl.split(',') });
  try {
    const kvm = new Kvm(nc);
    const jobsKv = await kvm.open(Buckets.jobs);
    const failedKv = await kvm.open(Buckets.failed);
    const jsm = await jetstreamManager(nc);
    const decoder = new TextDecoder();
    const inStreams = new Map<string, unknown[]>(jobIds.map((id) => [id, []]));
    const consumers: unknown[] = [];
    for (const stream of [Streams.jobs]) {
      const info = await jsm.streams.info(stream).catch(() => null);
      const count = info?.state.messages ?? 0;
      for await (const c of jsm.consumers.list(stream)) {
        consumers.push({
          stream,
          name: c.name,
          filter: c.config.filter_subject,
          num_pending: c.num_pending,
          num_ack_pending: c.num_ack_pending,
          num_redelivered: c.num_redelivered,
          delivered: c.delivered.stream_seq,
          ack_floor: c.ack_floor.stream_seq,
        });
      }
      if (count === 0 || count > 5000) continue;
      // Read by sequence: a work-queue stream takes no ordered (unacknowledged) consumer.
      for (let seq = info!.state.first_seq; seq <= info!.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
        if (!m) continue;
        const text = decoder.decode(m.data);
        for (const id of jobIds) {
          if (text.includes(id) || m.header?.get('Nats-Msg-Id')?.includes(id)) {
            inStreams.get(id)!.push({
              stream,
              seq: m.seq,
              subject: m.subject,
              msg_id: m.header?.get('Nats-Msg-Id'),
              placement: text.startsWith('{')
                ? (JSON.parse(text) as { placement?: number }).placement
                : undefined,
              at: m.time.toISOString(),
            });
          }
        }
      }
    }
    const out = [];
    for (const id of jobIds) {
      const revisions = [];
      const history = await jobsKv.history({ key: id }).catch(() => null);
      for await (const e of history ?? []) {
        const r =
          e.operation === 'PUT'
            ? (JSON.parse(decoder.decode(e.value)) as Record<string, unknown>)
            : {};
        revisions.push({
          revision: e.revision,
          operation: e.operation,
          at: e.created.toISOString(),
          status: r['status'],
          placement: r['placement'],
          actor_host: r['actor_host'],
          started_at: r['started_at'],
          ended_at: r['ended_at'],
          error_code: r['error_code'],
        });
      }
      const failed = await failedKv.get(id).catch(() => null);
      out.push({
        job_id: id,
        revisions,
        in_failed_registry: failed?.operation === 'PUT',
        messages: inStreams.get(id),
      });
    }
    return { jobs: out, consumers };
  } finally {
    await nc.close();
  }
}

/**
 * What every scenario must hold: 0 lost after a 202, 0 stranded, 0 run twice, 0 order
 * inversions, no failure but the codes `allowed` (never INTERNAL).
 */
export function assertPromiseKept(
  result: ScenarioResult,
  options: { allowedCodes?: readonly string[]; checkOrder?: boolean } = {},
): void {
  assert.equal(result.lost, 0, 'a 202 for a job that does not exist');
  assert.equal(result.stranded, 0, 'a 202 for a job that never ends');
  assert.equal(result.duplicated, 0, 'a command ran twice');
  const allowed = new Set(options.allowedCodes ?? []);
  assert.deepEqual(
    Object.keys(result.failed_by_code).filter((c) => !allowed.has(c)),
    [],
    `failures other than ${[...allowed].join(', ') || 'none'}`,
  );
  if (options.checkOrder !== false) {
    assert.equal(result.order_inversions, 0, 'a device ran its jobs out of acceptance order');
  }
}

/** Every service as its own process, as the fault scenarios run them. */
export interface ProcessStack {
  reaper: ServiceProcess;
  dispatchers: ServiceProcess[];
  actors: ServiceProcess[];
  gateways: ServiceProcess[];
  /** The gateways' plain-HTTP URLs, in order. */
  urls: string[];
  /** SIGTERM to every process still running, newest first. */
  stop(): Promise<void>;
}

export async function startProcessStack(
  env: Record<string, string>,
  counts: { gateways?: number; dispatchers?: number; actors?: number } = {},
): Promise<ProcessStack> {
  const all: ServiceProcess[] = [];
  const start = (name: string) => {
    const p = ServiceProcess.start(name, env);
    all.push(p);
    return p;
  };
  const times = <T>(n: number, f: () => T) => Array.from({ length: n }, f);
  const reaper = start('reaper');
  const dispatchers = times(counts.dispatchers ?? 1, () => start('dispatcher'));
  const actors = times(counts.actors ?? 1, () => start('device-actor'));
  const gateways = times(counts.gateways ?? 1, () => start('gateway'));
  const stop = async () => {
    for (const p of all.reverse()) await p.kill('SIGTERM');
  };
  try {
    const urls: string[] = [];
    for (const g of gateways) urls.push(await g.httpUrl());
    for (const a of actors) await a.waitFor(/actor host started/);
    return { reaper, dispatchers, actors, gateways, urls, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
