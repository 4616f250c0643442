import { RequestOne } from '@nats-io/nats-core/internal';

/**
 * The NATS client (nats-core 3.3.1, the same in 3.4.0) ends every answered request with
 * `cancel()`, and `cancel()` builds a `RequestError("cancelled")`, stack captured, to reject a
 * promise that is already settled: one Error per reply, 2–4 % of each service's CPU (an
 * acknowledged publish and every KV write is a request). Here a request that has its answer only
 * releases its timer and its place in the reply subscription when cancelled; a request without
 * one (timed out, its connection closed) is cancelled as the client does it, error and all.
 * Checked by `test/integration/nats-requests.test.ts`, which fails when an answered request
 * builds an error again (an upgrade of the client that changes these methods shows there).
 */
export function releaseAnsweredRequestsWithoutError(): void {
  if (applied) return;
  applied = true;
  const proto = RequestOne.prototype;
  // Called with the request as `this` below, as the client calls them.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const { resolver, cancel } = proto;
  proto.resolver = function (this: RequestOne, err, msg) {
    answered.add(this);
    resolver.call(this, err, msg);
  };
  proto.cancel = function (this: RequestOne, err?: Error) {
    if (!answered.has(this)) {
      cancel.call(this, err);
      return;
    }
    this.timer.cancel();
    this.mux.cancel(this);
  };
}

let applied = false;
const answered = new WeakSet<RequestOne>();
