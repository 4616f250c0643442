import { createHash } from 'node:crypto';
import { missingCapabilities, type HostDrain, type WorkerHeartbeat } from '@svc/proto';

/** What a host's heartbeat says: beating, silent for longer than the liveness, or leaving. */
export type HostState = 'live' | 'suspect' | 'gone';

/** A device's host and the last job placed there (its earlier jobs run before it, in order). */
interface DevicePlacement {
  host: string;
  lastJob: string;
  /** The job placed before `lastJob` (its `Headers.after`: it starts once that one has ended). */
  jobBefore?: string;
  /** Where its handed-back jobs go (chosen by the first one), while they come back. */
  next?: string;
  /** When its host was first seen gone while its last job had not ended. */
  goneSince?: number;
  /** When it was last checked for a move to its preferred host (rebalancing). */
  rebalanceCheckedAt?: number;
}

/** How often a device off its preferred host is checked for a move, at most. */
const REBALANCE_CHECK_MS = 10_000;

/** A job to place: new (from the gateway) or handed back from a host that left. */
export interface JobToPlace {
  id: string;
  /** A copy handed back by the reaper or a stopping host (`placement` > 0). */
  handBack: boolean;
  /**
   * Capabilities the job needs of its host (the envelope's `requires`): only a host whose
   * heartbeat lists them all may run it; none live, the job waits for one.
   */
  requires?: readonly string[];
}

/**
 * Which actor host runs a device. A device stays on its host while that host is live (so its
 * jobs stay in order and never run on two hosts at once); a new device, or one whose jobs have
 * all ended, goes to the host with the highest rendezvous score among live hosts serving the
 * context, which spreads devices evenly and moves few of them when hosts come and go.
 *
 * A device's jobs keep their order when its host fails: while the host is only silent
 * (`suspect`: no heartbeat within the liveness, not yet reaped), a device with a job not yet
 * ended there keeps being placed there, behind that job; the reaper hands all of them back
 * together, in order. Once the host is `gone` (draining, or its heartbeat removed), the
 * device's next new job waits until the last job placed on the old host has come back and
 * been placed again (handed-back jobs go first, all to one host) or has ended.
 *
 * The reaper's drains (`drainUpdate`) decide over the host's own heartbeat, which a host that
 * was only frozen sends again in the middle of them: while a drain is under way nothing is
 * placed on the host; once done, a device whose last job it handed back waits for that job's
 * new placement, and a device of which it handed back nothing goes on at once.
 */
export class Placement {
  readonly #hosts = new Map<string, WorkerHeartbeat>();
  readonly #devices = new Map<string, DevicePlacement>();
  /** The reaper's drains of hosts (`HostDrain`): under way, and the jobs handed back. */
  readonly #drains = new Map<string, { since: number | undefined; handedBack: Set<string> }>();
  /** What a device's preferred host is chosen by, when not by its own key (`prefer`). */
  readonly #preferBy = new Map<string, string>();

  /**
   * @param livenessMs heartbeat age within which a host is live (DISPATCH_HOST_LIVENESS)
   * @param handBackWaitMs how long a device waits for its jobs to come back from a host that
   * is gone before it moves on anyway (a hand-back that never comes must not hold it forever)
   */
  constructor(
    private readonly livenessMs: number,
    private readonly handBackWaitMs = 60_000,
    /**
     * How long a device's last job must have ended before the device moves to its preferred
     * host (a host that joined or came back): the old host's warm session for it has closed by
     * then (CONNECTION_POOL_TTL), so the device never has two sessions. 0 turns moves off.
     */
    private readonly rebalanceIdleMs = 0,
  ) {}

  /**
   * Chooses a device's preferred host by `key` instead of its own key: every address of one
   * device (its pinned host key) prefers one host. Where the device is placed already it stays
   * (its jobs keep their order) until it may move (`rebalanceIdleMs`).
   */
  prefer(deviceKey: string, key: string): void {
    if (key === deviceKey) this.#preferBy.delete(deviceKey);
    else this.#preferBy.set(deviceKey, key);
  }

