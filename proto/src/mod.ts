export { ErrorCode, ERROR_CODES, SvcError, ConfigError, isErrorCode } from './errors.js';
export type { ErrorCodeInfo, WireError } from './errors.js';
export { PLATFORMS, AUTODETECT, DEFAULT_PLATFORM, isPlatform } from './platforms.js';
export type { Platform } from './platforms.js';
export {
  DriverDescription,
  ConfirmationDescription,
  DriverSettings,
  compilePattern,
  driverDescriptionProblems,
  loadDriverDir,
} from './driver-description.js';
export type { BuiltinDriverFacts, LoadedDrivers } from './driver-description.js';
export {
  Streams,
  Subjects,
  Consumers,
  Buckets,
  ObjectBuckets,
  LockKeys,
  BatchKeys,
  UUID_V4_PATTERN,
  JOB_SHARDS,
  jobShardOf,
  isJobId,
  Headers,
  MessageIds,
  SubjectParsers,
  subjectToken,
  encodeToken,
} from './subjects.js';
export type { Bucket } from './subjects.js';
export {
  SendCommandRequest,
  SendConfigRequest,
  SendCommandStructuredRequest,
  V1SendCommandRequest,
  V1SendCommandStructuredRequest,
  ConnectionFields,
  Tags,
  TAG_PATTERN,
  MAX_TAGS,
  CommandAnswer,
  MAX_ANSWERS,
  MAX_ANSWER_LENGTH,
} from './messages/send-command.js';
export {
  JobKind,
  JobStatus,
  DateTime,
  TERMINAL_STATUSES,
  isTerminal,
  JobSpec,
  JobEnvelope,
  JobRecord,
  CommandStatus,
  ResultsRef,
  JobResult,
  toJobResult,
  EnqueueResponse,
  JobEvent,
  RecordSummary,
  recordSummaryOf,
  WorkerHeartbeat,
  PrePostCheck,
} from './messages/job.js';
export type { DeviceSecrets } from './messages/job.js';
export {
  ValidationIssue,
  ValidationErrorBody,
  MessageBody,
  HealthRecord,
  HealthStatus,
  PageSizes,
} from './messages/http.js';
export { ajv, check, createAjv, validatorFor, toIssues } from './validate.js';
export type { Checked } from './validate.js';
export {
  normalizeSubmission,
  isDeviceHost,
  SubmissionDefaults,
  basicCredentialIssues,
} from './submission.js';
export {
  DEVICE_TEXT_PATTERN,
  DEFAULT_DEVICE_INPUT_LIMITS,
  MAX_SECRET_LENGTH,
  MAX_PATTERN_LENGTH,
  DeviceText,
  NullableDeviceText,
  forbiddenCharIn,
  isDeviceText,
  codePointName,
  deviceTextMessage,
} from './device-input.js';
export type { DeviceInputLimits } from './device-input.js';
export { UserPattern, PatternError, MAX_PATTERN_PROGRAM } from './user-pattern.js';
export type { PatternMatch } from './user-pattern.js';
export type { CallerCredentials, NormalizeOptions, Normalized } from './submission.js';
export { Sealer, openWebhookUrl } from './sealing.js';
export {
  MalformedMessage,
  encodeJson,
  decodeJson,
  isWrongRevision,
  decodeMessage,
  decodeOrDrop,
  noteDropped,
  malformedMessagesDropped,
} from './codec.js';
export type { DropContext } from './codec.js';
export {
  LeaseRecord,
  BreakerRecord,
  LockoutRecord,
  PinnedHostKeyRecord,
  ApiKeyRecord,
  HeldEnvelope,
  ResultsObject,
  ShardOwner,
  shardOwnerOf,
  DeviceClaimEntry,
  deviceClaimOf,
} from './messages/stored.js';
export {
  SharedSettings,
  topologyFrom,
  DefaultTopology,
  JOBS_DUPLICATE_WINDOW_SECONDS,
  JOBS_DUPLICATE_WINDOW_MARGIN_MS,
} from './shared-config.js';
export type { TopologyOptions } from './shared-config.js';
export { FailedJob, FUNC_NAMES } from './messages/job.js';
export { canonicalIp, canonicalHost } from './device-address.js';
export {
  AddressPolicy,
  ReachabilitySettings,
  deviceNetworkPolicy,
  webhookNetworkPolicy,
  reachabilityChecks,
  DEVICE_REFUSED_RANGES,
  WEBHOOK_REFUSED_RANGES,
} from './network-policy.js';
export type { Reachability } from './network-policy.js';
export {
  AskedCommandModeHeader,
  COMMAND_MODES,
  CommandPolicySettings,
  askedCommandMode,
  commandPolicy,
} from './command-policy.js';
export type { CommandMode, CommandPolicy } from './command-policy.js';
export {
  SshProfile,
  SshSettings,
  SshRequestOptions,
  SshSpec,
  JumpHostRequest,
  JumpHostSpec,
  LEGACY_ALGORITHMS,
  SSH_ALGORITHM_KINDS,
  SSH_ALGORITHM_NAMES,
  MAX_JUMP_HOSTS,
  MAX_PRIVATE_KEY_LENGTH,
  SshReplaySecrets,
  algorithmsFor,
  replaySshSecrets,
  sshProfiles,
} from './ssh-options.js';
export type { SshAlgorithmKind, SshAlgorithmLists, JumpHostSecrets } from './ssh-options.js';
export { KeyedWindow } from './keyed-window.js';
export { withinMs } from './within-ms.js';
export { Transcript, TranscriptEntry } from './messages/transcript.js';
export {
  ConfigTemplate,
  ConfigTemplateList,
  ConfigTemplatePut,
  ConfigTemplateRef,
  ConfigTemplateSaved,
  ConfigTemplateSummary,
  JobTemplate,
  MAX_TEMPLATE_CHARS,
  RESERVED_TEMPLATE_NAMES,
  RenderInlineRequest,
  RenderStoredRequest,
  RenderedConfig,
  TEMPLATE_HISTORY,
  TEMPLATE_NAME_PATTERN,
} from './messages/config-template.js';
export {
  BatchDevice,
  BatchRequest,
  ConfigBatchRequest,
  BatchJobRef,
  BatchCreated,
  BatchState,
  BatchRecord,
  BatchCounts,
  BatchSummary,
  Rollout,
} from './messages/batch.js';
export {
  COMMIT_FORMS,
  CommitOptions,
  ConfirmOf,
  MAX_CONFIRMED_MINUTES,
  MIN_CONFIRMED_MINUTES,
  commitFormsOf,
  commitOptionIssues,
  sessionNameOf,
} from './commit-options.js';
export type { CommitForms } from './commit-options.js';
export { CANDIDATE_DRY_RUNS, candidateDryRunOf, dryRunProblem } from './dry-run.js';
export {
  ACTOR_CAPABILITIES,
  ActorCapability,
  missingCapabilities,
  requiredCapabilities,
} from './actor-capabilities.js';
export type { CandidateDryRun } from './dry-run.js';
export {
  ADMIN_SECRET_FILE,
  COMMUNITY_TEMPLATES_DIR,
  DEFAULT_DATA_DIR,
  TEXTFSM_COLLECTION,
  TLS_CERT_FILE,
  TLS_DIR,
  TTP_COLLECTION,
  adminSecretOf,
  communityTemplateDirs,
  localDataDir,
  localService,
} from './local-data.js';
export type { LocalService } from './local-data.js';
