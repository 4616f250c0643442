import { CommitOptions, ConfirmOf } from '../commit-options.js';
import { Type, type Static } from 'typebox';
import { Tags } from './send-command.js';
import { SshSpec, type JumpHostSecrets } from '../ssh-options.js';
import { JobTemplate } from './config-template.js';

export const JobKind = {
  command: 'command',
  config: 'config',
  structured: 'structured',
} as const;
export type JobKind = (typeof JobKind)[keyof typeof JobKind];

export const JobStatus = {
  queued: 'queued',
  started: 'started',
  finished: 'finished',
  failed: 'failed',
  cancelled: 'cancelled',
} as const;
export type JobStatus = (typeof JobStatus)[keyof typeof JobStatus];

export const TERMINAL_STATUSES: readonly JobStatus[] = ['finished', 'failed', 'cancelled'];
export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

const NullableString = Type.Union([Type.String(), Type.Null()]);
/** A time on the HTTP API: RFC 3339 (ISO 8601) in UTC, as `Date.toISOString()` writes it. */
export const DateTime = (description?: string) =>
  Type.String({ format: 'date-time', ...(description ? { description } : {}) });
const NullableDateTime = Type.Union([DateTime(), Type.Null()]);

/**
 * The non-secret part of a job: everything needed to run it again except credentials.
 * Kept in the job record so that a replay rebuilds the job with the caller's current secrets.
 */
export const JobSpec = Type.Object(
  {
    kind: Type.Enum(Object.values(JobKind)),
    context: Type.String(),
    host: Type.String(),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    platform: Type.String(),
    commands: Type.Array(Type.String(), { minItems: 1 }),
    conn_timeout: Type.Number({ description: 'seconds' }),
    read_timeout: Type.Number({ description: 'seconds' }),
    expect_string: NullableString,
    tags: Tags,
    /**
     * The completion webhook, sealed like the device secrets (`Sealer.seal` of the URL string):
     * a URL may carry credentials (user info, a token in the query). A replay keeps the target.
     * Records written before sealing hold the URL in clear; `openWebhookUrl` reads both.
     */
    webhook_url: NullableString,
    save_config: Type.Boolean(),
    commit: Type.Boolean(),
    textfsm_template: NullableString,
    ttp_template: NullableString,
    /** Show jobs: stop at the first rejected command. Absent in records written before it. */
    stop_on_error: Type.Optional(Type.Boolean()),
    /** SSH profile, algorithms and jump hosts (secrets sealed). Absent: the context's profile. */
    ssh: Type.Optional(SshSpec),
    /** Keep the session transcript even when the job finishes. Absent in older records. */
    transcript: Type.Optional(Type.Boolean()),
    /**
     * Config jobs whose lines were rendered from a template (`commands` holds the lines):
     * the stored template's name and version, or nulls for inline text. Absent: none.
     */
    template: Type.Optional(JobTemplate),
    /** Config jobs: show commands run before and after the change. Absent: none. */
    checks: Type.Optional(Type.Array(Type.String())),
    /** Config jobs: load, diff and discard; never change the device. Absent: false. */
    dry_run: Type.Optional(Type.Boolean()),
    /** Config jobs: RE2 patterns added to the platform's error patterns. Absent: none. */
    error_patterns: Type.Optional(Type.Array(Type.String())),
    /** Config jobs: commit options (`commit` is then true). Absent: a plain commit, if any. */
    commit_options: Type.Optional(CommitOptions),
    /** Confirm jobs (POST /v2/jobs/{job_id}/confirm): the confirmed commit they confirm. */
    confirm_of: Type.Optional(ConfirmOf),
    /** Answers to the commands' questions (send-command `answers`). Absent: none. */
    answers: Type.Optional(
      Type.Array(
        Type.Object(
          {
            prompt: Type.String(),
            answer: Type.String(),
            command: Type.Optional(Type.Integer({ minimum: 0 })),
          },
          { additionalProperties: false },
        ),
      ),
    ),
  },
  { $id: 'JobSpec', additionalProperties: false },
);
export type JobSpec = Static<typeof JobSpec>;