  /**
   * Where the previous leader last placed a device (`LockKeys.placement`), or null: read for a
   * device this dispatcher has placed nothing for since it took the lead.
   */
  knownHost: (deviceKey: string) => string | null = () => null;

  /**
   * When the copy of the heartbeats fed to `update` was last known to hold every beat (its
   * watch's `currentAt`). A host is judged by its beats as of then: while the copy is cut off
   * (its watch waiting for a new consumer after a NATS node died) the hosts go on beating
   * unseen, and judged by the clock every one of them would look silent and nothing new placed.
   */
  heartbeatsCurrentAt: () => number = () => Infinity;

  /**
   * Forgets what this dispatcher knew of devices (it took the lead: another leader may have
   * placed them since); `knownHost` tells where they are.
   */
  forgetDevices(context: string): void {
    for (const key of this.#devices.keys()) {
      if (key.startsWith(`${context}|`)) this.#devices.delete(key);
    }
  }

  /** The host the device's jobs go to now, if this dispatcher placed any. */
  hostOf(deviceKey: string): string | null {
    return this.#devices.get(deviceKey)?.host ?? null;
  }

  /** Feeds the reaper's latest drain of a host (`HostDrain`), or its removal as null. */
  drainUpdate(hostId: string, drain: HostDrain | null, now = Date.now()): void {
    if (!drain) {
      this.#drains.delete(hostId);
      return;
    }
    const known = this.#drains.get(hostId);
    // Jobs handed back by an earlier drain of the host and not placed yet stay awaited.
    const handedBack = known?.handedBack ?? new Set<string>();
    for (const jobId of drain.handed_back) handedBack.add(jobId);
    const since = drain.state === 'draining' ? (known?.since ?? now) : undefined;
    this.#drains.set(hostId, { since, handedBack });
  }

  /** Feeds a heartbeat (or its deletion, as null) from the `svc-workers` watch. */
  update(hostId: string, beat: WorkerHeartbeat | null): void {
    if (beat) this.#hosts.set(hostId, beat);
    else this.#hosts.delete(hostId);
  }

