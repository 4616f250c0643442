/**
 * Load benchmark: one command that starts the stack (nats-server, gateway + dispatcher + reaper
 * in this process, actor hosts as separate processes so that their memory can be measured), a
 * fleet of simulated SSH devices and an open-loop load, then prints throughput, latency
 * percentiles, end-to-end overhead, SSH handshakes per job and memory per concurrent session.
 *
 *   npm run bench -- --jobs 1000 --devices 50                     # issue-2 numbers
 *   npm run bench -- --devices 1000 --latency 50 --rate 200 --jobs 2000 --hold 1000
 *   npm run bench -- --url http://127.0.0.1:8080 --nats nats://127.0.0.1:4222   # a running stack
 *   npm run bench -- --processes --devices 1000 --latency 50 --batch --reps 1   # a 1000-device batch
 *   npm run bench -- --help
 *
 * Everything runs on 127.0.0.1; every phase is bounded in job count and time.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Kvm, KvWatchInclude, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Buckets, Streams, decodeJson, type JobRecord } from '@svc/proto';
import { connectNats } from '@svc/nats';
import {
  NatsServerProcess,
  ServiceProcess,
  freePort,
  startInProcessStack,
  testEnv,
  waitHealthy,
  type InProcessStack,
} from '@svc/test/harness';
import { startFleet, type Fleet, type SimulatedDevice } from '@svc/test/support';
import {
  natsPerJob,
  natsSnapshot,
  subjectKind,
  type NatsPerJob,
  type NatsSnapshot,
} from './nats-monitor.js';
import { FLEET_AND_CLIENT, median, svcSum } from './figures.js';

// ---- options ---------------------------------------------------------------------------------

const HELP = `usage: node bench/dist/src/load.js [options]
  --jobs N          jobs per measured repetition (default 1000)
  --devices M       simulated devices the load spreads over (default 50)
  --rate R          submissions per second; 0 = as fast as --concurrency allows (default 0)
  --concurrency C   most submissions in flight at once (default 64)
  --mix S:C:T       weights of show (send-command), config (send-config) and structured
                    (send-command-structured) jobs (default 8:1:1)
  --latency MS      simulated per-command device latency, ms (default 0)
  --seed N          seed of device and kind choice (default 1)
  --warmup N        jobs run and discarded before measuring, at least one per device (default 100)
  --reps R          measured repetitions; the report gives median and spread (default 3)
  --actors K        actor host processes (default 1)
  --hold N          memory phase: N jobs on N further devices of their own, held open at once
                    (default 0 = skip)
  --hold-latency MS per-command latency in the memory phase (default 4000); a job holds its
                    session for two commands, so for all N open at once make it at least
                    N / (2 x hold-rate) seconds (2000 at 50/s: --hold-latency 25000)
  --hold-rate R     memory-phase submissions per second, 0 = all at once (default 50): 2000
                    handshakes at once on 2 cores time out (CONNECTION_TIMEOUT) instead of opening
  --timeout S       longest a repetition may take before it is reported as incomplete (default 120)
  --url URL         use a running gateway instead of starting the stack (needs --nats)
  --nats URL        NATS of the running stack (job records are read from svc-jobs)
  --actor-pid PID   with --url: actor host process whose RSS the memory phase reads
  --monitor URL     with --url: nats-server's monitoring endpoint (http://127.0.0.1:8222) for
                    the per-job NATS counts; a started stack enables one of its own
  --processes       run gateway, dispatcher and reaper as separate processes too (as deployed;
                    default: in this process, with the fleet and the client)
  --launcher        run the whole service as \`npm start\` does: one process (the launcher, every
                    service and one actor host in it) beside the benchmark's nats-server
  --cpu-prof DIR    write a CPU profile of every service process into DIR (node --cpu-prof),
                    one <service>.cpuprofile each, at the end of the run
  --batch           instead of the load phases: per repetition ONE POST /v2/batches (kind
                    command, show version) over all --devices; reports POST->202, POST->last job
                    ended, the slowest device's own time and CPU per job (no warm-up: sessions
                    are cold, as a site batch meets them)
  --subjects        count every message published through nats-server by subject kind (one
                    more connection subscribed to '>'; its deliveries are not counted as svc's)
  --idle S          after the warm-up, S seconds with no jobs: each process's CPU per second
                    (timers, heartbeats, watches; what a quiet stack costs) (default 0 = skip)
  --max-queue-depth N  the stack's MAX_QUEUE_DEPTH (default 0 = no limit, no backlog read per
                    submission)
  --json            also print the report as JSON
`;

interface Options {
  jobs: number;
  devices: number;
  rate: number;
  concurrency: number;
  mix: [number, number, number];
  latencyMs: number;
  seed: number;
  warmup: number;
  reps: number;
  actors: number;
  hold: number;
  holdLatencyMs: number;
  holdRate: number;
  timeoutMs: number;
  url: string | undefined;
  nats: string | undefined;
  actorPid: number | undefined;
  /** nats-server monitoring endpoint (`/varz`, `/jsz`, `/connz`). */
  monitor: string | undefined;
  json: boolean;
  subjects: boolean;
  processes: boolean;
  /** The whole service in one process, as `npm start` runs it (the launcher). */
  launcher: boolean;
  /** Directory for a CPU profile of every service process (`--cpu-prof`), written at exit. */
  cpuProf: string | undefined;
  batch: boolean;
  /** Seconds of the idle phase (no jobs) after the warm-up; 0 skips it. */
  idleSeconds: number;
  /** The stack's MAX_QUEUE_DEPTH: above 0 every submission reads its context's backlog. */
  maxQueueDepth: number;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      jobs: { type: 'string', default: '1000' },
      devices: { type: 'string', default: '50' },
      rate: { type: 'string', default: '0' },
      concurrency: { type: 'string', default: '64' },
      mix: { type: 'string', default: '8:1:1' },
      latency: { type: 'string', default: '0' },
      seed: { type: 'string', default: '1' },
      warmup: { type: 'string', default: '100' },
      reps: { type: 'string', default: '3' },
      actors: { type: 'string', default: '1' },
      hold: { type: 'string', default: '0' },
      'hold-latency': { type: 'string', default: '4000' },
      'hold-rate': { type: 'string', default: '50' },
      timeout: { type: 'string', default: '120' },
      url: { type: 'string' },
      nats: { type: 'string' },
      'actor-pid': { type: 'string' },
      monitor: { type: 'string' },
      json: { type: 'boolean', default: false },
      subjects: { type: 'boolean', default: false },
      processes: { type: 'boolean', default: false },
      launcher: { type: 'boolean', default: false },
      'cpu-prof': { type: 'string' },
      batch: { type: 'boolean', default: false },
      idle: { type: 'string', default: '0' },
      'max-queue-depth': { type: 'string', default: '0' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const int = (name: string, v: string, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
    return n;
  };
  const mix = values.mix.split(':').map(Number);
  if (
    mix.length !== 3 ||
    mix.some((w) => !Number.isFinite(w) || w < 0) ||
    mix.every((w) => w === 0)
  ) {
    throw new Error('--mix must be three non-negative weights S:C:T, not all zero');
  }
  const url = values.url;
  if (url && !values.nats) throw new Error('--url needs --nats (job records are read from NATS)');
  for (const u of [url, values.nats, values.monitor]) {
    if (u && !/^(https?|nats):\/\/(127\.0\.0\.1|localhost|\[::1\])([:/,]|$)/.test(u)) {
      throw new Error(`${u}: the benchmark only drives loopback addresses`);
    }
  }
  const options: Options = {
    jobs: int('jobs', values.jobs, 1),
    devices: int('devices', values.devices, 1),
    rate: Number(values.rate),
    concurrency: int('concurrency', values.concurrency, 1),
    mix: mix as [number, number, number],
    latencyMs: int('latency', values.latency, 0),
    seed: int('seed', values.seed, 0),
    warmup: int('warmup', values.warmup, 0),
    reps: int('reps', values.reps, 0),
    actors: int('actors', values.actors, 1),
    hold: int('hold', values.hold, 0),
    holdLatencyMs: int('hold-latency', values['hold-latency'], 0),
    holdRate: Number(values['hold-rate']),
    timeoutMs: int('timeout', values.timeout, 1) * 1000,
    url,
    nats: values.nats,
    actorPid: values['actor-pid'] ? int('actor-pid', values['actor-pid'], 1) : undefined,
    monitor: values.monitor,
    json: values.json,
    subjects: values.subjects,
    processes: values.processes,
    launcher: values.launcher,
    cpuProf: values['cpu-prof'],
    batch: values.batch,
    idleSeconds: int('idle', values.idle, 0),
    maxQueueDepth: int('max-queue-depth', values['max-queue-depth'], 0),
  };
  if (options.launcher && (url || options.processes || options.hold > 0 || options.actors !== 1)) {
    throw new Error(
      '--launcher runs the one process of `npm start`: no --url, --processes, --hold or --actors',
    );
  }
  return options;
}

