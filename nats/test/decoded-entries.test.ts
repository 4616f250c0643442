import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardOwner, decodeOrDrop, encodeJson, type DropContext } from '@svc/proto';
import { decodedEntries, type BucketWatchEntry } from '../src/bucket-watch.js';

type Entry = Pick<BucketWatchEntry, 'key' | 'value' | 'operation' | 'revision'>;

function entries(list: Entry[]): AsyncIterable<Entry> {
  return {
    [Symbol.asyncIterator]: () => {
      let i = 0;
      return {
        next: () =>
          Promise.resolve(
            i < list.length ? { value: list[i++]!, done: false } : { value: undefined, done: true },
          ),
      };
    },
  };
}

test('when a watch gives a good put, a put of the wrong shape and a delete, then each comes decoded, dropped as null with its key logged, or null', async () => {
  const owner: ShardOwner = { context: 'default', shard: 1, epoch: 2, host: 'h', state: 'owned' };
  const warned: object[] = [];
  const log = { warn: (obj: object) => void warned.push(obj) };
  const decode = (_key: string, value: Uint8Array, drop: DropContext) =>
    decodeOrDrop(ShardOwner, value, drop);
  const out = [];
  for await (const e of decodedEntries(
    entries([
      { key: 'a', value: encodeJson(owner), operation: 'PUT', revision: 1 },
      { key: 'b', value: encodeJson({ host: 7 }), operation: 'PUT', revision: 2 },
      { key: 'a', value: new Uint8Array(), operation: 'DEL', revision: 3 },
    ]),
    decode,
    { consumer: 'test', log },
  )) {
    out.push({ key: e.key, revision: e.revision, decoded: e.decoded });
  }
  assert.deepEqual(out, [
    { key: 'a', revision: 1, decoded: owner },
    { key: 'b', revision: 2, decoded: null },
    { key: 'a', revision: 3, decoded: null },
  ]);
  assert.equal(warned.length, 1);
  assert.deepEqual((warned[0] as { key?: string }).key, 'b');
});
