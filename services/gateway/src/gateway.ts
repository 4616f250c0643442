import type { FastifyInstance } from 'fastify';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  Buckets,
  ConfigTemplate,
  ConfigTemplateList,
  ConfigTemplatePut,
  ConfigTemplateSaved,
  RenderInlineRequest,
  RenderStoredRequest,
  RenderedConfig,
  commandPolicy,
  deviceNetworkPolicy,
  loadDriverDir,
  webhookNetworkPolicy,
  topologyFrom,
  type Sealer,
} from '@svc/proto';
import {
  AuditLog,
  createMetricsRegistry,
  jobFailureCounter,
  type MetricsRegistry,
  renamedLogger,
  type Logger,
} from '@svc/telemetry';
import { HostKeyStore, LockoutLedger } from '@svc/device-access';
import { KvMirror, ensureTopology } from '@svc/nats';
import { Jobs } from '@svc/jobs';
import { ownerSecret, startApiKeys } from './api-keys.js';
import { AuthLimits } from './auth-limits.js';
import { Batches } from './batches.js';
import { createAuthenticator } from './authenticate.js';
import { ClusterStatus } from './cluster-status.js';
import type { GatewayConfig } from './config.js';
import { createHttpServer } from './http-server.js';
import { JobControl } from './job-control.js';
import { JobIntake } from './job-intake.js';
import type { GatewayContext } from './gateway-context.js';
import { QueueDepth } from './queue-depth.js';
import { registerMetricsRoute, startGatewayMetrics } from './metrics.js';
import {
  ApiKeyList,
  CreateKeyRequest,
  IssuedApiKey,
  registerApiKeyRoutes,
} from './routes/api-keys.js';
import { BatchJobPage, BatchList, registerBatchRoutes } from './routes/batches.js';
import {
  HostKeyList,
  LoadHostKeyRequest,
  PinnedHostKeySchema,
  registerHostKeyRoutes,
} from './routes/host-keys.js';
import { JOB_QUERY_SCHEMAS, registerJobQueryRoutes } from './routes/job-queries.js';
import { registerJobRoutes } from './routes/jobs.js';
import { registerConfigTemplateRoutes } from './routes/config-templates.js';
import { registerApiExplorer, registerOpenApi, registerOpenApiRoute } from './routes/openapi.js';
import { registerOperationRoutes } from './routes/operations.js';
import { PlatformList, registerPlatformRoutes } from './routes/platforms.js';
import { ReplayRequest, registerReplayRoutes } from './routes/replay.js';
import { registerStreamRoutes } from './routes/streams.js';
import { SseStreams } from './sse.js';
import { registerV1Routes } from './routes/v1.js';
import { loadTls, type TlsMaterial } from './tls.js';

export interface GatewayDeps {
  nc: NatsConnection;
  sealer: Sealer;
  log: Logger;
  audit?: AuditLog;
  /**
   * The process's metrics registry, served at /metrics (the all-in-one launcher shares one
   * among its services). Absent: a registry of the gateway's own, with the default metrics.
   */
  metrics?: MetricsRegistry;
  /** The certificate to serve (the one the listeners waiting for NATS served); else loaded. */
  tls?: TlsMaterial;
  /** Told of every route each HTTP server registers (tests compare them with the document). */
  onRoute?: (route: { method: string; url: string }) => void;
}

/** What the routes are registered with. */
interface RouteParts {
  ctx: GatewayContext;
  status: ClusterStatus;
  apiKeys: Parameters<typeof registerApiKeyRoutes>[2];
  batches: Batches;
  registerMetrics: (app: FastifyInstance) => void;
}

/** Every route of the gateway, after the OpenAPI plugin that records their schemas. */
async function registerRoutes(app: FastifyInstance, parts: RouteParts): Promise<void> {
  const { ctx, status, apiKeys, batches } = parts;
  await registerOpenApi(app, ctx.config.SVC_VERSION, [
    ...JOB_QUERY_SCHEMAS,
    PlatformList,
    ReplayRequest,
    BatchList,
    BatchJobPage,
    CreateKeyRequest,
    IssuedApiKey,
    ApiKeyList,
    LoadHostKeyRequest,
    PinnedHostKeySchema,
    HostKeyList,
    ConfigTemplatePut,
    ConfigTemplateSaved,
    ConfigTemplate,
    ConfigTemplateList,
    RenderStoredRequest,
    RenderInlineRequest,
    RenderedConfig,
  ]);
  parts.registerMetrics(app);
  ctx.sse.register(app);
  registerOperationRoutes(app, status);
  registerJobRoutes(app, ctx);
  registerJobQueryRoutes(app, ctx);
  registerPlatformRoutes(app, ctx);
  registerStreamRoutes(app, ctx);
  registerReplayRoutes(app, ctx);
  registerApiKeyRoutes(app, ctx, apiKeys);
  registerBatchRoutes(app, ctx, batches);
  registerHostKeyRoutes(app, ctx, apiKeys);
  registerConfigTemplateRoutes(app, ctx);
  registerV1Routes(app, ctx);
  registerOpenApiRoute(app);
  await registerApiExplorer(app);
}

