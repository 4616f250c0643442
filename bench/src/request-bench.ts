// CPU per NATS request/reply in the requesting process: the client as it is (`--client-as-is`)
// and through `connectNats`, whose connection releases an answered request without building an
// error (nats/src/answered-requests.ts). Sequential requests, as a job's writes are: an echo
// request (its responder runs in this process too), and an acknowledged KV update (what a
// job's compare-and-sets cost).
// Run alternately: npx tsc -b bench && node bench/dist/src/request-bench.js [--client-as-is]
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connectNats } from '@svc/nats';
import { NatsServerProcess } from '@svc/test/harness';

const asIs = process.argv.includes('--client-as-is');
const N = 20_000;
const nats = await NatsServerProcess.start();
const responder = await connect({ servers: nats.url });
responder.subscribe('bench.echo', { callback: (_err, m) => void m.respond(m.data) });
await responder.flush();
const nc = asIs
  ? await connect({ servers: nats.url, noAsyncTraces: true })
  : await connectNats(nats.url, 'bench');
const kv = await new Kvm(jetstream(nc)).create('request-bench');
let revision = await kv.put('k', new Uint8Array(8));

async function cpuPerCall(call: () => Promise<void>): Promise<number> {
  for (let i = 0; i < N / 4; i++) await call(); // warm-up
  const before = process.cpuUsage();
  for (let i = 0; i < N; i++) await call();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / N;
}
const echo = await cpuPerCall(async () => {
  await nc.request('bench.echo', 'x', { timeout: 5000 });
});
const update = await cpuPerCall(async () => {
  revision = await kv.update('k', new Uint8Array(8), revision);
});
console.log(
  `${asIs ? 'client as is' : 'connectNats'}: echo request ${echo.toFixed(1)} µs, KV update ${update.toFixed(1)} µs of this process's CPU per call (${N} each)`,
);
await nc.close();
await responder.close();
await nats.stop();