// ---- small tools -----------------------------------------------------------------------------

/** mulberry32: a tiny seeded PRNG, so that repeated runs submit the same sequence. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

function summary(values: number[]): {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  n: number;
} {
  const s = [...values].sort((a, b) => a - b);
  return {
    p50: percentile(s, 50),
    p90: percentile(s, 90),
    p99: percentile(s, 99),
    max: s.at(-1) ?? NaN,
    n: s.length,
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function rssBytes(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return null;
  }
}

/**
 * Times the threads of a process went to sleep and were woken again (voluntary context switches
 * of every thread, from each thread's status under /proc/<pid>/task): on a quiet box, what a
 * process costs follows these wake-ups more than the bytes it moves (docs/performance.md).
 */
function wakeUps(pid: number): number | null {
  try {
    let sum = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      sum += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    }
    return sum;
  } catch {
    return null;
  }
}

/** Processes whose CPU time per job the report shows. */
const cpuWatch: { name: string; pid: number }[] = [];

/** What each watched process has used so far: CPU ms and wake-ups. */
interface Usage {
  cpuMs: number;
  wakeUps: number;
}
const usageNow = (): Usage[] =>
  cpuWatch.map((p) => ({
    cpuMs: (cpuSeconds(p.pid) ?? NaN) * 1000,
    wakeUps: wakeUps(p.pid) ?? NaN,
  }));
/** `what` used between two readings of `usageNow`, per unit (job, second), by process. */
const usedPer = (
  before: readonly Usage[],
  after: readonly Usage[],
  units: number,
  what: keyof Usage,
): Record<string, number> =>
  Object.fromEntries(
    cpuWatch.map((p, i) => [p.name, (after[i]![what] - before[i]![what]) / Math.max(1, units)]),
  );

/**
 * CPU each watched process spends per second while no job runs (the fleet's sessions stay warm):
 * the part of the per-job cost that does not depend on the load, printed at once.
 */
async function idlePhase(seconds: number): Promise<void> {
  const before = usageNow();
  await sleep(seconds * 1000);
  const perSecond = Object.entries(usedPer(before, usageNow(), seconds, 'cpuMs'));
  const lines = [
    `idle CPU (${seconds} s, no jobs), ms per second:`,
    ...perSecond.map(([name, ms]) => `  ${name.padEnd(32)} ${ms.toFixed(1)}`),
  ];
  // Only where the fleet and client have a process of their own can svc be told apart.
  if (perSecond.some(([name]) => name === FLEET_AND_CLIENT)) {
    lines.push(`  ${'svc + nats-server'.padEnd(32)} ${svcSum(perSecond).toFixed(1)}`);
  }
  process.stdout.write(lines.join('\n') + '\n');
}

/** A keep-alive JSON client for the gateway (the harness helper opens a connection per call). */
class Client {
  readonly #agent: HttpAgent;
  readonly #https: boolean;
  constructor(
    readonly base: string,
    maxSockets: number,
  ) {
    this.#https = base.startsWith('https:');
    this.#agent = this.#https
      ? new HttpsAgent({ keepAlive: true, maxSockets, rejectUnauthorized: false })
      : new HttpAgent({ keepAlive: true, maxSockets });
  }
  post(path: string, body: unknown, auth: string): Promise<{ status: number; json: unknown }> {
    return this.#send('POST', path, JSON.stringify(body), auth);
  }
  get(path: string, auth: string): Promise<{ status: number; json: unknown }> {
    return this.#send('GET', path, null, auth);
  }
  #send(
    method: string,
    path: string,
    payload: string | null,
    auth: string,
  ): Promise<{ status: number; json: unknown }> {
    const req = this.#https ? httpsRequest : httpRequest;
    const headers: Record<string, string | number> = { authorization: auth };
    if (payload !== null) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(payload);
    }
    return new Promise((resolve, reject) => {
      const r = req(new URL(path, this.base), { method, agent: this.#agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = text;
          }
          resolve({ status: res.statusCode ?? 0, json });
        });
      });
      r.on('error', reject);
      r.end(payload ?? undefined);
    });
  }
  close(): void {
    this.#agent.destroy();
  }
}

// ---- job tracking ------------------------------------------------------------------------------

type Kind = 'show' | 'config' | 'structured';
const ROUTE: Record<Kind, string> = {
  show: '/v2/send-command',
  config: '/v2/send-config',
  structured: '/v2/send-command-structured',
};
const HOLD_CONTEXT = 'bench-hold';
const VERSION_TEMPLATE = 'Value VERSION (\\S+)\n\nStart\n  ^.*Version ${VERSION}, -> Record\n';

