// What a nats-server holds on disk, read once its earlier writes are known to be there: a
// marker is written to every stream after them and the files are read until each marker shows.
// A stream appends to its block file in order, so the earlier writes are in the files too.
import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { readAllFiles } from '@svc/launcher';
import { connectNats } from '@svc/nats';
import { waitUntil } from './wait.js';

/** A subject of the stream that no service consumes (a wildcard filled with a marker token). */
function markerSubject(filter: string, token: string): string {
  return filter
    .split('.')
    .map((t) => (t === '>' || t === '*' ? token : t))
    .join('.');
}

/** Every file under `storeDir`, read after every stream's writes so far reached them. */
export async function settledStoreFiles(natsUrl: string, storeDir: string): Promise<Buffer[]> {
  const nc = await connectNats(natsUrl, 'test-store-marker');
  try {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    const markers: string[] = [];
    for await (const info of jsm.streams.list()) {
      const filter = info.config.subjects?.[0];
      if (!filter) continue;
      const marker = `store-marker-${randomUUID()}`;
      await js.publish(markerSubject(filter, `zz-marker-${randomUUID().slice(0, 8)}`), marker);
      markers.push(marker);
    }
    return await waitUntil(
      async () => {
        const files = await readAllFiles(storeDir);
        const all = Buffer.concat(files).toString('latin1');
        return markers.every((m) => all.includes(m)) && files;
      },
      `the store files to hold a marker of each of ${markers.length} streams`,
      { everyMs: 50 },
    );
  } finally {
    await nc.close();
  }
}
