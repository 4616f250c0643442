/**
 * What nats-server itself counts, read from its monitoring endpoint before and after a phase:
 * messages in and out (`/varz`, and per client connection from `/connz`), messages stored per
 * stream (`/jsz`: the streams' last sequence numbers, so that work-queue and KV deletions do not
 * hide a write) and JetStream API calls (`/jsz` `api.total`). Divided by the jobs run they are
 * the per-job message cost in docs/performance.md.
 */

export interface NatsSnapshot {
  inMsgs: number;
  outMsgs: number;
  apiTotal: number;
  /** Messages ever stored, per stream (last sequence number). */
  streams: Record<string, number>;
  /** Messages in (from the client) and out (to the client), per connection name. */
  conns: Record<string, { in: number; out: number }>;
}

interface Varz {
  in_msgs: number;
  out_msgs: number;
}
interface Jsz {
  api?: { total?: number };
  account_details?: { stream_detail?: { name: string; state?: { last_seq?: number } }[] }[];
}
interface Connz {
  connections?: { name?: string; in_msgs: number; out_msgs: number }[];
}

async function getJson<T>(base: string, path: string): Promise<T> {
  const res = await fetch(new URL(path, base));
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

export async function natsSnapshot(base: string): Promise<NatsSnapshot> {
  const [varz, jsz, connz] = await Promise.all([
    getJson<Varz>(base, '/varz'),
    getJson<Jsz>(base, '/jsz?accounts=true&streams=true'),
    getJson<Connz>(base, '/connz?limit=4096'),
  ]);
  const streams: Record<string, number> = {};
  for (const account of jsz.account_details ?? []) {
    for (const s of account.stream_detail ?? []) streams[s.name] = s.state?.last_seq ?? 0;
  }
  const conns: Record<string, { in: number; out: number }> = {};
  for (const c of connz.connections ?? []) {
    const name = c.name || '(unnamed)';
    const sum = (conns[name] ??= { in: 0, out: 0 });
    sum.in += c.in_msgs;
    sum.out += c.out_msgs;
  }
  return {
    inMsgs: varz.in_msgs,
    outMsgs: varz.out_msgs,
    apiTotal: jsz.api?.total ?? 0,
    streams,
    conns,
  };
}

/** Per-job NATS counts of a phase, the benchmark's own traffic taken out. */
export interface NatsPerJob {
  /** Messages the server received from the services (publishes, requests, replies, acks). */
  in: number;
  /** Messages the server delivered to the services (subscriptions, replies, consumer pushes). */
  out: number;
  /** in + out: every message through nats-server. */
  total: number;
  /** Messages written to streams (KV buckets included). */
  stored: number;
  /** JetStream API requests (`$JS.API.>`; KV gets and direct gets are not API calls). */
  apiCalls: number;
  storedByStream: Record<string, number>;
  /** in/out per job of each connection name. */
  byConnection: Record<string, { in: number; out: number }>;
}

/**
 * @param own the benchmark's connection names (its KV watch and reads are not svc's cost)
 * @param ownApiCalls JetStream API requests the benchmark itself made during the phase
 */
export function natsPerJob(
  before: NatsSnapshot,
  after: NatsSnapshot,
  jobs: number,
  own: readonly string[],
  ownApiCalls: number,
): NatsPerJob {
  const n = Math.max(1, jobs);
  const byConnection: Record<string, { in: number; out: number }> = {};
  for (const [name, a] of Object.entries(after.conns)) {
    const b = before.conns[name] ?? { in: 0, out: 0 };
    byConnection[name] = { in: (a.in - b.in) / n, out: (a.out - b.out) / n };
  }
  const ownConn = { in: 0, out: 0 };
  for (const name of own) {
    ownConn.in += byConnection[name]?.in ?? 0;
    ownConn.out += byConnection[name]?.out ?? 0;
  }
  const storedByStream: Record<string, number> = {};
  let stored = 0;
  for (const [name, seq] of Object.entries(after.streams)) {
    const d = seq - (before.streams[name] ?? 0);
    if (d === 0) continue;
    storedByStream[name] = d / n;
    stored += d;
  }
  const inPer = (after.inMsgs - before.inMsgs) / n - ownConn.in;
  const outPer = (after.outMsgs - before.outMsgs) / n - ownConn.out;
  return {
    in: inPer,
    out: outPer,
    total: inPer + outPer,
    stored: stored / n,
    apiCalls: (after.apiTotal - before.apiTotal - ownApiCalls) / n,
    storedByStream,
    byConnection,
  };
}

/**
 * A subject with its ids taken out, so that messages of one kind count together:
 * `svc.events.job.<id>.finished` -> `svc.events.job.*.finished`, `$KV.svc-jobs.<id>` ->
 * `$KV.svc-jobs.*`, `_INBOX.<nuid>.<n>` -> `_INBOX.*` (replies, acks, consumer deliveries).
 */
export function subjectKind(subject: string): string {
  const t = subject.split('.');
  if (t[0] === '_INBOX') return '_INBOX.* (replies, pull and watch deliveries)';
  if (t[0] === '$KV') return `$KV.${t[1]}.*`;
  if (t[0] === '$JS' && t[1] === 'ACK') return `$JS.ACK.${t[2]}.*`;
  if (t[0] === '$JS' && t[1] === 'API') {
    // A direct get names its stream (`$JS.API.DIRECT.GET.<stream>.<subject>`).
    const keep = t[2] === 'DIRECT' ? 5 : 4;
    return t.slice(0, keep).join('.') + (t.length > keep ? '.*' : '');
  }
  if (t[0] === '$JS' && t[1] === 'FC') return '$JS.FC.*';
  if (t[0] === 'svc' && t[1] === 'events' && t[2] === 'job') return `svc.events.job.*.${t[4]}`;
  if (t[0] === 'svc' && t[1] === 'events' && t[2] === 'batch') return `svc.events.batch.*`;
  if (t[0] === 'svc' && t.length >= 3) return `${t[0]}.${t[1]}.*`;
  return t.length > 2 ? `${t[0]}.${t[1]}.*` : subject;
}