interface Tracked {
  kind: Kind;
  device: SimulatedDevice;
  submitAt: number;
  acceptedAt?: number;
  terminalAt?: number;
  status?: string;
}

/** Watches svc-jobs and notes when each job's record first reads a terminal status (client clock). */
class JobWatcher {
  readonly terminal = new Map<string, { at: number; status: string }>();
  readonly #waiters = new Map<string, () => void>();
  #stop: (() => void) | undefined;

  static async start(kv: KV): Promise<JobWatcher> {
    const w = new JobWatcher();
    const iter = await kv.watch({ key: '>', include: KvWatchInclude.UpdatesOnly });
    w.#stop = () => iter.stop();
    void (async () => {
      for await (const e of iter) {
        if (e.operation !== 'PUT') continue;
        const rec = decodeJson<JobRecord>(e.value);
        if (rec.status === 'finished' || rec.status === 'failed' || rec.status === 'cancelled') {
          if (!w.terminal.has(e.key)) {
            w.terminal.set(e.key, { at: Date.now(), status: rec.status });
            w.#waiters.get(e.key)?.();
          }
        }
      }
    })();
    return w;
  }

  /** Resolves when every id is terminal or the deadline passes; returns the ids still open. */
  async waitAll(ids: string[], deadline: number): Promise<string[]> {
    const open = ids.filter((id) => !this.terminal.has(id));
    await Promise.race([
      Promise.all(
        open.map(
          (id) =>
            new Promise<void>((r) => {
              if (this.terminal.has(id)) r();
              else this.#waiters.set(id, r);
            }),
        ),
      ),
      sleep(Math.max(0, deadline - Date.now())),
    ]);
    for (const id of open) this.#waiters.delete(id);
    return ids.filter((id) => !this.terminal.has(id));
  }

  stop(): void {
    this.#stop?.();
  }
}

// ---- one load phase ----------------------------------------------------------------------------

interface PhaseResult {
  jobs: number;
  accepted: number;
  rejected: Record<string, number>;
  finished: number;
  failed: number;
  incomplete: number;
  wallSeconds: number;
  jobsPerSecond: number;
  submitRate: number;
  /** ms */
  submitHttp: ReturnType<typeof summary>;
  queuedToStarted: ReturnType<typeof summary>;
  queuedToEnded: ReturnType<typeof summary>;
  clientSubmitToFinished: ReturnType<typeof summary>;
  overhead: ReturnType<typeof summary>;
  deviceTimePerJob: number;
  handshakesPerJob: number;
  errorCodes: Record<string, number>;
  /** CPU ms per completed job, by process. */
  cpuMsPerJob: Record<string, number>;
  /** Wake-ups (voluntary context switches of all threads) per completed job, by process. */
  wakeUpsPerJob: Record<string, number>;
  /** Most messages waiting in each work-queue stream during the phase (where jobs queue). */
  peakBacklog: { jobs: number };
  /** nats-server's own counts per job (without the benchmark's traffic); null without `--monitor`. */
  nats: NatsPerJob | null;
  /** `--subjects`: messages published per job, by subject kind. */
  subjectsPerJob: Record<string, number> | null;
}

interface PhaseSpec {
  jobs: number;
  devices: SimulatedDevice[];
  rate: number;
  concurrency: number;
  mix: [number, number, number];
  seed: number;
  latencyMs: number;
  timeoutMs: number;
  /** One job per device, in device order (memory phase). */
  onePerDevice?: boolean;
  /** Called every 100 ms while jobs run. */
  onTick?: () => void;
  /** Routing context of the jobs (the service default when absent). */
  context?: string;
}

let jobSerial = 0;

function jobBody(kind: Kind, device: SimulatedDevice, context: string | undefined): unknown {
  const base = {
    ...(context ? { context } : {}),
    host: device.host,
    port: device.port,
    platform: 'cisco_ios',
    enable: device.enable,
  };
  jobSerial++;
  switch (kind) {
    case 'show':
      return { ...base, commands: ['show version'] };
    case 'config':
      return {
        ...base,
        commands: ['interface GigabitEthernet0/1', `description bench-${jobSerial}`],
      };
    case 'structured':
      return { ...base, commands: ['show version'], textfsm_template: VERSION_TEMPLATE };
  }
}

/** Samples the work-queue stream SVC_JOBS: jobs accepted and not yet ended. */
function backlogSampler(jsm: JetStreamManager | undefined): {
  stop(): { jobs: number };
  /** JetStream API requests sent so far (taken out of the per-job API calls). */
  apiCalls(): number;
} {
  const peak = { jobs: 0 };
  let busy = false;
  let calls = 0;
  const timer = setInterval(() => {
    if (!jsm || busy) return;
    busy = true;
    calls += 1;
    jsm.streams
      .info(Streams.jobs)
      .then((j) => {
        peak.jobs = Math.max(peak.jobs, j.state.messages);
      })
      .catch(() => undefined)
      .finally(() => (busy = false));
  }, 200);
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
    apiCalls: () => calls,
  };
}

let streamsJsm: JetStreamManager | undefined;
/** nats-server's monitoring endpoint, when there is one. */
let monitorUrl: string | undefined;
/** The benchmark's own NATS connection name: its traffic is not a job's cost. */
const BENCH_CONN = 'svc-bench';
/** `--subjects`: a connection subscribed to every subject, counting messages by kind. */
const TAP_CONN = 'svc-bench-tap';
let subjectTap: Map<string, number> | undefined;

const snapshot = (): Promise<NatsSnapshot | null> =>
  monitorUrl
    ? natsSnapshot(monitorUrl).catch((err: unknown) => {
        process.stderr.write(`NATS monitoring snapshot failed: ${(err as Error).message}\n`);
        return null;
      })
    : Promise.resolve(null);