/**
 * The OpenAPI document of the gateway's routes without a running gateway (docs/api.md is
 * generated from it): the same registration on a server that never listens, with parts that
 * refuse to be used.
 */
export async function buildOpenApiDocument(config: GatewayConfig): Promise<unknown> {
  const unusable: object = new Proxy(() => undefined, {
    get: (_t, key) => (key === 'then' ? undefined : unusable),
    apply: () => {
      throw new Error('the document builder serves no requests');
    },
  });
  // No user drivers: the document describes the routes, not this installation's platforms.
  const known = { config, userDrivers: [], sse: { register: () => undefined } };
  const ctx = new Proxy(known as unknown as GatewayContext, {
    get: (t, key) =>
      key in t ? (t as unknown as Record<string | symbol, unknown>)[key] : unusable,
  });
  const app = createHttpServer({ tls: null, bodyLimit: config.SVC_BODY_LIMIT });
  await registerRoutes(app, {
    ctx,
    status: unusable as ClusterStatus,
    apiKeys: unusable as RouteParts['apiKeys'],
    batches: unusable as Batches,
    registerMetrics: (a) => registerMetricsRoute(a, unusable as () => Promise<never>),
  });
  await app.ready();
  const doc = app.swagger();
  await app.close();
  return doc;
}

export interface RunningGateway {
  /** https://host:port of the TLS listener. */
  httpsUrl: string;
  /** http://host:port of the plain listener, when SVC_HTTP_PORT is set. */
  httpUrl: string | null;
  stop(): Promise<void>;
}

