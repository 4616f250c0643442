import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { FastifyRequest } from 'fastify';
import type { DriverDescription, Sealer } from '@svc/proto';
import type { AuditLog, Logger } from '@svc/telemetry';
import type { Stores } from '@svc/nats';
import type { Jobs } from '@svc/jobs';
import type { AuthLimits } from './auth-limits.js';
import type { ClusterStatus } from './cluster-status.js';
import type { GatewayConfig } from './config.js';
import type { JobControl } from './job-control.js';
import type { JobIntake } from './job-intake.js';
import type { QueueDepth } from './queue-depth.js';
import type { SseStreams } from './sse.js';
import type { Authenticate } from './routes/context.js';

/** Everything route modules share; built once in `gateway.ts`. */
export interface GatewayContext {
  config: GatewayConfig;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  stores: Stores;
  /** Every change of a job's status goes through here. */
  jobs: Jobs;
  sealer: Sealer;
  log: Logger;
  audit: AuditLog;
  depth: QueueDepth;
  status: ClusterStatus;
  intake: JobIntake;
  control: JobControl;
  authenticate: Authenticate;
  /** Brute-force limits of every authentication path. */
  authLimits: AuthLimits;
  /** Open SSE streams of this process (job and batch), both listeners. */
  sse: SseStreams;
  onStoreError: (err: unknown, req: FastifyRequest) => void;
  /** Driver descriptions from SVC_DRIVERS_DIR, read at start. */
  userDrivers: readonly DriverDescription[];
}
