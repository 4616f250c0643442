// A reaper in the test's process whose cycles the test runs (`cycle()`), reaching a real
// nats-server through a NatsPublishFilter (its publishes dropped on demand), beside an admin
// connection that sets the scene: the tests of what a reaper does when a store write of its own
// goes nowhere.
import type { TestContext } from 'node:test';
import { DefaultTopology, type WorkerHeartbeat } from '@svc/proto';
import { connectNats, ensureTopology, type Stores } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { loadReaperConfig, startReaper, type RunningReaper } from '@svc/reaper';
import { NatsServerProcess } from '@svc/launcher';
import { NatsPublishFilter } from './nats-publish-filter.js';
import { quietAudit, silentLogger, testEnv } from './stack.js';

export interface ReaperBehindRelay {
  reaper: RunningReaper;
  filter: NatsPublishFilter;
  stores: Stores;
  jobs: Jobs;
}

/** Started for one test and stopped after it. */
export async function reaperBehindRelay(t: TestContext): Promise<ReaperBehindRelay> {
  const nats = await NatsServerProcess.start();
  const filter = await NatsPublishFilter.start(nats.url);
  const admin = await connectNats(nats.url, 'test-admin');
  const reaperNc = await connectNats(filter.url, 'reaper');
  const stores = await ensureTopology(admin, DefaultTopology);
  // Cycles are run by the test, none on a timer.
  const reaper = await startReaper(
    loadReaperConfig({ ...testEnv(nats.url), JOB_REAPER_ENABLED: 'false' }),
    { nc: reaperNc, log: silentLogger('reaper'), audit: quietAudit('reaper') },
  );
  t.after(async () => {
    await reaper.stop();
    await reaperNc.close();
    await admin.close();
    await filter.stop();
    await nats.stop();
  });
  return { reaper, filter, stores, jobs: await Jobs.open(admin, stores) };
}

/** The heartbeat of a host silent for an hour. */
export function staleHeartbeat(hostId: string, running = 0): WorkerHeartbeat {
  const longAgo = new Date(Date.now() - 3_600_000).toISOString();
  return {
    host_id: hostId,
    contexts: ['default'],
    capacity: 1,
    busy: running,
    active_jobs: running,
    started_at: longAgo,
    last_beat: longAgo,
    pool_size: 0,
    pool_hits: 0,
    pool_misses: 0,
    draining: false,
  };
}
