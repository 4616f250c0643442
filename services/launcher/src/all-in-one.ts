import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startDeviceActorService, loadDeviceActorConfig } from '@svc/device-actor';
import { loadDispatcherConfig, startDispatcher } from '@svc/dispatcher';
import { loadGatewayConfig, startGateway } from '@svc/gateway';
import { Sealer, connectNats, startTracing, type Logger } from '@svc/proto';
import { loadReaperConfig, startReaper } from '@svc/reaper';
import { NatsServerProcess, ensureNatsServer } from './nats-server-process.js';

export interface AllInOneOptions {
  env: Readonly<Record<string, string | undefined>>;
  /** Where the local nats-server and the generated encryption key live. */
  dataDir: string;
  log: (service: string) => Logger;
}

export interface AllInOne {
  httpsUrl: string;
  httpUrl: string | null;
  natsUrl: string;
  stop(): Promise<void>;
}

/**
 * Every service in one process, for a laptop: spawns a local nats-server when NATS_URL is unset
 * and generates an encryption key into the data dir when SVC_ENCRYPTION_KEY is unset.
 */
export async function startAll(options: AllInOneOptions): Promise<AllInOne> {
  const env: Record<string, string | undefined> = { ...options.env };
  await mkdir(options.dataDir, { recursive: true });
  let nats: NatsServerProcess | null = null;
  if (!env['NATS_URL']) {
    const bin = ensureNatsServer(env, (line) => options.log('launcher').info(line));
    nats = await NatsServerProcess.start({ bin, dataDir: join(options.dataDir, 'nats') });
    env['NATS_URL'] = nats.url;
  }
  if (!env['SVC_ENCRYPTION_KEY']) env['SVC_ENCRYPTION_KEY'] = await localKey(options.dataDir);
  // The laptop demo talks to the simulator on loopback (README), which the production default
  // refuses: allow loopback here, and any other address as by default.
  env['DEVICE_NETWORKS_ALLOW'] ||= '127.0.0.0/8,::1/128,*';
  env['WEBHOOK_ALLOW_NETWORKS'] ||= '127.0.0.0/8,::1/128';

  const gatewayConfig = loadGatewayConfig(env);
  const dispatcherConfig = loadDispatcherConfig(env);
  const actorConfig = loadDeviceActorConfig(env);
  const reaperConfig = loadReaperConfig(env);
  // One SDK per process: every service in it shares the gateway's OTEL_* settings.
  const tracing = await startTracing(gatewayConfig, 'all-in-one');
  const sealer = Sealer.fromSetting(gatewayConfig.SVC_ENCRYPTION_KEY);
  const natsUrl = gatewayConfig.NATS_URL;

  const connections = await Promise.all(
    ['reaper', 'dispatcher', 'device-actor', 'gateway'].map((name) =>
      connectNats(natsUrl, `svc-${name}`),
    ),
  );
  const [ncReaper, ncDispatcher, ncActor, ncGateway] = connections as [
    (typeof connections)[0],
    (typeof connections)[0],
    (typeof connections)[0],
    (typeof connections)[0],
  ];
  const reaper = await startReaper(reaperConfig, { nc: ncReaper, log: options.log('reaper') });
  const dispatcher = await startDispatcher(dispatcherConfig, {
    nc: ncDispatcher,
    log: options.log('dispatcher'),
  });
  const actor = await startDeviceActorService(actorConfig, {
    nc: ncActor,
    log: options.log('device-actor'),
    sealer,
  });
  const gateway = await startGateway(gatewayConfig, {
    nc: ncGateway,
    sealer,
    log: options.log('gateway'),
  });
  return {
    httpsUrl: gateway.httpsUrl,
    httpUrl: gateway.httpUrl,
    natsUrl,
    async stop() {
      await gateway.stop();
      await actor.stop();
      await dispatcher.stop();
      await reaper.stop();
      await Promise.all(connections.map((nc) => nc.drain().catch(() => undefined)));
      await nats?.stop();
      await tracing.stop();
    },
  };
}

async function localKey(dataDir: string): Promise<string> {
  const file = join(dataDir, 'encryption.key');
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const key = Sealer.generateKey();
  await writeFile(file, key + '\n', { mode: 0o600 });
  return key;
}
