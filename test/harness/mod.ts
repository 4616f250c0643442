export { NatsServerProcess, NatsCluster, readAllFiles, freePort } from '@svc/launcher';
export { http, submitCommand, waitForJob } from './http-client.js';
export type { HttpAnswer, HttpOptions } from './http-client.js';
export {
  startInProcessStack,
  startNamedActor,
  ServiceProcess,
  testEnv,
  silentLogger,
  quietAudit,
  waitHealthy,
  waitWorkers,
  TEST_ENCRYPTION_KEY,
} from './stack.js';
export type { InProcessStack } from './stack.js';
export { ShippedNatsCluster, NATS_USERS } from './shipped-nats.js';
export type { NatsUser } from './shipped-nats.js';
export {
  OtlpHttpCollector,
  decodeExportTraceRequest,
  decodeJsonTraceRequest,
} from './otlp-collector.js';
export type { ReceivedSpan } from './otlp-collector.js';
export { lintExposition } from './prom-lint.js';
export type { LintProblem } from './prom-lint.js';
export { sharedDir, ntcTemplatesDir, ntcSkip, writeTextfsmFixture } from './shared-data.js';
export { waitUntil } from './wait.js';
export { loseMessage } from './lost-messages.js';
export { natsCredentials, natsUsers } from './nats-users.js';
export { captureLogs, waitForJobLine } from './logs.js';
export {
  deviceStackForFile,
  deviceStackForTest,
  filteredDeviceStackForTest,
} from './device-stack.js';
export type { DeviceStack, TestDeviceStack, StackOptionsOf } from './device-stack.js';
export { cleanupForTest } from './test-cleanup.js';
export type { TestCleanup } from './test-cleanup.js';
export { natsWithClientForTest } from './nats-with-client.js';
export { submitHeldJob } from './held-job.js';
export type { LogCapture } from './logs.js';
export { settledStoreFiles } from './store-files.js';
export type { WaitOptions } from './wait.js';
export {
  ScenarioClients,
  waitForEnds,
  countOutcome,
  assertPromiseKept,
  startProcessStack,
  scenarioLoad,
  startScenarioFleet,
  untilJobsBeforeFault,
  scenarioLogSink,
} from './fault-scenario.js';
export type {
  AcceptedJob,
  JobEnd,
  ProcessStack,
  ScenarioResult,
  ScenarioDevice,
  ScenarioLoad,
} from './fault-scenario.js';
export { holdRequests } from './held-requests.js';
export type { HeldRequests } from './held-requests.js';
export {
  IDLE_CONTEXT_ENV,
  OPERATOR,
  postDeviceBatch,
  postIdleBatch,
  followBatchStream,
} from './batch-stream.js';
export type { ReceivedBatchEvent } from './batch-stream.js';
export { NatsPublishFilter } from './nats-publish-filter.js';
export { reaperBehindRelay, staleHeartbeat } from './reaper-behind-relay.js';
export type { ReaperBehindRelay } from './reaper-behind-relay.js';
export { ShardOwners, hostNamed, keepsWhenJoined, shardOfDevice } from './shard-owners.js';
