import { createHash } from 'node:crypto';

/** What the dispatcher knows of one shard's owner (`ShardOwner` in `svc-locks`). */
export interface ShardEntry {
  host: string;
  epoch: number;
  state: 'owned' | 'releasing' | 'released';
  /** While `releasing`: the host it goes to next. */
  to?: string;
}

/** What the leading dispatcher writes for one shard (each by compare-and-set on the entry). */
export type ShardChange =
  /** A new owner at `epoch` (the entry's + 1, or 1): it takes the shard (docs/shards.md). */
  | { shard: number; kind: 'assign'; host: string; epoch: number }
  /** The live owner is asked to give the shard up for `to` (`releasing`). */
  | { shard: number; kind: 'release'; from: string; to: string };

/**
 * Which live host should own each shard of a context, as changes to the entries there are.
 *
 * Bounded-load rendezvous: a shard goes to the live host with the highest rendezvous score for
 * it among those holding fewer than `ceil(shards / hosts)`, so the shards spread within one of
 * even and the assignment depends on the hosts only, not on the order they came in. A live owner
 * keeps its shards (its devices' warm sessions, no hand-over) up to that bound: when a host
 * joins, only the shards an owner holds above the bound move, those it scores lowest first, and
 * they are released by their owner (`release`), never taken from it. A shard whose owner is gone
 * (`hosts` no longer lists it) is assigned at once: a gone owner is not asked, it is fenced.
 * A shard of a `silent` owner (beating late, not yet reaped) is left where it is: a host that is
 * only slow keeps its shards, as it keeps its devices today.
 */
export function planShards(
  shards: number,
  hosts: readonly string[],
  entries: ReadonlyMap<number, ShardEntry>,
  silent: ReadonlySet<string> = new Set(),
): ShardChange[] {
  if (hosts.length === 0) return [];
  const live = new Set(hosts);
  const bound = Math.ceil(shards / hosts.length);
  const load = new Map<string, number>(hosts.map((h) => [h, 0]));
  const score = (shard: number, host: string) => rendezvousScore(`shard:${shard}`, host);

  // Kept: each live owner's shards up to the bound, those it scores highest first. A shard being
  // released is not kept: it is on its way to its `to`, which it already counts against.
  const kept = new Map<number, string>();
  const byOwner = new Map<string, number[]>();
  for (const [shard, entry] of entries) {
    if (entry.state !== 'owned' || !live.has(entry.host)) continue;
    byOwner.set(entry.host, [...(byOwner.get(entry.host) ?? []), shard]);
  }
  for (const [host, owned] of byOwner) {
    owned.sort((a, b) => compareScores(score(b, host), score(a, host)) || a - b);
    for (const shard of owned.slice(0, bound)) kept.set(shard, host);
    load.set(host, Math.min(owned.length, bound));
  }
  const bump = (host: string) => load.set(host, load.get(host)! + 1);
  for (const entry of entries.values()) {
    if (entry.state === 'releasing' && entry.to !== undefined && live.has(entry.to)) bump(entry.to);
  }

  const pick = (shard: number): string => {
    let best: string | null = null;
    let bestScore = -1n;
    for (const host of hosts) {
      if (load.get(host)! >= bound) continue;
      const s = score(shard, host);
      if (s > bestScore) [best, bestScore] = [host, s];
    }
    // Every host at the bound cannot happen while a shard is left: bound × hosts ≥ shards.
    return best!;
  };

  const changes: ShardChange[] = [];
  const assign = (shard: number, host: string, entry: ShardEntry | undefined) =>
    changes.push({ shard, kind: 'assign', host, epoch: (entry?.epoch ?? 0) + 1 });
  for (let shard = 0; shard < shards; shard++) {
    if (kept.has(shard)) continue;
    const entry = entries.get(shard);
    if (entry && entry.state !== 'released' && silent.has(entry.host)) continue;
    const ownerLive = entry !== undefined && live.has(entry.host);
    if (entry?.state === 'releasing') {
      const toLive = entry.to !== undefined && live.has(entry.to);
      if (ownerLive && toLive) continue; // under way
      const to = toLive ? entry.to! : pick(shard);
      if (!toLive) bump(to);
      // The owner left meanwhile: not asked, the next owner takes it. Its target left: another.
      if (ownerLive) changes.push({ shard, kind: 'release', from: entry.host, to });
      else assign(shard, to, entry);
      continue;
    }
    if (entry?.state === 'released' && entry.to !== undefined && live.has(entry.to)) {
      if (load.get(entry.to)! < bound) {
        bump(entry.to);
        assign(shard, entry.to, entry);
        continue;
      }
    }
    const host = pick(shard);
    bump(host);
    // Held above the bound by a live owner: it gives the shard up first.
    if (entry?.state === 'owned' && ownerLive) {
      changes.push({ shard, kind: 'release', from: entry.host, to: host });
    } else {
      assign(shard, host, entry);
    }
  }
  return changes;
}

function compareScores(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The rendezvous (highest random weight) score of `hostId` for `key`: sha-256, first 64 bits. */
export function rendezvousScore(key: string, hostId: string): bigint {
  return createHash('sha256').update(key).update('\0').update(hostId).digest().readBigUInt64BE(0);
}
