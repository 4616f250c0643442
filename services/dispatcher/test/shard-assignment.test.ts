import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { planShards, type ShardChange, type ShardEntry } from '../src/shard-assignment.js';

const SHARDS = 32;

/**
 * The entries after the changes are written and every asked owner has released (what the
 * dispatcher and the owners do between two plans): the settled state the next plan starts from.
 */
function settle(
  entries: Map<number, ShardEntry>,
  hosts: readonly string[],
  rounds = 4,
): { entries: Map<number, ShardEntry>; moves: number } {
  let moves = 0;
  for (let round = 0; round < rounds; round++) {
    const changes = planShards(SHARDS, hosts, entries);
    if (changes.length === 0) return { entries, moves };
    for (const c of changes) apply(entries, c);
    // Each owner asked gives the shard up (docs/shards.md: release), and the next plan assigns it.
    for (const [shard, e] of entries) {
      if (e.state === 'releasing') {
        entries.set(shard, { ...e, state: 'released' });
        moves++;
      }
    }
  }
  assert.deepEqual(planShards(SHARDS, hosts, entries), [], 'settles within a few plans');
  return { entries, moves };
}

function apply(entries: Map<number, ShardEntry>, c: ShardChange): void {
  const before = entries.get(c.shard);
  if (c.kind === 'assign') {
    assert.equal(c.epoch, (before?.epoch ?? 0) + 1, `shard ${c.shard}: the next epoch`);
    entries.set(c.shard, { host: c.host, epoch: c.epoch, state: 'owned' });
  } else {
    assert.ok(before, `shard ${c.shard} has an owner to release it`);
    assert.equal(before.host, c.from);
    entries.set(c.shard, { ...before, state: 'releasing', to: c.to });
  }
}

function loads(entries: Map<number, ShardEntry>): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of entries.values()) out.set(e.host, (out.get(e.host) ?? 0) + 1);
  return out;
}

function assertSpread(entries: Map<number, ShardEntry>, hosts: readonly string[]): void {
  assert.equal(entries.size, SHARDS);
  for (const e of entries.values()) {
    assert.equal(e.state, 'owned');
    assert.ok(hosts.includes(e.host), `${e.host} is live`);
  }
  const bound = Math.ceil(SHARDS / hosts.length);
  for (const [host, n] of loads(entries)) assert.ok(n <= bound, `${host} holds ${n} > ${bound}`);
}

test('when shards are first assigned over three hosts, then each host owns 10 or 11, the same whichever order the hosts are listed in', () => {
  const a = settle(new Map(), ['h1', 'h2', 'h3']).entries;
  const b = settle(new Map(), ['h3', 'h1', 'h2']).entries;
  assertSpread(a, ['h1', 'h2', 'h3']);
  assert.deepEqual([...loads(a).values()].sort(), [10, 11, 11]);
  assert.deepEqual([...a.entries()].sort(), [...b.entries()].sort());
});

test('when an owner is gone, then only its shards move, at once, to a new epoch, and no live owner is asked for any', () => {
  const { entries } = settle(new Map(), ['h1', 'h2', 'h3']);
  const before = new Map(entries);
  const changes = planShards(SHARDS, ['h1', 'h3'], entries);
  const h2Shards = [...before].filter(([, e]) => e.host === 'h2').map(([s]) => s);
  assert.deepEqual(
    changes.map((c) => c.shard).sort((x, y) => x - y),
    h2Shards,
  );
  for (const c of changes) {
    assert.equal(c.kind, 'assign', 'a gone owner is not asked');
    if (c.kind === 'assign') assert.equal(c.epoch, before.get(c.shard)!.epoch + 1);
  }
  for (const c of changes) apply(entries, c);
  assertSpread(entries, ['h1', 'h3']);
});

test('when a host joins, then owners release only the shards they hold above the bound, and the new host gets them', () => {
  const { entries } = settle(new Map(), ['h1', 'h2', 'h3']);
  const before = new Map(entries);
  const changes = planShards(SHARDS, ['h1', 'h2', 'h3', 'h4'], entries);
  assert.ok(changes.length > 0);
  for (const c of changes) {
    assert.equal(c.kind, 'release', 'a live owner gives its shard up; nothing is taken from it');
    if (c.kind === 'release') assert.equal(c.to, 'h4');
  }
  const { moves } = settle(entries, ['h1', 'h2', 'h3', 'h4']);
  assertSpread(entries, ['h1', 'h2', 'h3', 'h4']);
  // 32 over 4: 8 each, so 8 move to the new host and no shard moves between the old ones.
  assert.equal(moves, 8);
  for (const [shard, e] of entries) {
    if (e.host !== 'h4') assert.equal(e.host, before.get(shard)!.host);
  }
});

test('when a release is under way and its owner or its target leaves, then the shard goes on to a live host', () => {
  const entries = new Map<number, ShardEntry>([
    [0, { host: 'h1', epoch: 4, state: 'releasing', to: 'h2' }],
    [1, { host: 'h1', epoch: 2, state: 'releasing', to: 'h3' }],
    [2, { host: 'h3', epoch: 7, state: 'released', to: 'h2' }],
  ]);
  // h1 gone: shard 0 to its target at once; h3 gone: shard 1 released to another live host.
  const changes = planShards(3, ['h2', 'h4'], entries);
  const byShard = new Map(changes.map((c) => [c.shard, c]));
  assert.deepEqual(byShard.get(0), { shard: 0, kind: 'assign', host: 'h2', epoch: 5 });
  const one = byShard.get(1)!;
  assert.equal(one.kind, 'assign');
  assert.ok(one.kind === 'assign' && ['h2', 'h4'].includes(one.host) && one.epoch === 3);
  const two = byShard.get(2)!;
  assert.ok(two.kind === 'assign' && two.epoch === 8);
  // A release whose owner and target both live is left alone.
  const underWay = new Map<number, ShardEntry>([
    [0, { host: 'h1', epoch: 1, state: 'releasing', to: 'h2' }],
  ]);
  assert.deepEqual(planShards(1, ['h1', 'h2'], underWay), []);
  // Its target gone, the live owner is asked again for another.
  assert.deepEqual(planShards(1, ['h1', 'h3'], underWay), [
    { shard: 0, kind: 'release', from: 'h1', to: 'h3' },
  ]);
});

test('when no host is live, then nothing is assigned', () => {
  assert.deepEqual(planShards(SHARDS, [], new Map()), []);
});

test('when hosts come and go at random, then every plan settles with each shard owned by one live host within the bound, and epochs only grow', () => {
  const pool = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'];
  fc.assert(
    fc.property(
      fc.array(fc.subarray(pool, { minLength: 1 }), { minLength: 1, maxLength: 8 }),
      (steps) => {
        let entries = new Map<number, ShardEntry>();
        for (const hosts of steps) {
          const epochs = new Map([...entries].map(([s, e]) => [s, e.epoch]));
          entries = settle(entries, hosts).entries;
          assertSpread(entries, hosts);
          for (const [s, e] of entries) assert.ok(e.epoch >= (epochs.get(s) ?? 1));
        }
      },
    ),
    { numRuns: 200 },
  );
});

test('when an owner is only silent (beating late, not reaped), then its shards stay where they are', () => {
  const { entries } = settle(new Map(), ['h1', 'h2', 'h3']);
  const changes = planShards(SHARDS, ['h1', 'h3'], entries, new Set(['h2']));
  assert.deepEqual(changes, []);
});