async function runPhase(
  spec: PhaseSpec,
  client: Client,
  kv: KV,
  watcher: JobWatcher,
): Promise<PhaseResult> {
  const sampler = backlogSampler(streamsJsm);
  const rand = prng(spec.seed);
  const [ws, wc] = spec.mix;
  const total = spec.mix[0] + spec.mix[1] + spec.mix[2];
  for (const d of spec.devices) d.resetStats();
  const natsBefore = await snapshot();
  subjectTap?.clear();
  const usageBefore = usageNow();
  const tracked = new Map<string, Tracked>();
  const rejected: Record<string, number> = {};
  const submitHttp: number[] = [];
  const start = Date.now();
  let inFlight = 0;
  let next = 0;
  let lastSubmitDone = start;
  await new Promise<void>((done) => {
    const pump = () => {
      while (next < spec.jobs && inFlight < spec.concurrency) {
        if (spec.rate > 0) {
          const due = start + (next * 1000) / spec.rate;
          const wait = due - Date.now();
          if (wait > 0) {
            setTimeout(pump, Math.min(wait, 50));
            return;
          }
        }
        const i = next++;
        const device = spec.onePerDevice
          ? spec.devices[i % spec.devices.length]!
          : spec.devices[Math.floor(rand() * spec.devices.length)]!;
        const r = rand() * total;
        const kind: Kind = r < ws ? 'show' : r < ws + wc ? 'config' : 'structured';
        const auth =
          'Basic ' + Buffer.from(`${device.username}:${device.password}`).toString('base64');
        const submitAt = Date.now();
        inFlight++;
        client
          .post(ROUTE[kind], jobBody(kind, device, spec.context), auth)
          .then((a) => {
            const at = Date.now();
            submitHttp.push(at - submitAt);
            const id = (a.json as { job_id?: string } | null)?.job_id;
            if (a.status === 202 && id) tracked.set(id, { kind, device, submitAt, acceptedAt: at });
            else rejected[String(a.status)] = (rejected[String(a.status)] ?? 0) + 1;
          })
          .catch((err: unknown) => {
            const key = `error ${(err as Error).message}`;
            rejected[key] = (rejected[key] ?? 0) + 1;
          })
          .finally(() => {
            inFlight--;
            lastSubmitDone = Date.now();
            if (next >= spec.jobs && inFlight === 0) done();
            else pump();
          });
      }
    };
    pump();
  });
  const ids = [...tracked.keys()];
  const deadline = start + spec.timeoutMs;
  const ticker = spec.onTick ? setInterval(spec.onTick, 100) : undefined;
  const open = await watcher.waitAll(ids, deadline);
  if (ticker) clearInterval(ticker);
  const lastTerminal = Math.max(
    lastSubmitDone,
    ...ids.map((id) => watcher.terminal.get(id)?.at ?? 0),
  );
  const wallSeconds = (lastTerminal - start) / 1000;
  const usageAfter = usageNow();
  const peakBacklog = sampler.stop();
  // Before the record reads below: they are the benchmark's, not the jobs'.
  const natsAfter = await snapshot();
  const tapped = subjectTap ? new Map(subjectTap) : null;

  // Per-job numbers from the records (server clock = this machine's clock).
  const queuedToStarted: number[] = [];
  const queuedToEnded: number[] = [];
  const clientE2e: number[] = [];
  const overhead: number[] = [];
  const errorCodes: Record<string, number> = {};
  let finished = 0;
  let failed = 0;
  let deviceTimeTotal = 0;
  const records = await Promise.all(
    ids.map(async (id) => {
      const e = await kv.get(id);
      return e && e.operation === 'PUT' ? decodeJson<JobRecord>(e.value) : null;
    }),
  );
  // Command receipt times per device, for the device time inside each job's run.
  const commandTimes = new Map<SimulatedDevice, number[]>();
  for (const d of spec.devices)
    commandTimes.set(
      d,
      d.stats.commands.map((c) => c.at).sort((a, b) => a - b),
    );
  ids.forEach((id, i) => {
    const rec = records[i];
    const t = tracked.get(id)!;
    const term = watcher.terminal.get(id);
    if (!rec || !term) return;
    if (rec.status === 'finished') finished++;
    else {
      failed++;
      const code = rec.error_code ?? rec.status;
      errorCodes[code] = (errorCodes[code] ?? 0) + 1;
    }
    const enq = Date.parse(rec.enqueued_at);
    const started = rec.started_at ? Date.parse(rec.started_at) : NaN;
    const ended = rec.ended_at ? Date.parse(rec.ended_at) : NaN;
    if (Number.isFinite(started)) queuedToStarted.push(started - enq);
    if (Number.isFinite(ended)) queuedToEnded.push(ended - enq);
    const e2e = term.at - t.submitAt;
    clientE2e.push(e2e);
    // Device time: the simulated latency of every command line this device read while the job
    // ran (session setup such as paging-off and enable included: those are the device's time).
    let deviceMs = 0;
    if (Number.isFinite(started) && Number.isFinite(ended) && spec.latencyMs > 0) {
      const times = commandTimes.get(t.device) ?? [];
      let n = 0;
      for (const at of times) if (at >= started - 1 && at <= ended) n++;
      deviceMs = n * spec.latencyMs;
    }
    deviceTimeTotal += deviceMs;
    if (rec.status === 'finished') overhead.push(e2e - deviceMs);
  });
  const handshakes = spec.devices.reduce((s, d) => s + d.stats.handshakes, 0);
  const done = finished + failed;
  return {
    jobs: spec.jobs,
    accepted: ids.length,
    rejected,
    finished,
    failed,
    incomplete: open.length,
    wallSeconds,
    jobsPerSecond: done / wallSeconds,
    submitRate: spec.jobs / ((lastSubmitDone - start) / 1000),
    submitHttp: summary(submitHttp),
    queuedToStarted: summary(queuedToStarted),
    queuedToEnded: summary(queuedToEnded),
    clientSubmitToFinished: summary(clientE2e),
    overhead: summary(overhead),
    deviceTimePerJob: done > 0 ? deviceTimeTotal / done : 0,
    handshakesPerJob: done > 0 ? handshakes / done : NaN,
    errorCodes,
    peakBacklog,
    nats:
      natsBefore && natsAfter
        ? natsPerJob(natsBefore, natsAfter, done, [BENCH_CONN, TAP_CONN], sampler.apiCalls())
        : null,
    subjectsPerJob: tapped
      ? Object.fromEntries([...tapped].map(([k, n]) => [k, n / Math.max(1, done)]))
      : null,
    cpuMsPerJob: usedPer(usageBefore, usageAfter, done, 'cpuMs'),
    wakeUpsPerJob: usedPer(usageBefore, usageAfter, done, 'wakeUps'),
  };
}

// ---- memory phase ----------------------------------------------------------------------------

interface HoldResult {
  jobs: number;
  latencyMs: number;
  baselineRssMiB: number;
  peakRssMiB: number;
  baselineSessions: number;
  peakSessions: number;
  bytesPerSession: number;
  finished: number;
  failed: number;
  incomplete: number;
  errorCodes: Record<string, number>;
  seconds: number;
}