/** Starts the gateway's HTTP listeners on an existing NATS connection. */
export async function startGateway(
  config: GatewayConfig,
  deps: GatewayDeps,
): Promise<RunningGateway> {
  const { nc, sealer, log } = deps;
  const audit = deps.audit ?? new AuditLog('gateway');
  const registry = deps.metrics ?? createMetricsRegistry('gateway', config.SVC_BUILD_COMMIT);
  const stores = await ensureTopology(nc, topologyFrom(config));
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  // Short store retries: a request answers 503 rather than wait out a leader election.
  const jobs = await Jobs.open(nc, stores, {
    transientRetryMs: 2000,
    onFailed: jobFailureCounter(registry),
  });
  const depth: QueueDepth = new QueueDepth(jsm, config.SVC_CONTEXTS);
  const lockoutMirror = await KvMirror.start(stores[Buckets.lockout], '>', log);
  // Checked by the config loader already: here only the drivers are needed.
  const userDrivers = loadDriverDir(config.SVC_DRIVERS_DIR).drivers;
  const intake = new JobIntake(
    js,
    jobs,
    sealer,
    depth,
    audit,
    {
      contexts: config.SVC_CONTEXTS,
      userPlatforms: userDrivers.map((d) => d.platform),
      jobTimeoutSeconds: config.JOB_TIMEOUT,
      maxQueueDepth: config.MAX_QUEUE_DEPTH,
      webhookAllowHttp: config.WEBHOOK_ALLOW_HTTP,
      limits: {
        maxCommands: config.SVC_MAX_COMMANDS,
        maxCommandLength: config.SVC_MAX_COMMAND_LENGTH,
      },
      dedupEnabled: config.JOB_DEDUP_ENABLED,
      ratePerMinute: config.RATE_LIMIT_PER_MINUTE,
      deviceRatePerMinute: config.RATE_LIMIT_DEVICE_PER_MINUTE,
      devicePolicy: deviceNetworkPolicy(config),
      commandPolicy: commandPolicy(config),
      hostKeys: new HostKeyStore(stores[Buckets.hostKeys]),
      webhookPolicy: webhookNetworkPolicy(config),
      storeTimeoutMs: config.STORE_TIMEOUT * 1000,
    },
    new LockoutLedger(
      stores[Buckets.lockout],
      config.LOCKOUT_THRESHOLD,
      config.LOCKOUT_WINDOW * 1000,
      lockoutMirror,
    ),
    {
      idempotency: stores[Buckets.idempotency],
      dedup: stores[Buckets.dedup],
      rateLimit: stores[Buckets.rateLimit],
      templates: stores[Buckets.templates],
    },
  );
  const control = new JobControl(jobs, audit);
  const status: ClusterStatus = new ClusterStatus(nc, jsm, stores, depth, {
    version: config.SVC_VERSION,
    staleThresholdSeconds: config.WORKER_STALE_THRESHOLD,
    log,
  });
  await status.start();
  const apiKeys = await startApiKeys({ config, stores, log, sealer });
  const ownerKey = await ownerSecret(config, stores[Buckets.apiKeys], sealer, log);
  const authLimits = await AuthLimits.start(
    stores[Buckets.rateLimit],
    config.AUTH_FAILURE_LIMIT,
    audit,
  );
  const ctx: GatewayContext = {
    config,
    nc,
    js,
    jsm,
    stores,
    jobs,
    sealer,
    log,
    audit,
    depth,
    status,
    intake,
    control,
    authenticate: createAuthenticator({
      resolveBearer: apiKeys.resolve,
      ownerKey,
      basicEnabled: config.BASIC_AUTH_ENABLED,
      limits: authLimits,
    }),
    authLimits,
    sse: new SseStreams({
      maxConnections: config.SSE_MAX_CONNECTIONS,
      maxPerCaller:
        config.SSE_MAX_CONNECTIONS_PER_CALLER ||
        Math.max(1, Math.floor(config.SSE_MAX_CONNECTIONS / 4)),
      timeoutSeconds: config.SSE_TIMEOUT,
      retrySeconds: config.SSE_RETRY,
    }),
    onStoreError: (err: unknown) => log.error({ err }, 'store request failed'),
    userDrivers,
  };

  const batchMirror = await KvMirror.start(stores[Buckets.batches], '>', log);
  const batches = new Batches(
    nc,
    js,
    jsm,
    stores[Buckets.batches],
    batchMirror,
    jobs,
    intake,
    log,
    {
      maxDevices: config.BATCH_MAX_DEVICES,
      sweepIntervalMs: config.BATCH_SWEEP_INTERVAL * 1000,
      sealer,
      webhook: {
        allowHttp: config.WEBHOOK_ALLOW_HTTP,
        policy: webhookNetworkPolicy(config),
        timeoutMs: config.WEBHOOK_TIMEOUT * 1000,
      },
    },
  );
  batches.start();

  const metrics = startGatewayMetrics(ctx, registry);
  const register = async (app: FastifyInstance) => {
    const { onRoute } = deps;
    if (onRoute)
      app.addHook('onRoute', (r) => {
        // The explorer's pages are no API routes (hidden from the document).
        if (r.schema?.hide) return;
        for (const method of [r.method].flat()) onRoute({ method, url: r.url });
      });
    await registerRoutes(app, {
      ctx,
      status,
      apiKeys,
      batches,
      registerMetrics: (a) => metrics.register(a),
    });
  };

  const tls =
    deps.tls ?? (await loadTls(config.SVC_TLS_CERT, config.SVC_TLS_KEY, config.SVC_DATA_DIR, log));
  const servers: FastifyInstance[] = [];
  const storeTimeoutMs = config.STORE_TIMEOUT * 1000;
  const accessLog = renamedLogger(log, 'svc.access');
  const https = createHttpServer({
    tls,
    bodyLimit: config.SVC_BODY_LIMIT,
    storeTimeoutMs,
    accessLog,
  });
  await register(https);
  servers.push(https);
  await https.listen({ port: config.SVC_PORT, host: config.SVC_BIND || '0.0.0.0' });
  const httpsUrl = urlOf(https, 'https');
  let httpUrl: string | null = null;
  if (config.SVC_HTTP_PORT >= 0) {
    const http = createHttpServer({
      tls: null,
      bodyLimit: config.SVC_BODY_LIMIT,
      storeTimeoutMs,
      accessLog,
    });
    await register(http);
    servers.push(http);
    // Plain HTTP carries credentials in clear: loopback only unless SVC_BIND says otherwise.
    await http.listen({ port: config.SVC_HTTP_PORT, host: config.SVC_BIND || '127.0.0.1' });
    httpUrl = urlOf(http, 'http');
  }
  log.info({ https: httpsUrl, http: httpUrl, self_signed: tls.selfSigned }, 'gateway listening');
  return {
    httpsUrl,
    httpUrl,
    async stop() {
      await Promise.all(servers.map((s) => s.close()));
      status.stop();
      batches.stop();
      await jobs.batchEventsStored();
      batchMirror.stop();
      lockoutMirror.stop();
      authLimits.stop();
      await apiKeys.stop();
      await metrics.stop();
    },
  };
}

/** The URL a local client reaches a listener at (a wildcard bind is reached on loopback). */
export function urlOf(app: FastifyInstance, scheme: string): string {
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') return `${scheme}://127.0.0.1`;
  const host = addr.address === '0.0.0.0' || addr.address === '::' ? '127.0.0.1' : addr.address;
  return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${addr.port}`;
}