/**
 * A job as it crosses NATS (stream `SVC_JOBS`, its device's shard subject). Credentials and the webhook
 * secret travel only inside `sealed`, AES-256-GCM under SVC_ENCRYPTION_KEY.
 */
export const JobEnvelope = Type.Object(
  {
    v: Type.Literal(1),
    job_id: Type.String(),
    owner: Type.String({ description: 'caller identity: basic:<user> or key:<key_id>' }),
    username: Type.String({ description: 'device username (not a secret; used in audit)' }),
    spec: JobSpec,
    sealed: Type.String({ description: 'sealed DeviceSecrets' }),
    /**
     * The device's canonical address, resolved once at submission: the device's identity for
     * placement and guards, and what the actor connects to. Absent when the name did not resolve
     * then; the actor resolves it once itself.
     */
    address: Type.Optional(Type.String()),
    /**
     * The device key of the host key pinned for `address` at submission
     * (`<context>|hostkey:<fingerprint>`), when one was. Read by the dispatchers of the release
     * before shards (their placement preferred the host chosen by it), which may run beside this
     * one during an upgrade; this release's actor hosts claim the device by the key they pin.
     * Absent before first contact and in envelopes of older gateways.
     */
    device: Type.Optional(Type.String()),
    enqueued_at: Type.String(),
    /**
     * The shard epoch this copy may start the job at: 0 as the gateway stores it; the epoch of a
     * shard owner that fenced the job on a takeover (`JobRecord.placement`) in that owner's copy.
     */
    placement: Type.Integer({ minimum: 0 }),
    /**
     * The revision of the record the gateway created (`queuedRecordOf` of this envelope): the
     * actor starts the job by a compare-and-set on it without reading the record first. Absent
     * in envelopes of older gateways (the actor reads the record then).
     */
    record_revision: Type.Optional(Type.Integer({ minimum: 1 })),
    /** The record's `dedup_key` and `batch_id`, so that `queuedRecordOf` rebuilds it exactly. */
    dedup_key: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    batch_id: Type.Optional(Type.String()),
    /** The record's `device_name`, likewise. */
    device_name: Type.Optional(Type.String()),
    /**
     * Capabilities the actor host must have to run the job (`requiredCapabilities` of the
     * spec): an actor host refuses it (ACTOR_OUTDATED) when its heartbeat does not list one, and
     * nothing reaches the device. Absent: none.
     */
    requires: Type.Optional(Type.Array(Type.String())),
  },
  { $id: 'JobEnvelope', additionalProperties: false },
);
export type JobEnvelope = Static<typeof JobEnvelope>;

/** What `sealed` holds once opened. Never logged, never stored in clear. */
export interface DeviceSecrets {
  username: string;
  /** Empty when the job logs in with a private key only. */
  password: string;
  enable: string | null;
  webhook_secret: string | null;
  /** Private key for public-key login (PEM/OpenSSH). Absent in jobs sealed before it. */
  private_key?: string | null;
  passphrase?: string | null;
  /** Credentials of each jump host, in the order of `spec.ssh.jump_hosts`. */
  jump_hosts?: JumpHostSecrets[];
}

/**
 * How one command of a job fared: `ok` (answered), `error` (rejected by the device, or ended by
 * a lost session or a cancellation: `error` says which), `timeout` (no prompt came back within
 * read_timeout, or the job timed out while it ran) or `not_run` (never sent: an earlier failure
 * ended the job).
 */
export const CommandStatus = Type.Object(
  {
    command: Type.String(),
    status: Type.Enum(['ok', 'error', 'timeout', 'not_run'], {
      description:
        'ok: the device answered (its output is in results); error: the device rejected it (error holds its words) or the session ended while it ran; timeout: the prompt did not come back in time; not_run: never sent, an earlier failure ended the job.',
    }),
    error: Type.Optional(
      Type.String({
        description:
          "error: the device's error line, or what ended the command; timeout: the wait that ran out.",
      }),
    ),
    parsed: Type.Optional(
      Type.Boolean({
        description:
          'Structured jobs only: whether a template parsed this output (its results entry is then a list of records); false when no template matched, a string is kept.',
      }),
    ),
    template: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        description:
          'Structured jobs only: the template that parsed the output: a community TextFSM template by its index name (`cisco_ios_show_version.textfsm`, several joined by `:`), a `ttp://` reference, or `textfsm_template` / `ttp_template` for template text the job carried; null when not parsed.',
      }),
    ),
  },
  { $id: 'CommandStatus', additionalProperties: false },
);
export type CommandStatus = Static<typeof CommandStatus>;