async function holdPhase(
  opts: Options,
  devices: SimulatedDevice[],
  actorPid: number,
  context: string | undefined,
  client: Client,
  kv: KV,
  watcher: JobWatcher,
): Promise<HoldResult> {
  for (const d of devices) await d.setFaults({ commandLatencyMs: opts.holdLatencyMs });
  await sleep(1000);
  const openSessions = () => devices.reduce((s, d) => s + d.stats.sessionsOpen, 0);
  const baselineSessions = openSessions();
  const baselineRss = rssBytes(actorPid) ?? NaN;
  let peakSessions = baselineSessions;
  let peakRss = baselineRss;
  const t0 = Date.now();
  const sample = () => {
    const s = openSessions();
    const rss = rssBytes(actorPid);
    if (rss !== null && s >= peakSessions) {
      // RSS at the moment of most sessions (not the highest RSS: GC timing would bias it).
      peakSessions = s;
      peakRss = rss;
    }
  };
  const r = await runPhase(
    {
      jobs: devices.length,
      devices,
      rate: opts.holdRate,
      concurrency: opts.concurrency,
      mix: [1, 0, 0],
      seed: opts.seed + 1000,
      latencyMs: opts.holdLatencyMs,
      timeoutMs: opts.timeoutMs + 8 * opts.holdLatencyMs,
      onePerDevice: true,
      onTick: sample,
      ...(context ? { context } : {}),
    },
    client,
    kv,
    watcher,
  );
  for (const d of devices) await d.setFaults({ commandLatencyMs: opts.latencyMs });
  const sessions = peakSessions - baselineSessions;
  return {
    jobs: devices.length,
    latencyMs: opts.holdLatencyMs,
    baselineRssMiB: baselineRss / 2 ** 20,
    peakRssMiB: peakRss / 2 ** 20,
    baselineSessions,
    peakSessions,
    bytesPerSession: sessions > 0 ? (peakRss - baselineRss) / sessions : NaN,
    finished: r.finished,
    failed: r.failed,
    incomplete: r.incomplete,
    errorCodes: r.errorCodes,
    seconds: (Date.now() - t0) / 1000,
  };
}

// ---- report ----------------------------------------------------------------------------------

const f0 = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : '-');
const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '-');
const f2 = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '-');

function spread(values: number[], fmt: (n: number) => string): string {
  if (values.length === 1) return fmt(values[0]!);
  return `${fmt(median(values))} (${fmt(Math.min(...values))}–${fmt(Math.max(...values))})`;
}

function printReport(
  opts: Options,
  reps: PhaseResult[],
  hold: HoldResult | null,
  setup: string,
): void {
  const out: string[] = [];
  out.push(`svc load benchmark: ${setup}`);
  out.push(
    `machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`,
  );
  out.push(
    `load: ${opts.jobs} jobs x ${opts.reps} reps over ${opts.devices} devices, rate ${opts.rate > 0 ? `${opts.rate}/s` : 'open'} ` +
      `(concurrency ${opts.concurrency}), mix show:config:structured ${opts.mix.join(':')}, latency ${opts.latencyMs} ms/command, ` +
      `seed ${opts.seed}, warm-up ${Math.max(opts.warmup, opts.devices)} jobs (one per device)`,
  );
  if (reps.length > 0) {
    out.push('');
    out.push(
      'per repetition: jobs/s | finished/failed/incomplete | e2e p50/p99 ms | overhead p50/p99 ms | handshakes/job',
    );
    reps.forEach((r, i) =>
      out.push(
        `  rep ${i + 1}: ${f1(r.jobsPerSecond)} | ${r.finished}/${r.failed}/${r.incomplete}` +
          `${Object.keys(r.rejected).length ? ` rejected ${JSON.stringify(r.rejected)}` : ''}` +
          `${Object.keys(r.errorCodes).length ? ` errors ${JSON.stringify(r.errorCodes)}` : ''}` +
          ` | ${f0(r.clientSubmitToFinished.p50)}/${f0(r.clientSubmitToFinished.p99)} | ${f0(r.overhead.p50)}/${f0(r.overhead.p99)} | ${f2(r.handshakesPerJob)}`,
      ),
    );
    const col = (pick: (r: PhaseResult) => number, fmt = f1) => spread(reps.map(pick), fmt);
    out.push('');
    out.push('median over repetitions (min–max):');
    out.push(
      `  throughput                     ${col((r) => r.jobsPerSecond)} jobs/s (submitted at ${col((r) => r.submitRate)}/s)`,
    );
    out.push(
      `  submit HTTP 202     p50 / p99  ${col((r) => r.submitHttp.p50)} / ${col((r) => r.submitHttp.p99)} ms`,
    );
    out.push(
      `  submit→started      p50 / p99  ${col((r) => r.queuedToStarted.p50, f0)} / ${col((r) => r.queuedToStarted.p99, f0)} ms  (record enqueued_at→started_at)`,
    );
    out.push(
      `  submit→finished     p50 / p99  ${col((r) => r.queuedToEnded.p50, f0)} / ${col((r) => r.queuedToEnded.p99, f0)} ms  (record enqueued_at→ended_at)`,
    );
    out.push(
      `  client submit→done  p50 / p99  ${col((r) => r.clientSubmitToFinished.p50, f0)} / ${col((r) => r.clientSubmitToFinished.p99, f0)} ms  (POST sent → terminal record seen)`,
    );
    out.push(
      `  device time per job            ${col((r) => r.deviceTimePerJob, f0)} ms  (command lines read × latency)`,
    );
    out.push(
      `  end-to-end overhead p50 / p99  ${col((r) => r.overhead.p50, f0)} / ${col((r) => r.overhead.p99, f0)} ms  (client submit→done − device time)`,
    );
    out.push(`  SSH handshakes per job         ${col((r) => r.handshakesPerJob, f2)}`);
    out.push(
      `  peak backlog                   SVC_JOBS ${col((r) => r.peakBacklog.jobs, f0)} messages  (accepted, not yet ended)`,
    );
    for (const { name } of cpuWatch) {
      out.push(
        `  CPU per job: ${name.padEnd(17)} ${col((r) => r.cpuMsPerJob[name] ?? NaN, f2)} ms`,
      );
    }
    const svcCpu = (r: PhaseResult) => svcSum(Object.entries(r.cpuMsPerJob));
    if (opts.processes || opts.launcher)
      out.push(`  CPU per job: svc + nats-server  ${col(svcCpu, f2)} ms`);
    for (const { name } of cpuWatch) {
      out.push(
        `  wake-ups per job: ${name.padEnd(12)} ${col((r) => r.wakeUpsPerJob[name] ?? NaN, f2)}  (voluntary context switches, all threads)`,
      );
    }
    const svcWakeUps = (r: PhaseResult) => svcSum(Object.entries(r.wakeUpsPerJob));
    if (opts.processes || opts.launcher)
      out.push(`  wake-ups per job: svc + nats-server  ${col(svcWakeUps, f2)}`);
    const withNats = reps.filter((r) => r.nats !== null);
    if (withNats.length > 0) {
      const nc = (pick: (n: NatsPerJob) => number) =>
        spread(
          withNats.map((r) => pick(r.nats!)),
          f2,
        );
      out.push(
        `  NATS per job (nats-server monitoring, the benchmark's own traffic taken out):`,
        `    messages through nats-server ${nc((n) => n.total)} (in ${nc((n) => n.in)}, out ${nc((n) => n.out)})`,
        `    stored messages              ${nc((n) => n.stored)}`,
        `    JetStream API calls          ${nc((n) => n.apiCalls)}`,
      );
      const streamNames = [
        ...new Set(withNats.flatMap((r) => Object.keys(r.nats!.storedByStream))),
      ];
      for (const s of streamNames.sort()) {
        out.push(`    stored in ${s.padEnd(18)} ${nc((n) => n.storedByStream[s] ?? 0)}`);
      }
      const connNames = [...new Set(withNats.flatMap((r) => Object.keys(r.nats!.byConnection)))];
      for (const c of connNames.sort()) {
        out.push(
          `    connection ${c.padEnd(17)} in ${nc((n) => n.byConnection[c]?.in ?? 0)}, out ${nc((n) => n.byConnection[c]?.out ?? 0)}`,
        );
      }
    }
    const withSubjects = reps.filter((r) => r.subjectsPerJob !== null);
    if (withSubjects.length > 0) {
      out.push(`  messages published per job, by subject kind (--subjects):`);
      const kinds = [...new Set(withSubjects.flatMap((r) => Object.keys(r.subjectsPerJob!)))];
      for (const k of kinds.sort()) {
        out.push(
          `    ${k.padEnd(50)} ${spread(
            withSubjects.map((r) => r.subjectsPerJob![k] ?? 0),
            f2,
          )}`,
        );
      }
    }
  }
  if (hold) {
    out.push('');
    out.push(
      `memory phase: ${hold.jobs} jobs on ${hold.jobs} devices at ${hold.latencyMs} ms/command: ` +
        `${hold.peakSessions} SSH sessions open at peak (${hold.baselineSessions} before), ` +
        `actor host RSS ${f1(hold.baselineRssMiB)} → ${f1(hold.peakRssMiB)} MiB, ` +
        `${f1(hold.bytesPerSession / 1024)} KiB per concurrent session; ` +
        `${hold.finished}/${hold.failed}/${hold.incomplete} finished/failed/incomplete in ${f1(hold.seconds)} s` +
        `${Object.keys(hold.errorCodes).length ? ` errors ${JSON.stringify(hold.errorCodes)}` : ''}`,
    );
  }
  process.stdout.write(out.join('\n') + '\n');
  if (opts.json)
    process.stdout.write(JSON.stringify({ options: opts, reps, hold }, null, 2) + '\n');
}

