import type {
  NatsConnection,
  Payload,
  PublishOptions,
  RequestOptions,
} from '@nats-io/transport-node';

/** A connection whose requests the test holds, and what it saw of them. */
export interface HeldRequests {
  /** The connection to give the service: a proxy of the real one. */
  nc: NatsConnection;
  /** From now on, matching requests wait until `release()`. */
  arm(): void;
  /** Resolves when the first matching request is held. */
  reached: Promise<void>;
  /** Matching requests held so far. */
  readonly count: number;
  /** Lets every held request (and later ones) through. */
  release(): void;
}

/**
 * Holds a service's NATS requests whose subject matches (e.g. the consumer API of one stream)
 * once armed: a real nats-server behind, only their timing in the test's hands. With
 * `publishes`, a publish with a reply subject is held too (a JetStream pull: its messages come
 * to that subject), and sent on release.
 */
export function holdRequests(
  nc: NatsConnection,
  matches: (subject: string) => boolean,
  options: { publishes?: boolean } = {},
): HeldRequests {
  let armed = false;
  let count = 0;
  let reach = () => undefined as void;
  let release = () => undefined as void;
  const reached = new Promise<void>((r) => (reach = r));
  const released = new Promise<void>((r) => (release = r));
  const proxy = new Proxy(nc, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop === 'request') {
        return async (subject: string, payload?: Uint8Array | string, opts?: RequestOptions) => {
          if (armed && matches(subject)) {
            count++;
            reach();
            await released;
          }
          return target.request(subject, payload, opts);
        };
      }
      if (prop === 'publish' && options.publishes) {
        return (subject: string, payload?: Payload, opts?: PublishOptions) => {
          if (armed && opts?.reply && matches(subject)) {
            count++;
            reach();
            void released.then(() => target.publish(subject, payload, opts));
            return;
          }
          target.publish(subject, payload, opts);
        };
      }
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
  return {
    nc: proxy,
    arm: () => (armed = true),
    reached,
    get count() {
      return count;
    },
    release: () => release(),
  };
}
