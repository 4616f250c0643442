import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startDeviceActorService, loadDeviceActorConfig } from '@svc/device-actor';
import { loadDispatcherConfig, startDispatcher } from '@svc/dispatcher';
import { loadGatewayConfig, startGateway } from '@svc/gateway';
import {
  ADMIN_SECRET_FILE,
  ConfigError,
  Sealer,
  adminSecretOf,
  canonicalIp,
  deviceNetworkPolicy,
} from '@svc/proto';
import { connectNats } from '@svc/nats';
import { createMetricsRegistry, startTracing, type Logger } from '@svc/telemetry';
import { loadReaperConfig, startReaper } from '@svc/reaper';
import {
  installAccounts,
  localNatsUsers,
  passwordVariable,
  type LocalNatsUser,
} from './local-nats-users.js';
import { NatsServerProcess, ensureNatsServer } from './nats-server-process.js';

export interface AllInOneOptions {
  env: Readonly<Record<string, string | undefined>>;
  /** Where the local nats-server and the generated encryption key live. */
  dataDir: string;
  log: (service: string) => Logger;
  /**
   * Told of the local nats-server as soon as it runs: the caller stops it on the exit paths
   * this function cannot see (a signal while starting, a crash).
   */
  onNatsServer?: (server: NatsServerProcess) => void;
}

export interface AllInOne {
  httpsUrl: string;
  httpUrl: string | null;
  natsUrl: string;
  /**
   * The file with the generated NATS users' passwords when this process runs its own
   * nats-server; null when NATS_URL named a server.
   */
  natsCredentialsFile: string | null;
  /** The file with the generated admin secret; null when SVC_ADMIN_SECRET was given. */
  adminSecretFile: string | null;
  stop(): Promise<void>;
}

/** The NATS user of each service of the local server (deploy/nats/accounts.conf). */
const SERVICE_USERS = {
  gateway: 'gateway',
  dispatcher: 'dispatcher',
  'device-actor': 'actor',
  reaper: 'reaper',
} as const satisfies Record<string, LocalNatsUser>;
type ServiceName = keyof typeof SERVICE_USERS;

/**
 * Every service in one process, for a laptop: spawns a local nats-server when NATS_URL is unset
 * and generates an encryption key into the data dir when SVC_ENCRYPTION_KEY is unset.
 *
 * The local nats-server listens on loopback and uses the shipped accounts and permissions with
 * generated passwords (kept in the data dir, mode 0600): a program on the same machine gets no
 * further without them than the `events` user allows. With NATS_URL the given server and the
 * NATS_* credential settings are used as they are.
 *
 * Every setting is checked before anything is spawned, and a start that fails stops what it
 * had started, the nats-server included: a failed start leaves no process behind.
 */
export async function startAll(options: AllInOneOptions): Promise<AllInOne> {
  const env: Record<string, string | undefined> = { ...options.env };
  // The laptop demo talks to the simulator on loopback (README), which the production default
  // refuses: allow loopback here, and any other address as by default. Whoever reaches the
  // gateway could then reach this machine's loopback services through it: it listens on
  // loopback too, unless SVC_BIND says otherwise (and that is refused while loopback is allowed).
  env['DEVICE_NETWORKS_ALLOW'] ||= '127.0.0.0/8,::1/128,*';
  env['WEBHOOK_ALLOW_NETWORKS'] ||= '127.0.0.0/8,::1/128';
  env['SVC_BIND'] ||= '127.0.0.1';
  refuseExposedLoopback(env);
  checkSettings(env);
  await mkdir(options.dataDir, { recursive: true });
  // What is running so far, stopped newest first when a later part fails.
  const started: { stop(): Promise<void> }[] = [];
  try {
    return await startParts(options, env, started);
  } catch (err) {
    for (const part of started.reverse()) await part.stop().catch(() => undefined);
    throw err;
  }
}