// ---- main ------------------------------------------------------------------------------------

// ---- batch mode ------------------------------------------------------------------------------

interface BatchResult {
  devices: number;
  finished: number;
  failed: number;
  cancelled: number;
  incomplete: number;
  errorCodes: Record<string, number>;
  /** ms, client clock (the stack runs on this machine: one clock). */
  postTo202: number;
  /** POST sent -> the latest `ended_at` of the batch's job records. */
  lastEndedMs: number;
  /** POST sent -> the batch record's `ended_at`. */
  batchEndedMs: number;
  /** POST sent -> GET /v2/batches/{id} (polled every 100 ms) answers an ended batch. */
  clientSeesEndMs: number;
  /** The slowest device's own time: commands it answered x the simulated latency. */
  slowestOwnMs: number;
  /** The longest span on one device: first command read -> last command answered. */
  slowestSpanMs: number;
  cpuMsPerJob: Record<string, number>;
}

/** One POST /v2/batches of kind command (`show version`) over every device, followed to its end. */
async function batchPhase(
  opts: Options,
  devices: SimulatedDevice[],
  client: Client,
  kv: KV,
  watcher: JobWatcher,
): Promise<BatchResult> {
  for (const d of devices) d.resetStats();
  const first = devices[0]!;
  const auth = 'Basic ' + Buffer.from(`${first.username}:${first.password}`).toString('base64');
  const usageBefore = usageNow();
  const start = Date.now();
  const created = await client.post(
    '/v2/batches',
    {
      kind: 'command',
      platform: 'cisco_ios',
      commands: ['show version'],
      enable: first.enable,
      devices: devices.map((d) => ({ host: d.host, port: d.port })),
    },
    auth,
  );
  const postTo202 = Date.now() - start;
  if (created.status !== 202) {
    throw new Error(`POST /v2/batches: ${created.status} ${JSON.stringify(created.json)}`);
  }
  const answer = created.json as { batch_id: string; jobs: { job_id: string }[] };
  const ids = answer.jobs.map((j) => j.job_id);
  const deadline = start + opts.timeoutMs;
  const open = await watcher.waitAll(ids, deadline);
  let batch: { status: string; ended_at: string | null } = { status: 'running', ended_at: null };
  while (Date.now() < deadline) {
    const a = await client.get(`/v2/batches/${answer.batch_id}`, auth);
    batch = a.json as typeof batch;
    if (batch.status !== 'running') break;
    await sleep(100);
  }
  const clientSeesEndMs = Date.now() - start;
  const usageAfter = usageNow();

  const counts = { finished: 0, failed: 0, cancelled: 0 };
  const errorCodes: Record<string, number> = {};
  let lastEnded = NaN;
  for (let i = 0; i < ids.length; i += 64) {
    const got = await Promise.all(ids.slice(i, i + 64).map((id) => kv.get(id)));
    for (const e of got) {
      if (!e || e.operation !== 'PUT') continue;
      const rec = decodeJson<JobRecord>(e.value);
      if (rec.status in counts) counts[rec.status as keyof typeof counts]++;
      if (rec.error_code) errorCodes[rec.error_code] = (errorCodes[rec.error_code] ?? 0) + 1;
      if (rec.ended_at) {
        const t = Date.parse(rec.ended_at);
        if (!(t <= lastEnded)) lastEnded = t;
      }
    }
  }
  let slowestOwnMs = 0;
  let slowestSpanMs = 0;
  for (const d of devices) {
    const cmds = d.stats.commands;
    slowestOwnMs = Math.max(slowestOwnMs, cmds.length * opts.latencyMs);
    if (cmds.length > 0)
      slowestSpanMs = Math.max(slowestSpanMs, cmds.at(-1)!.at + opts.latencyMs - cmds[0]!.at);
  }
  return {
    devices: devices.length,
    ...counts,
    incomplete: open.length,
    errorCodes,
    postTo202,
    lastEndedMs: lastEnded - start,
    batchEndedMs: batch.ended_at ? Date.parse(batch.ended_at) - start : NaN,
    clientSeesEndMs,
    slowestOwnMs,
    slowestSpanMs,
    cpuMsPerJob: usedPer(usageBefore, usageAfter, ids.length, 'cpuMs'),
  };
}