const CommandStatusList = Type.Union([Type.Array(CommandStatus), Type.Null()], {
  description:
    'Every command of the job, in order, with how it fared; for send-config the commit and save steps follow the lines when asked. Kept whatever ends the job (a rejected command, a read timeout, a lost session, a cancellation, a failed commit or save). Null when the job ended before its first command was sent (connection, login, enable).',
});

/** A job's results kept in an object store bucket: the JSON of the results map. */
export const ResultsRef = Type.Object(
  {
    bucket: Type.String(),
    name: Type.String(),
    /** Bytes of the stored JSON. */
    size: Type.Integer(),
    /** The object store's digest of it (`SHA-256=<base64url>`). */
    digest: Type.String(),
  },
  { $id: 'ResultsRef', additionalProperties: false },
);
export type ResultsRef = Static<typeof ResultsRef>;

/** One pre/post check of a config job: the outputs and their unified diff. */
export const PrePostCheck = Type.Object(
  {
    pre: Type.String({ description: 'Output before the change.' }),
    post: Type.Optional(
      Type.String({ description: 'Output after the change (not on a dry run).' }),
    ),
    diff: Type.Optional(
      Type.String({ description: 'Unified diff of pre and post; "" when they are equal.' }),
    ),
  },
  { $id: 'PrePostCheck', additionalProperties: false },
);
export type PrePostCheck = Static<typeof PrePostCheck>;

const PrePostChecks = Type.Record(Type.String(), PrePostCheck, {
  description: 'Config jobs with checks: per check command, its outputs and their diff.',
});

/** The job record kept in the `svc-jobs` bucket (key: job id). */
export const JobRecord = Type.Object(
  {
    job_id: Type.String(),
    status: Type.Enum(Object.values(JobStatus)),
    owner: Type.String(),
    username: Type.String(),
    spec: JobSpec,
    enqueued_at: Type.String(),
    started_at: NullableString,
    ended_at: NullableString,
    results: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
    /**
     * Where results too large for the record are kept (then `results` is null): readers
     * resolve it through `JobResults`. Absent when the results are inline.
     */
    results_ref: Type.Optional(ResultsRef),
    /** Absent in records written before it. */
    command_status: Type.Optional(CommandStatusList),
    error: NullableString,
    error_code: NullableString,
    error_retryable: Type.Union([Type.Boolean(), Type.Null()]),
    detected_platform: NullableString,
    /**
     * The placement (`JobEnvelope.placement`) that may start the job: the epoch of the shard
     * owner that took the job's shard over while it waited, written by compare-and-set, so that
     * an earlier owner that still holds it in a mailbox never starts it. Absent: no takeover
     * while it waited (any copy may start).
     */
    placement: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Actor host that started the job; the reaper fails it when that host goes silent. */
    actor_host: NullableString,
    /** Key in `svc-dedup` held while the job is in flight, cleared when it ends. */
    dedup_key: NullableString,
    /** The batch the job belongs to (POST /v2/batches); absent for single jobs. */
    batch_id: Type.Optional(NullableString),
    /** Batch jobs: the device entry's inventory `name`, for its events; absent when none. */
    device_name: Type.Optional(Type.String()),
    /** Dry runs: the device's diff of the candidate, or null where there is no candidate. */
    diff: Type.Optional(NullableString),
    /** Config jobs with `checks`. */
    checks: Type.Optional(PrePostChecks),
    /** Confirmed commits: when the device rolls the change back unless confirmed. */
    confirm_by: Type.Optional(Type.String()),
  },
  { $id: 'JobRecord', additionalProperties: false },
);
export type JobRecord = Static<typeof JobRecord>;

