import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConsumerInfo, JetStreamManager } from '@nats-io/jetstream';
import { Consumers, JOB_SHARDS } from '@svc/proto';
import { QueueDepth } from '../src/queue-depth.js';

// The fresh backlog read (the MAX_QUEUE_DEPTH check) shares reads between callers, and a
// caller never gets a read that began before it called. The listing is a stand-in answered by
// the test: when each read begins and what it finds is what is being checked.

/** A consumer listing whose reads the test answers one by one, with a backlog each. */
class Listings {
  readonly #waiting: ((found: number | Error) => void)[] = [];
  #begun = 0;

  get begun(): number {
    return this.#begun;
  }

  /** Answers the oldest read still waiting: every consumer of `default` holds `found`, or it fails. */
  answer(found: number | Error): void {
    const next = this.#waiting.shift();
    assert.ok(next, 'no read is waiting');
    next(found);
  }

  manager(): JetStreamManager {
    const list = (): AsyncIterable<ConsumerInfo> => {
      this.#begun++;
      const found = new Promise<number | Error>((resolve) => this.#waiting.push(resolve));
      return (async function* () {
        const backlog = await found;
        if (backlog instanceof Error) throw backlog;
        const names = [Consumers.dispatch('default')];
        for (let n = 0; n < JOB_SHARDS; n++) names.push(Consumers.shard('default', n));
        for (const name of names) {
          yield { name, num_pending: backlog, num_ack_pending: 0 } as ConsumerInfo;
        }
      })();
    };
    return { consumers: { list } } as unknown as JetStreamManager;
  }
}

/** Resolves once the microtasks queued so far have run (a promise chain's next steps). */
const settled = () => new Promise<void>((r) => setImmediate(r));

test('when checks come while a backlog read is under way, then they share the next read, which begins after it', async () => {
  const listings = new Listings();
  const depth = new QueueDepth(listings.manager(), ['default']);
  const perConsumer = JOB_SHARDS + 1;

  const first = depth.forContext('default');
  await settled();
  assert.equal(listings.begun, 1);
  // Three checks while the first read is under way: none of them may take its answer.
  const later = [
    depth.forContext('default'),
    depth.forContext('default'),
    depth.forContext('default'),
  ];
  await settled();
  assert.equal(listings.begun, 1, 'a later check began a read of its own');

  listings.answer(1);
  assert.equal(await first, perConsumer);
  await settled();
  assert.equal(listings.begun, 2, 'the later checks share one read, begun once the first ended');
  listings.answer(2);
  assert.deepEqual(await Promise.all(later), [2 * perConsumer, 2 * perConsumer, 2 * perConsumer]);

  // With no read under way, a check begins one at once.
  const alone = depth.forContext('default');
  await settled();
  assert.equal(listings.begun, 3);
  listings.answer(0);
  assert.equal(await alone, 0);
});

test('when a backlog read fails, then the checks waiting behind it get a read of their own', async () => {
  const listings = new Listings();
  const depth = new QueueDepth(listings.manager(), ['default']);
  const first = depth.forContext('default');
  const behind = depth.forContext('default');
  await settled();
  listings.answer(new Error('no responders'));
  await assert.rejects(first, /no responders/);
  await settled();
  assert.equal(listings.begun, 2);
  listings.answer(1);
  assert.equal(await behind, JOB_SHARDS + 1);
});