  hostState(hostId: string, now = Date.now()): HostState {
    const beat = this.#hosts.get(hostId);
    // Under a drain, whatever its own beat says: a job placed there now would be handed back
    // by it (a copy placed back on it again, and again, while the drain runs).
    if (!beat || beat.draining || this.#drainUnderWay(hostId, now)) return 'gone';
    const asOf = Math.min(now, this.heartbeatsCurrentAt());
    return asOf - Date.parse(beat.last_beat) <= this.livenessMs ? 'live' : 'suspect';
  }

  liveHosts(context: string, now = Date.now(), requires?: readonly string[]): string[] {
    const out: string[] = [];
    for (const [id, beat] of this.#hosts) {
      if (!beat.contexts.includes(context)) continue;
      if (missingCapabilities(requires, beat.capabilities).length > 0) continue;
      if (this.hostState(id, now) === 'live') out.push(id);
    }
    return out;
  }

  /** The hosts serving the context that beat late and are not reaped (`suspect`). */
  silentHosts(context: string, now = Date.now()): string[] {
    return [...this.#hosts]
      .filter(
        ([id, beat]) => beat.contexts.includes(context) && this.hostState(id, now) === 'suspect',
      )
      .map(([id]) => id);
  }

  /**
   * The host for a device's job, or null to hold the job for now (no live host serves the
   * context, or the device's earlier jobs are coming back from a host that left). `endedAt`
   * tells when a job ended (ms; 0 when it has no record), or null while it has not (or the
   * store does not answer): read only when the device's host is not live, or the device is
   * off its preferred host.
   */
  async place(
    context: string,
    deviceKey: string,
    job: JobToPlace,
    endedAt: (jobId: string) => Promise<number | null>,
    now = Date.now(),
  ): Promise<string | null> {
    const current = this.#devices.get(deviceKey);
    if (job.handBack) return this.#placeHandBack(context, deviceKey, job, current, now);
    if (!current) {
      // Placed by a previous leader: its earlier jobs may be queued there, so it stays while
      // that host is live or only silent (then they come back in order, this one behind them).
      // Not moved for rebalancing before one check interval has passed.
      const known = this.knownHost(deviceKey);
      if (known !== null && this.hostState(known, now) !== 'gone') {
        this.#devices.set(deviceKey, { host: known, lastJob: job.id, rebalanceCheckedAt: now });
        return known;
      }
    }
    const isSettled = async (jobId: string) => (await endedAt(jobId)) !== null;
    if (current && !this.#capable(current.host, job.requires)) {
      // The device's host would misread this job (an earlier release): the job waits until
      // the device's jobs there have ended (or, that host gone, the hand-back wait passed),
      // then the device moves to a host that can run it.
      if (!(await isSettled(current.lastJob))) {
        if (this.hostState(current.host, now) !== 'gone') return null;
        current.goneSince ??= now;
        if (now - current.goneSince < this.handBackWaitMs) return null;
      }
      const host = this.#pick(context, deviceKey, now, job.requires);
      if (host) this.#moveTo(deviceKey, host, job.id, current);
      return host;
    }
    if (current && (await this.#heldByDrain(current, isSettled, now))) return null;
    if (current) {
      const state = this.hostState(current.host, now);
      if (state === 'live') {
        if (!(await this.#idleOffPreferred(context, deviceKey, current, endedAt, now))) {
          this.#follow(current, job.id);
          current.goneSince = undefined;
          return current.host;
        }
        // Rebalanced: no job of the device is queued or running, and none has run for long
        // enough that the old host holds no session for it.
      }
      if (!(await isSettled(current.lastJob))) {
        // Silent but not reaped: behind its earlier jobs, handed back with them, in order.
        if (state === 'suspect') {
          this.#follow(current, job.id);
          return current.host;
        }
        current.goneSince ??= now;
        if (now - current.goneSince < this.handBackWaitMs) return null;
      }
    }
    const host = this.#pick(context, deviceKey, now, job.requires);
    if (host) this.#moveTo(deviceKey, host, job.id, current);
    return host;
  }

  /**
   * The device's job placed just before `jobId` (a new job this dispatcher just placed), or
   * undefined when it knows none: the placement's `Headers.after`.
   */
  jobBefore(deviceKey: string, jobId: string): string | undefined {
    const current = this.#devices.get(deviceKey);
    return current?.lastJob === jobId ? current.jobBefore : undefined;
  }

  /** The device's jobs go to `host` from `jobId` on (behind its last job wherever that was). */
  #moveTo(deviceKey: string, host: string, jobId: string, current?: DevicePlacement): void {
    const jobBefore = current && jobBeforeOf(current, jobId);
    this.#devices.set(deviceKey, { host, lastJob: jobId, ...(jobBefore ? { jobBefore } : {}) });
  }

  #follow(current: DevicePlacement, jobId: string): void {
    current.jobBefore = jobBeforeOf(current, jobId);
    current.lastJob = jobId;
  }

  /**
   * True while the device must wait for a drain of its host, whatever that host's heartbeat
   * says (a frozen host's beat overwrites the reaper's draining mark): the drain is under way
   * and the device's last job there has not ended, or the drain handed that job back and its
   * copy has not been placed yet (`handedBack`). A drain that handed back nothing of the device
   * holds it no longer than the drain lasts. Bounded by `handBackWaitMs` (a reaper that died
   * during a drain leaves it under way).
   */
  async #heldByDrain(
    current: DevicePlacement,
    isSettled: (jobId: string) => Promise<boolean>,
    now: number,
  ): Promise<boolean> {
    const drain = this.#drains.get(current.host);
    if (!drain) return false;
    if (!this.#drainUnderWay(current.host, now) && !drain.handedBack.has(current.lastJob)) {
      return false;
    }
    if (await isSettled(current.lastJob)) return false;
    current.goneSince ??= now;
    return now - current.goneSince < this.handBackWaitMs;
  }

  /**
   * Whether a drain of the host is under way, seen so for less than `handBackWaitMs` (one that
   * lasts longer belongs to a reaper that stopped during it: the host is not shunned for good).
   */
  #drainUnderWay(hostId: string, now: number): boolean {
    const since = this.#drains.get(hostId)?.since;
    return since !== undefined && now - since < this.handBackWaitMs;
  }

  /** Whether the host's last heartbeat lists every capability in `requires`. */
  #capable(hostId: string, requires: readonly string[] | undefined): boolean {
    return missingCapabilities(requires, this.#hosts.get(hostId)?.capabilities).length === 0;
  }

  /** True when the device may move to its preferred host (another live host). */
  async #idleOffPreferred(
    context: string,
    deviceKey: string,
    current: DevicePlacement,
    endedAt: (jobId: string) => Promise<number | null>,
    now: number,
  ): Promise<boolean> {
    if (this.rebalanceIdleMs <= 0) return false;
    if (this.#pick(context, deviceKey, now) === current.host) return false;
    if (current.rebalanceCheckedAt !== undefined) {
      if (now - current.rebalanceCheckedAt < REBALANCE_CHECK_MS) return false;
    }
    current.rebalanceCheckedAt = now;
    const ended = await endedAt(current.lastJob);
    return ended !== null && now - ended >= this.rebalanceIdleMs;
  }

  #placeHandBack(
    context: string,
    deviceKey: string,
    job: JobToPlace,
    current: DevicePlacement | undefined,
    now: number,
  ): string | null {
    const usable = (h: string | undefined): h is string =>
      h !== undefined &&
      this.hostState(h, now) === 'live' &&
      this.#hosts.get(h)!.contexts.includes(context) &&
      this.#capable(h, job.requires);
    const host = usable(current?.next)
      ? current.next
      : usable(current?.host)
        ? current.host
        : this.#pick(context, deviceKey, now, job.requires);
    if (!host) return null;
    if (current) current.next = host;
    return host;
  }