/** GET of a job: the specification's job result record. */
export const JobResult = Type.Object(
  {
    job_id: Type.String(),
    status: Type.Enum(Object.values(JobStatus)),
    results: Type.Optional(Type.Unknown()),
    command_status: Type.Optional(CommandStatusList),
    error: Type.Optional(NullableString),
    error_code: Type.Optional(NullableString),
    error_retryable: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    detected_platform: Type.Optional(NullableString),
    rendered: Type.Optional(
      Type.Array(Type.String(), {
        description:
          'Config jobs from a template: the configuration lines rendered and sent (a dry run: the lines it would send).',
      }),
    ),
    diff: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        description:
          'Dry runs: the device\'s own diff of the candidate configuration ("" when nothing changes); null on platforms without a candidate.',
      }),
    ),
    checks: Type.Optional(PrePostChecks),
    confirm_by: Type.Optional(
      DateTime(
        'Confirmed commits: when the device rolls the change back by itself unless POST /v2/jobs/{job_id}/confirm confirmed it first.',
      ),
    ),
    confirm_of: Type.Optional(
      Type.String({ description: 'Confirm jobs: the id of the confirmed commit they confirm.' }),
    ),
    tags: Type.Optional(Tags),
    enqueued_at: Type.Optional(DateTime()),
    started_at: Type.Optional(NullableDateTime),
    ended_at: Type.Optional(NullableDateTime),
  },
  { $id: 'JobResult' },
);
export type JobResult = Static<typeof JobResult>;

export function toJobResult(record: JobRecord): JobResult {
  return {
    job_id: record.job_id,
    status: record.status,
    results: record.results,
    command_status: record.command_status ?? null,
    error: record.error,
    error_code: record.error_code,
    error_retryable: record.error_retryable,
    detected_platform: record.detected_platform,
    ...(record.spec.template !== undefined || record.spec.dry_run === true
      ? { rendered: record.spec.commands }
      : {}),
    ...(record.diff !== undefined ? { diff: record.diff } : {}),
    ...(record.checks !== undefined ? { checks: record.checks } : {}),
    ...(record.confirm_by !== undefined ? { confirm_by: record.confirm_by } : {}),
    ...(record.spec.confirm_of !== undefined ? { confirm_of: record.spec.confirm_of.job_id } : {}),
    tags: record.spec.tags,
    enqueued_at: record.enqueued_at,
    started_at: record.started_at,
    ended_at: record.ended_at,
  };
}

/** 202 answer to every submission. */
export const EnqueueResponse = Type.Object(
  {
    job_id: Type.String({ description: 'job identifier (equals the request id)' }),
    message: Type.String(),
    queue_position: Type.Integer({ description: 'approximate position, 1 = next to run' }),
    enqueued_at: DateTime('ISO 8601'),
    timeout: Type.Integer({ description: 'job timeout, seconds' }),
    deduplicated: Type.Boolean({ default: false }),
    idempotent: Type.Boolean({ default: false }),
  },
  { $id: 'EnqueueResponse' },
);
export type EnqueueResponse = Static<typeof EnqueueResponse>;

/**
 * Published on `svc.events.job.<job_id>.<status>` at every status change. Results are not in
 * the event (they can be large); read the job record for them.
 */
export const JobEvent = Type.Object(
  {
    job_id: Type.String(),
    status: Type.Enum(Object.values(JobStatus)),
    at: Type.String({ description: 'ISO 8601 time of the change' }),
    context: Type.String(),
    host: Type.String(),
    /** The device's SSH port. Absent in events of older services. */
    port: Type.Optional(Type.Integer()),
    /** Batch jobs: the device entry's inventory name; absent when it had none. */
    name: Type.Optional(Type.String()),
    platform: Type.String(),
    error_code: Type.Optional(NullableString),
    error: Type.Optional(NullableString),
    kind: Type.Optional(Type.String()),
    enqueued_at: Type.Optional(Type.String()),
    started_at: Type.Optional(NullableString),
    ended_at: Type.Optional(NullableString),
    /** Whether a warm session served the job (terminal events of the actor only). */
    pooled: Type.Optional(Type.Boolean()),
    /** On `svc.events.batch.<id>.job.<status>` only: the batch of the job. */
    batch_id: Type.Optional(Type.String()),
  },
  { $id: 'JobEvent' },
);
export type JobEvent = Static<typeof JobEvent>;

