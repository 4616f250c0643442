export { ensureTopology } from './topology.js';
export type { Stores } from './topology.js';
export {
  connectNats,
  publicNatsUrl,
  compareVersions,
  natsAuthOptions,
  MIN_SERVER_VERSION,
} from './nats-connection.js';
export type { NatsCredentials } from './nats-connection.js';
export { retryTransient } from './store-retry.js';
export { Lease } from './lease.js';
export { KvMirror } from './kv-mirror.js';
export type { MirroredEntry } from './kv-mirror.js';
export {
  closeWhenStalled,
  isConsumerNotFound,
  RanPastWatch,
  ranPastMessage,
  workConsumeOptions,
} from './consumer-watchdog.js';
export { nextMessageOn } from './stream-reads.js';
export { BurstFeed } from './burst-feed.js';
export type { BurstFeedOptions } from './burst-feed.js';
export { bucketKeys } from './bucket-keys.js';
export { decodedEntries, watchBucket } from './bucket-watch.js';
export { followStream } from './stream-follower.js';
export type { FollowFrom, StreamFollower } from './stream-follower.js';
export type { BucketWatch, BucketWatchEntry } from './bucket-watch.js';
