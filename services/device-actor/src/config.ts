import { statSync } from 'node:fs';
import { Type, type Static } from 'typebox';
import {
  DEFAULT_DATA_DIR,
  DriverSettings,
  loadDriverDir,
  ReachabilitySettings,
  SharedSettings,
  SshSettings,
  sshProfiles,
  reachabilityChecks,
} from '@svc/proto';
import { loadConfig } from '@svc/config';
import { HostKeySettings, hostKeyModes } from '@svc/device-access';
import { metricsSettings } from '@svc/telemetry';
import { loadTemplateIndex } from '@svc/parsers';

export const DeviceActorConfig = Type.Object({
  ...SharedSettings,
  ...metricsSettings(9102),
  ...ReachabilitySettings,
  ...HostKeySettings,
  ...DriverSettings,
  ...SshSettings,
  WORKER_CONTEXTS: Type.Array(Type.String({ pattern: '^[A-Za-z0-9_-]+$' }), {
    default: ['default'],
    minItems: 1,
    description: 'Routing contexts this actor host serves, comma-separated.',
  }),
  ACTOR_HOST_ID: Type.String({
    default: '',
    description: 'Identity of this host in placement; unique per process start when empty.',
  }),
  ACTOR_MAX_SESSIONS: Type.Integer({
    default: 500,
    minimum: 1,
    description: 'Most SSH sessions this host runs at once (all devices).',
  }),
  DEVICE_MAX_SESSIONS: Type.Integer({
    default: 1,
    minimum: 1,
    description: 'Most concurrent jobs (sessions) per device.',
  }),
  HEARTBEAT_INTERVAL: Type.Number({
    default: 1,
    minimum: 0.1,
    description: 'Seconds between heartbeats in svc-workers.',
  }),
  SHUTDOWN_GRACE: Type.Integer({
    default: 30,
    minimum: 0,
    description: 'Seconds SIGTERM waits for running jobs before closing their sessions.',
  }),
  CONNECTION_POOL_ENABLED: Type.Boolean({ default: true, description: 'Keep sessions warm.' }),
  CONNECTION_POOL_TTL: Type.Integer({
    default: 300,
    minimum: 1,
    description: 'Seconds an idle warm session is kept.',
  }),
  CONNECTION_POOL_MAX_SIZE: Type.Integer({
    default: 100,
    minimum: 1,
    description: 'Most warm sessions held by this host.',
  }),
  CONNECTION_POOL_EXCLUDE: Type.Array(Type.String(), {
    default: [],
    description: 'Addresses or platform ids never pooled, comma-separated.',
  }),
  WEBHOOK_ALLOW_HTTP: Type.Boolean({
    default: false,
    description: 'Allow http:// webhook URLs (HTTPS only otherwise).',
  }),
  TRANSCRIPT_CONTEXTS: Type.Array(Type.String({ pattern: '^[A-Za-z0-9_*-]+$' }), {
    default: [],
    description:
      'Contexts whose every job keeps its device session transcript, comma-separated (`*`: all). Elsewhere only jobs asking `transcript: true` and failed jobs keep one.',
  }),
  TRANSCRIPT_MAX_BYTES: Type.Integer({
    default: 65536,
    minimum: 1024,
    maximum: 262144,
    description:
      'Largest transcript kept per job, characters; past it the start and the end are kept. At most 262144 (a transcript is one NATS message).',
  }),
  SVC_MAX_RESULT_BYTES: Type.Integer({
    default: 67108864,
    minimum: 1024,
    description:
      'Largest results a job keeps, bytes of JSON (default 64 MiB); past it the job fails RESULT_TOO_LARGE. Results larger than one NATS message go to the svc-results object store.',
  }),
  WEBHOOK_TIMEOUT: Type.Integer({
    default: 10,
    minimum: 1,
    description: 'Webhook timeout, seconds.',
  }),
  SVC_TEXTFSM_DIR: Type.String({
    default: '',
    description:
      'Community TextFSM templates (an index file and *.textfsm files). Empty: the ntc-templates collection `svc templates install` put in SVC_DATA_DIR/templates/ntc-templates, when there.',
  }),
  SVC_TTP_TEMPLATES_DIR: Type.String({
    default: '',
    description:
      'Directory that ttp:// template references resolve under. Empty: the ttp_templates collection `svc templates install` put in SVC_DATA_DIR/templates/ttp_templates, when there.',
  }),
  SVC_DATA_DIR: Type.String({
    default: DEFAULT_DATA_DIR,
    description:
      'Local data directory (as for `npm start`): the actor reads community templates installed under its templates/ folder, per job (an install needs no restart).',
  }),
  BREAKER_THRESHOLD: Type.Integer({
    default: 5,
    minimum: 1,
    description: 'Consecutive connection failures to a device that open its circuit breaker.',
  }),
  BREAKER_OPEN_SECONDS: Type.Integer({
    default: 300,
    minimum: 1,
    description: 'Seconds a breaker stays open before one half-open probe.',
  }),
  SVC_PARSE_TIMEOUT_MS: Type.Integer({
    default: 2000,
    minimum: 10,
    description: 'Longest a template may take on one command output, milliseconds.',
  }),
});
export type DeviceActorConfig = Static<typeof DeviceActorConfig>;

export function loadDeviceActorConfig(
  env: Readonly<Record<string, string | undefined>>,
): DeviceActorConfig {
  // Every problem of a start is reported at once: schema, network entries, template folders,
  // driver files.
  return loadConfig(DeviceActorConfig, env, [
    ...reachabilityChecks,
    (c) => {
      hostKeyModes(c.HOST_KEY_POLICY ?? []);
    },
    (c) => {
      sshProfiles(c.SSH_PROFILE ?? []);
    },
    (c) => textfsmDirProblems(c.SVC_TEXTFSM_DIR),
    (c) => directoryProblems('SVC_TTP_TEMPLATES_DIR', c.SVC_TTP_TEMPLATES_DIR),
    (c) => loadDriverDir(c.SVC_DRIVERS_DIR ?? '').problems,
  ]);
}

/**
 * A wrong SVC_TEXTFSM_DIR would otherwise surface only in jobs, one failed parse at a time;
 * it is checked at start instead: a folder with a readable ntc-templates `index`.
 */
function textfsmDirProblems(dir: string | undefined): string[] {
  if (!dir) return [];
  const problems = directoryProblems('SVC_TEXTFSM_DIR', dir);
  if (problems.length > 0) return problems;
  try {
    loadTemplateIndex(dir);
    return [];
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : '');
    return [
      `SVC_TEXTFSM_DIR: ${JSON.stringify(dir)} has no readable TextFSM index file (${why}); expected the ntc-templates layout (an index file and *.textfsm files)`,
    ];
  }
}

function directoryProblems(setting: string, dir: string | undefined): string[] {
  if (!dir) return [];
  try {
    if (statSync(dir).isDirectory()) return [];
    return [`${setting}: ${JSON.stringify(dir)} is not a directory`];
  } catch (err) {
    return [
      `${setting}: ${JSON.stringify(dir)} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    ];
  }
}