/**
 * What every write of a job's record says of it in its `Svc-Record-Summary` header: the states
 * it went through (a `started_at` set, a terminal status) and what the job counts are labelled
 * and timed by. The record itself stays the truth; this is a copy of five of its fields.
 */
export const RecordSummary = Type.Object(
  {
    status: Type.Enum(Object.values(JobStatus)),
    platform: Type.String(),
    enqueued_at: DateTime(),
    started_at: NullableDateTime,
    ended_at: NullableDateTime,
    /**
     * The actor host that started it: the reaper fails a `started` job whose host it reaps
     * without reading the host's queue (a shard's job never is on one, docs/shards.md). Absent
     * from writers of an earlier release.
     */
    actor_host: Type.Optional(NullableString),
  },
  { $id: 'RecordSummary' },
);
export type RecordSummary = Static<typeof RecordSummary>;

/** The summary of `record` (`RecordSummary`). */
export function recordSummaryOf(record: {
  status: JobStatus;
  spec: { platform: string };
  enqueued_at: string;
  started_at: string | null;
  ended_at: string | null;
  actor_host?: string | null;
}): RecordSummary {
  return {
    status: record.status,
    platform: record.spec.platform,
    enqueued_at: record.enqueued_at,
    started_at: record.started_at,
    ended_at: record.ended_at,
    actor_host: record.actor_host ?? null,
  };
}

/** An entry of the failed-job registry (`svc-failed`, key: job id). Never holds credentials. */
export const FailedJob = Type.Object(
  {
    job_id: Type.String(),
    error: NullableString,
    error_code: NullableString,
    error_retryable: Type.Union([Type.Boolean(), Type.Null()]),
    failed_at: NullableString,
    func: Type.String({ description: 'job kind that failed: send_command, send_config, ...' }),
    host: Type.String(),
    platform: Type.String(),
    port: Type.Integer(),
    owner: Type.String(),
    /** Routing context of the job (admin keys see the failed jobs of their contexts). */
    context: Type.Optional(Type.String()),
    tags: Tags,
    /**
     * The job record as it ended (no secrets: records never hold any). Kept here because the
     * registry outlives `svc-jobs` (JOB_TTL_FAILED > JOB_TTL_SUCCESS): a listed failed job can
     * still be read and replayed. Absent in entries written before it.
     */
    record: Type.Optional(Type.Unsafe<JobRecord>({ type: 'object' })),
  },
  { $id: 'FailedJob' },
);
export type FailedJob = Static<typeof FailedJob>;

export const FUNC_NAMES: Record<JobKind, string> = {
  command: 'send_command',
  config: 'send_config',
  structured: 'send_command_structured',
};

/** An actor host's heartbeat in `svc-workers` (key: host id). */
export const WorkerHeartbeat = Type.Object(
  {
    host_id: Type.String(),
    contexts: Type.Array(Type.String()),
    capacity: Type.Integer({ description: 'ACTOR_MAX_SESSIONS' }),
    busy: Type.Integer({ description: 'sessions running now' }),
    active_jobs: Type.Integer(),
    started_at: Type.String(),
    last_beat: Type.String(),
    pool_size: Type.Integer({ description: 'warm sessions held' }),
    pool_hits: Type.Integer({ description: 'jobs served by a warm session since start' }),
    pool_misses: Type.Integer({ description: 'jobs that opened a new session since start' }),
    /** Set while the host shuts down: place nothing more on it. */
    draining: Type.Boolean(),
    /**
     * What the host understands (`ACTOR_CAPABILITIES`). Absent in heartbeats of hosts of
     * earlier releases: no job that `requires` anything is placed there.
     */
    capabilities: Type.Optional(Type.Array(Type.String())),
  },
  { $id: 'WorkerHeartbeat' },
);
export type WorkerHeartbeat = Static<typeof WorkerHeartbeat>;
