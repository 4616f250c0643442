// Request/reply through the service's NATS connection (`connectNats`): an answered request
// builds no error, and every way a request fails still rejects as the client documents.
// Real nats-server. The NATS client builds its errors from its `errors` module at the moment
// it needs one (as `RequestError` or `errors.RequestError`), so a counting class put there sees
// every `RequestError` it makes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connectNats } from '@svc/nats';
import { NatsServerProcess } from '../harness/mod.js';

const require = createRequire(import.meta.url);
const natsErrors = require(join(dirname(require.resolve('@nats-io/nats-core')), 'errors.js')) as {
  RequestError: ErrorClass;
  errors: { RequestError: ErrorClass };
};
type ErrorClass = new (message?: string, options?: ErrorOptions) => Error;

/** Counts the `RequestError`s the NATS client builds while `run` runs. */
async function requestErrorsBuilt(run: () => Promise<void>): Promise<number> {
  const Original = natsErrors.RequestError;
  let built = 0;
  const Counting = class extends Original {
    constructor(message?: string, options?: ErrorOptions) {
      super(message, options);
      built++;
    }
  };
  natsErrors.RequestError = Counting;
  natsErrors.errors.RequestError = Counting;
  try {
    await run();
  } finally {
    natsErrors.RequestError = Original;
    natsErrors.errors.RequestError = Original;
  }
  return built;
}

test('when requests are answered, then the NATS client builds no error for them', async (t) => {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, 'test');
  t.after(async () => {
    await nc.close();
    await nats.stop();
  });
  const echo = nc.subscribe('test.echo', { callback: (_err, m) => void m.respond(m.data) });
  t.after(() => echo.unsubscribe());
  await nc.flush();
  const js = jetstream(nc);
  await (await jetstreamManager(nc)).streams.add({ name: 'T', subjects: ['test.stored'] });
  const kv = await new Kvm(js).create('requests-test');

  // The counter sees what the client builds: a request that fails builds one.
  const whenFailing = await requestErrorsBuilt(async () => {
    await assert.rejects(nc.request('test.nobody', 'x', { timeout: 5000 }));
  });
  assert.ok(whenFailing >= 1, `a failed request builds its error (built ${whenFailing})`);

  const built = await requestErrorsBuilt(async () => {
    for (let i = 0; i < 20; i++) {
      const answer = await nc.request('test.echo', `ping ${i}`, { timeout: 5000 });
      assert.equal(answer.string(), `ping ${i}`);
    }
    for (let i = 0; i < 10; i++) await js.publish('test.stored', `m${i}`);
    const revision = await kv.create('k', new TextEncoder().encode('1'));
    await kv.update('k', new TextEncoder().encode('2'), revision);
  });
  assert.equal(built, 0, 'answered requests, acknowledged publishes and KV writes build none');
});

test('when a request is not answered in time, is refused, or its connection closes, then it rejects', async (t) => {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, 'test');
  t.after(() => nats.stop());
  const silent = nc.subscribe('test.silent');
  await nc.flush();

  await assert.rejects(nc.request('test.silent', 'x', { timeout: 200 }), {
    name: 'TimeoutError',
  });
  await assert.rejects(
    nc.request('test.nobody', 'x', { timeout: 5000 }),
    (err: Error) => err.name === 'RequestError' && /no responders/i.test(err.message),
  );
  // Pending when the connection closes: it ends, rejected, well before its own timeout.
  const pending = nc.request('test.silent', 'x', { timeout: 60_000 });
  const closed = nc.close();
  await assert.rejects(pending);
  await closed;
  silent.unsubscribe();
});
