import type { TestContext } from 'node:test';
import type { NatsConnection } from '@nats-io/transport-node';
import { NatsServerProcess } from '@svc/launcher';
import { connectNats } from '@svc/nats';

/** A NATS server of one test's own and a connection to it named `name`, closed when it ends. */
export async function natsWithClientForTest(
  t: TestContext,
  name: string,
): Promise<{ nats: NatsServerProcess; nc: NatsConnection }> {
  const nats = await NatsServerProcess.start();
  const nc = await connectNats(nats.url, name);
  t.after(async () => {
    await nc.close();
    await nats.stop();
  });
  return { nats, nc };
}
