import type { JetStreamManager } from '@nats-io/jetstream';
import { Streams, Subjects, type WorkerHeartbeat } from '@svc/proto';

/** The actor hosts the gateway knows of (their heartbeats). */
export type HostsSource = () => Promise<readonly Pick<WorkerHeartbeat, 'host_id' | 'contexts'>[]>;

/**
 * Backlog of a context: jobs of the context accepted but not yet placed (its subject in
 * SVC_JOBS) plus jobs placed on the actor hosts that serve the context and not yet finished
 * (their subjects in SVC_ACTOR). Read fresh on every call, so back-to-back submissions see each
 * other. A host serving several contexts counts its whole backlog for each of them (its
 * placement subject does not say which context a job came from).
 */
export class QueueDepth {
  constructor(
    private readonly jsm: JetStreamManager,
    private readonly hosts: HostsSource,
  ) {}

  async forContext(context: string): Promise<number> {
    const subject = Subjects.jobs(context);
    const [jobs, actor, hosts] = await Promise.all([
      this.jsm.streams.info(Streams.jobs, { subjects_filter: subject }),
      this.jsm.streams.info(Streams.actor, { subjects_filter: Subjects.actorAll }),
      this.hosts(),
    ]);
    const waiting = jobs.state.subjects?.[subject] ?? 0;
    const placed = actor.state.subjects ?? {};
    let running = 0;
    for (const h of hosts) {
      if (h.contexts.includes(context)) running += placed[Subjects.actor(h.host_id)] ?? 0;
    }
    return waiting + running;
  }

  /** Every job not yet finished, all contexts. */
  async total(): Promise<number> {
    const [jobs, actor] = await Promise.all([
      this.jsm.streams.info(Streams.jobs),
      this.jsm.streams.info(Streams.actor),
    ]);
    return jobs.state.messages + actor.state.messages;
  }
}
