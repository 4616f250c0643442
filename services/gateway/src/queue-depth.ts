import type { JetStreamManager } from '@nats-io/jetstream';
import { Streams, Subjects } from '@svc/proto';

/**
 * Backlog of a context: jobs accepted but not yet placed (its subject in SVC_JOBS) plus jobs
 * placed on actor hosts and not yet finished (SVC_ACTOR, shared by all contexts, read at most
 * four times a second). Approximate by nature, as the specification allows.
 */
export class QueueDepth {
  #actorBacklog = 0;
  #actorReadAt = 0;

  constructor(private readonly jsm: JetStreamManager) {}

  async forContext(context: string): Promise<number> {
    const subject = Subjects.jobs(context);
    const info = await this.jsm.streams.info(Streams.jobs, { subjects_filter: subject });
    const waiting = info.state.subjects?.[subject] ?? 0;
    return waiting + (await this.actorBacklog());
  }

  /** Every job not yet finished, all contexts. */
  async total(): Promise<number> {
    const info = await this.jsm.streams.info(Streams.jobs);
    return info.state.messages + (await this.actorBacklog());
  }

  private async actorBacklog(): Promise<number> {
    if (Date.now() - this.#actorReadAt > 250) {
      const info = await this.jsm.streams.info(Streams.actor);
      this.#actorBacklog = info.state.messages;
      this.#actorReadAt = Date.now();
    }
    return this.#actorBacklog;
  }
}
