import { Bucket, type KV } from '@nats-io/kv';

/**
 * The keys of a bucket that hold an entry, read from its stream's subjects: one stream-info
 * request (the client pages it for a large bucket), each bounded by the request timeout.
 *
 * Not the KV client's `keys()`: in @nats-io/kv 3.3.1 its listing ends on the first delivery that
 * says nothing more is pending, and a write to the bucket while it lists can make it wait forever
 * (measured: one key written every 10 ms hung a listing within 40 tries, and it stayed hung after
 * the writes slowed to one a second). Heartbeats, pins and failed jobs are written while they are
 * listed, and a listing must end.
 *
 * A key whose last write deleted or purged it is listed too (its marker is an entry of the
 * stream): callers read each key and keep the PUTs, as they must anyway, since a key can go
 * between the listing and the read.
 */
export async function bucketKeys(kv: KV): Promise<string[]> {
  if (!(kv instanceof Bucket)) throw new TypeError('bucketKeys needs a bucket opened by Kvm');
  const prefix = `${kv.prefix}.`;
  const info = await kv.jsm.streams.info(kv.stream, { subjects_filter: `${prefix}>` });
  return Object.keys(info.state.subjects ?? {})
    .filter((subject) => subject.startsWith(prefix))
    .map((subject) => kv.decodeKey(subject.slice(prefix.length)));
}
