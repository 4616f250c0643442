import type { ConsumerMessages } from '@nats-io/jetstream';
import type { Logger } from './logging.js';

/** Pulls expire after this long, so a lost pull (a consumer leader that died) is noticed soon. */
export const CONSUME_EXPIRES_MS = 10_000;

/**
 * Ends a `consume()` whose consumer went quiet or away (heartbeats missed, consumer gone): the
 * caller's loop then consumes afresh (re-creating the consumer when `onStall` says so). After a
 * cluster node dies, a consumer can be left without a leader on nats-server 2.9 and its pulls
 * go unanswered for ever; a new consumer of the same name gets a leader at once.
 */
export function closeWhenStalled(
  messages: ConsumerMessages,
  log: Logger,
  what: string,
  onStall: () => void = () => undefined,
): void {
  void (async () => {
    for await (const s of messages.status()) {
      const stalled =
        (s.type === 'heartbeats_missed' && s.count >= 2) ||
        s.type === 'consumer_not_found' ||
        s.type === 'consumer_deleted' ||
        s.type === 'no_responders';
      if (stalled) {
        log.warn({ status: s.type, consumer: what }, 'consumer stalled; consuming again');
        onStall();
        await messages.close().catch(() => undefined);
        return;
      }
    }
  })();
}