function printBatchReport(opts: Options, results: BatchResult[], setup: string): void {
  const col = (f: (r: BatchResult) => number, fmt: (n: number) => string) =>
    spread(results.map(f), fmt);
  const lines = [
    `svc batch benchmark: ${opts.devices} devices, one POST /v2/batches (command, show version), ${opts.latencyMs} ms per command`,
    `setup: ${setup}`,
    `machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`,
    `load average at the end: ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
    `repetitions: ${results.length}${results.length > 1 ? ' (median (min-max))' : ''}`,
    `  jobs finished/failed/cancelled/incomplete: ${results.map((r) => `${r.finished}/${r.failed}/${r.cancelled}/${r.incomplete}`).join(', ')}`,
    `  error codes: ${results.map((r) => JSON.stringify(r.errorCodes)).join(', ')}`,
    `  POST -> 202:                  ${col((r) => r.postTo202, f0)} ms`,
    `  POST -> last job ended:       ${col((r) => r.lastEndedMs / 1000, f2)} s`,
    `  POST -> batch ended_at:       ${col((r) => r.batchEndedMs / 1000, f2)} s`,
    `  POST -> GET shows the end:    ${col((r) => r.clientSeesEndMs / 1000, f2)} s`,
    `  slowest device's own time:    ${col((r) => r.slowestOwnMs, f0)} ms (commands x latency)`,
    `  longest span on one device:   ${col((r) => r.slowestSpanMs, f0)} ms`,
    `  fleet target (issue 16), 1.5 x own + 2 s: ${col((r) => (1.5 * r.slowestOwnMs + 2000) / 1000, f2)} s -> ${results.map((r) => (r.lastEndedMs <= 1.5 * r.slowestOwnMs + 2000 ? 'met' : 'not met')).join(', ')}`,
  ];
  for (const { name } of cpuWatch) {
    lines.push(
      `  CPU per job: ${name.padEnd(17)} ${col((r) => r.cpuMsPerJob[name] ?? NaN, f2)} ms`,
    );
  }
  process.stdout.write(lines.join('\n') + '\n');
  if (opts.json) process.stdout.write(JSON.stringify({ options: opts, results }, null, 2) + '\n');
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  const profileArgs = (name: string): string[] =>
    opts.cpuProf
      ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`, `--cpu-prof-name=${name}.cpuprofile`]
      : [];
  const cleanup: (() => Promise<unknown>)[] = [];
  let tearingDown = false;
  const teardown = async () => {
    tearingDown = true;
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
  };
  /**
   * A service process of the stack, stopped at teardown. One that exits before is named at once
   * with its last lines, and the run exits 1: its figures would read as the stack's (an actor
   * host gone makes every later job "incomplete", with no other sign).
   */
  const startService = (
    name: string,
    env: Record<string, string>,
    nodeArgs: readonly string[] = [],
  ): ServiceProcess => {
    const proc = ServiceProcess.start(name, env, nodeArgs);
    proc.child.once('exit', (code, signal) => {
      if (tearingDown) return;
      process.exitCode = 1;
      process.stderr.write(
        `bench: ${name} (pid ${proc.child.pid}) exited during the run (${signal ?? `code ${code}`}); its last lines:\n` +
          `${proc.output.slice(-10).join('\n')}\n`,
      );
    });
    cleanup.push(() => proc.kill('SIGTERM'));
    return proc;
  };
  process.once('SIGINT', () => void teardown().then(() => process.exit(130)));
  try {
    let baseUrl = '';
    let natsUrl: string;
    let holdPid = opts.actorPid;
    let holdContext: string | undefined;
    let setup: string;
    if (opts.url) {
      baseUrl = opts.url;
      natsUrl = opts.nats!;
      monitorUrl = opts.monitor;
      setup = `running stack at ${baseUrl}`;
    } else {
      // The monitoring endpoint gives nats-server's own message, storage and API counts.
      const monitorPort = await freePort();
      const nats = await NatsServerProcess.start({
        extraConfig: `http: "127.0.0.1:${monitorPort}"`,
      });
      monitorUrl = `http://127.0.0.1:${monitorPort}`;
      cleanup.push(() => nats.stop());
      if (nats.pid) cpuWatch.push({ name: 'nats-server', pid: nats.pid });
      natsUrl = nats.url;
      // Production-like timings; limits that would throttle a benchmark caller are lifted
      // (settings a service does not know are ignored by its config loader).
      const env = {
        LOG_LEVEL: 'ERROR',
        // testEnv's short test timings would mark a busy host lost; use production-like ones.
        HEARTBEAT_INTERVAL: '2',
        DISPATCH_HOST_LIVENESS: '15',
        WORKER_STALE_THRESHOLD: '30',
        JOB_REAPER_INTERVAL: '5',
        SHUTDOWN_GRACE: '5',
        ACTOR_MAX_SESSIONS: String(Math.max(500, opts.hold + opts.devices)),
        CONNECTION_POOL_MAX_SIZE: String(Math.max(100, opts.devices)),
        JOB_DEDUP_ENABLED: 'false',
        RATE_LIMIT_PER_MINUTE: '0',
        RATE_LIMIT_DEVICE_PER_MINUTE: '0',
        MAX_QUEUE_DEPTH: String(opts.maxQueueDepth),
        BATCH_MAX_DEVICES: String(Math.max(1000, opts.devices)),
      };
      // The memory phase runs on an actor host of its own, serving a context of its own, so that
      // its RSS starts from an idle process (a host that just ran the load phases keeps a grown
      // heap, which would hide the sessions' memory).
      const stackEnv = opts.hold > 0 ? { ...env, SVC_CONTEXTS: `default,${HOLD_CONTEXT}` } : env;
      if (opts.launcher) {
        // `npm start`: the launcher runs every service and one actor host in its one process;
        // given NATS_URL, it uses that server (the benchmark's, for the monitoring counts).
        const httpPort = await freePort();
        const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-launcher-'));
        cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
        const proc = startService(
          'launcher',
          testEnv(natsUrl, {
            ...env,
            SVC_PORT: '0',
            SVC_HTTP_PORT: String(httpPort),
            SVC_DATA_DIR: dataDir,
          }),
          profileArgs('launcher'),
        );
        if (proc.child.pid) cpuWatch.push({ name: 'svc (npm start)', pid: proc.child.pid });
        cpuWatch.push({ name: FLEET_AND_CLIENT, pid: process.pid });
        baseUrl = `http://127.0.0.1:${httpPort}`;
      } else if (opts.processes) {
        // Every service its own process, as deployed; this process runs only the fleet and
        // the load client.
        const httpPort = await freePort();
        const procs: [string, Record<string, string>][] = [
          ['gateway', { ...stackEnv, SVC_PORT: '0', SVC_HTTP_PORT: String(httpPort) }],
          ['dispatcher', stackEnv],
          ['reaper', stackEnv],
        ];
        for (const [name, e] of procs) {
          const proc = startService(name, testEnv(natsUrl, e), profileArgs(name));
          if (proc.child.pid) cpuWatch.push({ name, pid: proc.child.pid });
        }
        cpuWatch.push({ name: FLEET_AND_CLIENT, pid: process.pid });
        baseUrl = `http://127.0.0.1:${httpPort}`;
      } else {
        const stack: InProcessStack = await startInProcessStack(natsUrl, {
          actors: 0,
          env: stackEnv,
        });
        cleanup.push(() => stack.stop());
        // This process: gateway, dispatcher, reaper, the simulated fleet and the load client.
        cpuWatch.push({ name: 'gateway+dispatcher+fleet+client', pid: process.pid });
        baseUrl = stack.url;
      }
      for (let i = 0; i < (opts.launcher ? 0 : opts.actors); i++) {
        const actor = startService(
          'device-actor',
          testEnv(natsUrl, { ...env, ACTOR_HOST_ID: `bench-actor-${i + 1}` }),
          profileArgs(`device-actor-${i + 1}`),
        );
        if (actor.child.pid) cpuWatch.push({ name: `actor host ${i + 1}`, pid: actor.child.pid });
      }
      if (opts.hold > 0) {
        const holder = startService(
          'device-actor',
          testEnv(natsUrl, {
            ...env,
            WORKER_CONTEXTS: HOLD_CONTEXT,
            ACTOR_HOST_ID: 'bench-hold-actor',
            ACTOR_MAX_SESSIONS: String(Math.max(500, opts.hold)),
            CONNECTION_POOL_MAX_SIZE: String(Math.max(100, opts.hold)),
          }),
        );
        holdPid = holder.child.pid;
        holdContext = HOLD_CONTEXT;
      }
      await waitHealthy(baseUrl, 30_000);
      setup = opts.launcher
        ? `the launcher (npm start): every service and one actor host in one process, nats-server ${natsUrl}`
        : opts.processes
          ? `gateway, dispatcher, reaper and ${opts.actors} actor host(s) as separate processes, nats-server ${natsUrl}`
          : `in-process gateway+dispatcher+reaper, ${opts.actors} actor host process(es), nats-server ${natsUrl}`;
    }
    const nc: NatsConnection = await connectNats(natsUrl, BENCH_CONN);
    cleanup.push(() => nc.close());
    const kv = await new Kvm(nc).open(Buckets.jobs);
    if (opts.subjects) {
      const tapConn = await connectNats(natsUrl, TAP_CONN);
      cleanup.push(() => tapConn.close());
      const tally = new Map<string, number>();
      subjectTap = tally;
      const sub = tapConn.subscribe('>');
      void (async () => {
        for await (const m of sub) {
          const k = subjectKind(m.subject);
          tally.set(k, (tally.get(k) ?? 0) + 1);
        }
      })();
      await tapConn.flush();
    }
    streamsJsm = await jetstreamManager(nc);
    const watcher = await JobWatcher.start(kv);
    cleanup.push(() => Promise.resolve(watcher.stop()));
    const client = new Client(baseUrl, opts.concurrency);
    cleanup.push(() => Promise.resolve(client.close()));

    // The memory phase gets devices of its own: the load phases leave warm pooled sessions on
    // theirs, which would hide the sessions the memory phase opens.
    const loadPhases = opts.reps > 0 || opts.warmup > 0;
    const fleetSize = (loadPhases ? opts.devices : 0) + opts.hold;
    const fleet: Fleet = await startFleet({ count: fleetSize, commandLatencyMs: opts.latencyMs });
    cleanup.push(() => fleet.stop());
    const loadDevices = fleet.devices.slice(0, opts.devices);
    const holdDevices = fleet.devices.slice(loadPhases ? opts.devices : 0);

    const phase = (jobs: number, seed: number): PhaseSpec => ({
      jobs,
      devices: loadDevices,
      rate: opts.rate,
      concurrency: opts.concurrency,
      mix: opts.mix,
      seed,
      latencyMs: opts.latencyMs,
      timeoutMs: opts.timeoutMs,
    });
    if (opts.batch) {
      const results: BatchResult[] = [];
      for (let i = 0; i < opts.reps; i++) {
        const r = await batchPhase(opts, loadDevices, client, kv, watcher);
        process.stderr.write(
          `batch ${i + 1}/${opts.reps}: last job ended ${f1(r.lastEndedMs / 1000)} s after POST, ${r.finished} finished\n`,
        );
        results.push(r);
        await sleep(500);
      }
      printBatchReport(opts, results, setup);
      return;
    }
    if (opts.warmup > 0) {
      // Every device gets at least one job, so measured repetitions start with warm sessions
      // (as a long-running service has) and JIT-compiled code paths.
      const w = await runPhase(
        { ...phase(Math.max(opts.warmup, opts.devices), opts.seed + 999), onePerDevice: true },
        client,
        kv,
        watcher,
      );
      process.stderr.write(`warm-up: ${w.finished}/${w.jobs} finished in ${f1(w.wallSeconds)} s\n`);
    }
    if (opts.idleSeconds > 0) await idlePhase(opts.idleSeconds);
    const reps: PhaseResult[] = [];
    for (let i = 0; i < opts.reps; i++) {
      // Same seed each repetition: the same device/kind sequence, so reps differ only by noise.
      const r = await runPhase(phase(opts.jobs, opts.seed), client, kv, watcher);
      process.stderr.write(
        `rep ${i + 1}/${opts.reps}: ${f1(r.jobsPerSecond)} jobs/s, ${r.finished} finished\n`,
      );
      reps.push(r);
      await sleep(500);
    }
    let hold: HoldResult | null = null;
    if (opts.hold > 0) {
      if (!holdPid) process.stderr.write('memory phase skipped: no actor host pid (--actor-pid)\n');
      else hold = await holdPhase(opts, holdDevices, holdPid, holdContext, client, kv, watcher);
    }
    printReport(opts, reps, hold, setup);
  } finally {
    await teardown();
  }
}

main().then(
  // 1 when a service of the stack exited during the run (startService).
  () => process.exit(process.exitCode ?? 0),
  (err: unknown) => {
    process.stderr.write(
      `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