async function startParts(
  options: AllInOneOptions,
  env: Record<string, string | undefined>,
  started: { stop(): Promise<void> }[],
): Promise<AllInOne> {
  let natsCredentialsFile: string | null = null;
  // Each service's own NATS user on the local server; nothing added for a given NATS_URL.
  const natsAuth: Partial<Record<ServiceName, Record<string, string>>> = {};
  if (!env['NATS_URL']) {
    const bin = ensureNatsServer(env, (line) => options.log('launcher').info(line));
    const natsDir = join(options.dataDir, 'nats');
    const users = await localNatsUsers(options.dataDir);
    natsCredentialsFile = users.file;
    const nats = await NatsServerProcess.start({
      bin,
      dataDir: natsDir,
      extraConfig: await installAccounts(natsDir),
      env: Object.fromEntries(
        Object.entries(users.passwords).map(([u, p]) => [passwordVariable(u as LocalNatsUser), p]),
      ),
    });
    started.push(nats);
    options.onNatsServer?.(nats);
    env['NATS_URL'] = nats.url;
    for (const [service, user] of Object.entries(SERVICE_USERS) as [ServiceName, LocalNatsUser][]) {
      // Only user and password: any other NATS_* method in the shell would contradict them.
      natsAuth[service] = {
        NATS_CREDS_FILE: '',
        NATS_NKEY_SEED_FILE: '',
        NATS_TOKEN: '',
        NATS_USER: user,
        NATS_PASSWORD: users.passwords[user],
      };
    }
  }
  if (!env['SVC_ENCRYPTION_KEY']) env['SVC_ENCRYPTION_KEY'] = await localKey(options.dataDir);
  // Key management works from the first start: the `svc` CLI and svc-mcp read the secret from
  // the data dir for a loopback service URL (docs/cli.md).
  let adminSecretFile: string | null = null;
  if (!env['SVC_ADMIN_SECRET']) {
    adminSecretFile = join(options.dataDir, ADMIN_SECRET_FILE);
    env['SVC_ADMIN_SECRET'] = await localAdminSecret(adminSecretFile);
  }
  const envOf = (service: ServiceName) => ({ ...env, ...natsAuth[service] });

  const gatewayConfig = loadGatewayConfig(envOf('gateway'));
  const dispatcherConfig = loadDispatcherConfig(envOf('dispatcher'));
  const actorConfig = loadDeviceActorConfig(envOf('device-actor'));
  const reaperConfig = loadReaperConfig(envOf('reaper'));
  // One SDK per process: every service in it shares the gateway's OTEL_* settings.
  const tracing = await startTracing(gatewayConfig, 'all-in-one');
  started.push(tracing);
  // One registry too, served by the gateway's /metrics: the services' collectors have distinct
  // names, and the process metrics are this one process's.
  const metrics = createMetricsRegistry('all-in-one', gatewayConfig.SVC_BUILD_COMMIT);
  const sealer = Sealer.fromSetting(gatewayConfig.SVC_ENCRYPTION_KEY);
  const natsUrl = gatewayConfig.NATS_URL;

  const connections = await Promise.all([
    connectNats(natsUrl, 'svc-reaper', reaperConfig),
    connectNats(natsUrl, 'svc-dispatcher', dispatcherConfig),
    connectNats(natsUrl, 'svc-device-actor', actorConfig),
    connectNats(natsUrl, 'svc-gateway', gatewayConfig, options.log('launcher')),
  ]);
  started.push({
    stop: () => Promise.all(connections.map((nc) => nc.drain().catch(() => undefined))).then(),
  });
  const [ncReaper, ncDispatcher, ncActor, ncGateway] = connections;
  const reaper = await startReaper(reaperConfig, {
    nc: ncReaper,
    log: options.log('reaper'),
    metrics,
  });
  started.push(reaper);
  const dispatcher = await startDispatcher(dispatcherConfig, {
    nc: ncDispatcher,
    log: options.log('dispatcher'),
    metrics,
  });
  started.push(dispatcher);
  const actor = await startDeviceActorService(actorConfig, {
    nc: ncActor,
    log: options.log('device-actor'),
    sealer,
    metrics,
  });
  started.push(actor);
  const gateway = await startGateway(gatewayConfig, {
    nc: ncGateway,
    sealer,
    log: options.log('gateway'),
    metrics,
  });
  started.push(gateway);
  return {
    httpsUrl: gateway.httpsUrl,
    httpUrl: gateway.httpUrl,
    natsUrl,
    natsCredentialsFile,
    adminSecretFile,
    async stop() {
      // Newest first: gateway, actor, dispatcher, reaper, NATS connections, tracing, nats-server.
      for (const part of started.slice().reverse()) await part.stop();
    },
  };
}