  /**
   * Told once a handed-back job is on its new host (published): when it is the last job the
   * device had on its old host, the device has moved and its new jobs may follow.
   */
  handedBack(deviceKey: string, job: JobToPlace, host: string): void {
    for (const drain of this.#drains.values()) drain.handedBack.delete(job.id);
    const current = this.#devices.get(deviceKey);
    if (!current || current.lastJob === job.id)
      this.#devices.set(deviceKey, { host, lastJob: job.id });
  }

  /** The live host (with `requires`) with the highest rendezvous score for the device, or null. */
  #pick(
    context: string,
    deviceKey: string,
    now: number,
    requires?: readonly string[],
  ): string | null {
    let best: string | null = null;
    let bestScore = -1n;
    const by = this.#preferBy.get(deviceKey) ?? deviceKey;
    for (const host of this.liveHosts(context, now, requires)) {
      const score = rendezvousScore(by, host);
      if (score > bestScore) {
        best = host;
        bestScore = score;
      }
    }
    return best;
  }
}

/** The job placed before `jobId`; a redelivered job placed again keeps the one it had. */
function jobBeforeOf(current: DevicePlacement, jobId: string): string | undefined {
  return current.lastJob === jobId ? current.jobBefore : current.lastJob;
}

export function rendezvousScore(deviceKey: string, hostId: string): bigint {
  return createHash('sha256')
    .update(deviceKey)
    .update('\0')
    .update(hostId)
    .digest()
    .readBigUInt64BE(0);
}