/**
 * Reads every service's settings as the start will, with stand-ins for what the launcher
 * generates (the local NATS URL, the encryption key): one ConfigError lists every problem.
 */
function checkSettings(env: Readonly<Record<string, string | undefined>>): void {
  const probe = {
    ...env,
    NATS_URL: env['NATS_URL'] || 'nats://127.0.0.1:4222',
    SVC_ENCRYPTION_KEY: env['SVC_ENCRYPTION_KEY'] || Sealer.generateKey(),
  };
  const problems = new Set<string>();
  const loaders: ((e: typeof probe) => unknown)[] = [
    loadGatewayConfig,
    loadDispatcherConfig,
    loadDeviceActorConfig,
    loadReaperConfig,
  ];
  for (const load of loaders) {
    try {
      load(probe);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      for (const problem of err.problems) problems.add(problem);
    }
  }
  try {
    Sealer.fromSetting(probe.SVC_ENCRYPTION_KEY);
  } catch (err) {
    // The keyring's messages describe its shape, never the key.
    problems.add(`SVC_ENCRYPTION_KEY: ${err instanceof Error ? err.message : 'malformed'}`);
  }
  if (problems.size > 0) throw new ConfigError([...problems]);
}

async function localAdminSecret(file: string): Promise<string> {
  if (existsSync(file)) {
    const found = adminSecretOf(await readFile(file, 'utf8'));
    if (found) return found;
  }
  const secret = randomBytes(32).toString('base64url');
  await writeFile(file, `SVC_ADMIN_SECRET=${secret}\n`, { mode: 0o600 });
  await chmod(file, 0o600); // whatever the umask, and for a file that was there
  return secret;
}

/**
 * A gateway listening beyond loopback while jobs may target loopback lets anyone who reaches
 * it scan this machine's loopback services: refused at start unless
 * SVC_BIND_ALLOW_LOOPBACK_TARGETS=true says the operator means it.
 */
function refuseExposedLoopback(env: Record<string, string | undefined>): void {
  const bind = env['SVC_BIND'] ?? '';
  const literal = canonicalIp(bind);
  if (literal !== null && (literal.startsWith('127.') || literal === '::1')) return;
  if (/^localhost$/i.test(bind)) return;
  if (/^(?:true|1|yes)$/i.test(env['SVC_BIND_ALLOW_LOOPBACK_TARGETS'] ?? '')) return;
  const list = (name: string) =>
    (env[name] ?? '')
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e !== '');
  const allow = list('DEVICE_NETWORKS_ALLOW');
  const policy = deviceNetworkPolicy(
    { DEVICE_NETWORKS_ALLOW: allow, DEVICE_NETWORKS_DENY: list('DEVICE_NETWORKS_DENY') },
    { interfaces: null },
  );
  const contexts = new Set([
    ...list('SVC_CONTEXTS'),
    'default',
    ...allow.flatMap((e) => /^([A-Za-z0-9_-]+)=/.exec(e)?.[1] ?? []),
  ]);
  const open = [...contexts].filter((c) =>
    ['127.0.0.1', '::1'].some((a) => policy.check(c, a, a).allowed),
  );
  if (open.length === 0) return;
  throw new ConfigError([
    `SVC_BIND ${bind} listens beyond loopback while jobs may target loopback addresses (DEVICE_NETWORKS_ALLOW, context ${open.join(', ')}): anyone who reaches the gateway could scan this machine's loopback services through it. Bind 127.0.0.1 (the default of npm start), remove loopback from DEVICE_NETWORKS_ALLOW, or set SVC_BIND_ALLOW_LOOPBACK_TARGETS=true.`,
  ]);
}

async function localKey(dataDir: string): Promise<string> {
  const file = join(dataDir, 'encryption.key');
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const key = Sealer.generateKey();
  await writeFile(file, key + '\n', { mode: 0o600 });
  return key;
}
