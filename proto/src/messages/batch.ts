import { Type, type Static } from 'typebox';
import { DateTime, JobKind } from './job.js';
import { ConnectionFields, SendConfigRequest, Tags } from './send-command.js';
import { ConfigTemplateRef } from './config-template.js';
import { MAX_SECRET_LENGTH, NullableDeviceText } from '../device-input.js';

const NullableString = (description: string) =>
  Type.Union([Type.String(), Type.Null()], { description });

/** A device's name in the caller's inventory, echoed wherever the batch names its jobs. */
const DeviceName = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: '^[^\\u0000-\\u001f\\u007f]+$',
  description:
    "The device's name in the caller's inventory (an Ansible or Nornir host name), not used to connect: echoed with host and port in the batch's answer, job listing, SSE job events and NATS batch events.",
});

/** One device of a batch: where it is and what differs from the shared fields. */
export const BatchDevice = Type.Object(
  {
    name: Type.Optional(DeviceName),
    host: Type.String({ description: 'IPv4, IPv6 or RFC 1123 host name of the device.' }),
    port: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 65535, description: 'SSH port. Default 22.' }),
    ),
    platform: Type.Optional(Type.String({ description: 'Overrides the shared platform.' })),
    username: Type.Optional(
      NullableDeviceText('Overrides the shared username (Bearer only).', MAX_SECRET_LENGTH),
    ),
    password: Type.Optional(
      NullableDeviceText('Overrides the shared password (Bearer only).', MAX_SECRET_LENGTH),
    ),
    enable: Type.Optional(
      NullableDeviceText('Overrides the shared enable password.', MAX_SECRET_LENGTH),
    ),
    tags: Type.Optional(Tags),
    vars: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          "config batches with a template: this device's variables, merged over the template's vars (the device wins).",
      }),
    ),
  },
  { additionalProperties: false },
);
export type BatchDevice = Static<typeof BatchDevice>;

// host, ip and port are per device.
const SharedFields = Object.fromEntries(
  Object.entries(ConnectionFields).filter(([k]) => !['host', 'ip', 'port'].includes(k)),
) as Omit<typeof ConnectionFields, 'host' | 'ip' | 'port'>;

/** POST /v2/batches: shared job fields, a device list and, for config batches, rollout control. */
export const BatchRequest = Type.Object(
  {
    kind: Type.Enum(Object.values(JobKind), {
      description: 'Job kind of every device: command, config or structured.',
    }),
    ...SharedFields,
    webhook_url: Type.Optional(
      NullableString(
        'HTTPS URL notified once when the batch ends (finished or cancelled), with the batch summary; not per job.',
      ),
    ),
    webhook_secret: Type.Optional(
      NullableString('Secret for the HMAC-SHA256 signature of the batch webhook.'),
    ),
    devices: Type.Array(BatchDevice, {
      minItems: 1,
      description: 'One job per device, in this order. At most BATCH_MAX_DEVICES.',
    }),
    save_config: Type.Optional(
      Type.Boolean({ description: 'config batches: save. Default false.' }),
    ),
    commit: Type.Optional(
      Type.Union(SendConfigRequest.properties.commit.anyOf, {
        description:
          'config batches: commit (true), or the commit options of send-config ({"comment", "confirmed_minutes", "check"}) for every device, checked against each device\'s platform; each confirmed commit is confirmed per job (POST /v2/jobs/{job_id}/confirm). Default false.',
      }),
    ),
    // The configuration workflow fields of send-config (docs/config-workflows.md).
    commands: Type.Optional(ConnectionFields.commands),
    template: Type.Optional(
      Type.Object(ConfigTemplateRef.properties, {
        additionalProperties: false,
        description:
          "config batches: render each device's lines from this template (stored or inline); its vars are merged with each device's own vars. Exclusive with commands.",
      }),
    ),
    dry_run: SendConfigRequest.properties.dry_run,
    checks: SendConfigRequest.properties.checks,
    error_patterns: SendConfigRequest.properties.error_patterns,
    textfsm_template: Type.Optional(NullableString('structured batches: TextFSM template.')),
    ttp_template: Type.Optional(NullableString('structured batches: TTP template.')),
    max_parallel: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: 'config batches: at most this many jobs in flight.',
      }),
    ),
    canary: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'config batches: run this many devices first; the rest start once they ended.',
      }),
    ),
    stop_on_failure_ratio: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description:
          'config batches: when failed/ended exceeds this, jobs not yet started are cancelled. ' +
          'Default 0 with a canary (any failure stops), otherwise never.',
      }),
    ),
  },
  { $id: 'BatchRequest', description: 'POST /v2/batches' },
);
export type BatchRequest = Static<typeof BatchRequest>;

/**
 * A config batch as checked: the same fields, none other. Command and structured batches keep
 * accepting unknown fields (older clients send some); a config batch refuses them, since a
 * misspelt option must never push a change as if it were absent.
 */
export const ConfigBatchRequest = Type.Object(BatchRequest.properties, {
  additionalProperties: false,
});

export const BatchJobRef = Type.Object({
  job_id: Type.String(),
  host: Type.String(),
  port: Type.Integer(),
  /** The device entry's `name`; absent when it had none. */
  name: Type.Optional(Type.String()),
});
export type BatchJobRef = Static<typeof BatchJobRef>;

/** 202 answer of POST /v2/batches. */
export const BatchCreated = Type.Object(
  {
    batch_id: Type.String(),
    jobs: Type.Array(BatchJobRef),
    total: Type.Integer(),
  },
  { $id: 'BatchCreated' },
);
export type BatchCreated = Static<typeof BatchCreated>;

export const BatchState = {
  running: 'running',
  finished: 'finished',
  cancelled: 'cancelled',
} as const;
export type BatchState = (typeof BatchState)[keyof typeof BatchState];

/** Rollout control of a batch as stored; null fields mean "no limit". */
export const Rollout = Type.Object({
  max_parallel: Type.Union([Type.Integer(), Type.Null()]),
  canary: Type.Integer(),
  stop_on_failure_ratio: Type.Union([Type.Number(), Type.Null()]),
});
export type Rollout = Static<typeof Rollout>;

/** The batch record in `svc-batches` (key: batch id). Never holds credentials in clear. */
export const BatchRecord = Type.Object(
  {
    batch_id: Type.String(),
    owner: Type.String(),
    kind: Type.Enum(Object.values(JobKind)),
    /** Routing context of every job (admin keys see batches of their contexts). */
    context: Type.String(),
    status: Type.Enum(Object.values(BatchState)),
    total: Type.Integer(),
    jobs: Type.Array(BatchJobRef),
    created_at: Type.String(),
    ended_at: Type.Union([Type.String(), Type.Null()]),
    /** Null: every job was queued at creation. */
    rollout: Type.Union([Rollout, Type.Null()]),
    /** Jobs [0, released) have been let go (their envelopes published or being published). */
    released: Type.Integer(),
    /** Why jobs not yet started were cancelled: `cancelled by its submitter` or the ratio rule. */
    stopped_reason: Type.Union([Type.String(), Type.Null()]),
    /**
     * The batch's webhook, sealed (`Sealer.seal` of the URL string, as a job's `webhook_url`):
     * a URL may carry credentials. Absent or null: none.
     */
    webhook_url: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    /** The webhook's signing secret, sealed. Absent or null: deliveries are unsigned. */
    webhook_secret: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  },
  { $id: 'BatchRecord' },
);
export type BatchRecord = Static<typeof BatchRecord>;

export const BatchCounts = Type.Object({
  queued: Type.Integer(),
  started: Type.Integer(),
  finished: Type.Integer(),
  failed: Type.Integer(),
  cancelled: Type.Integer(),
});
export type BatchCounts = Static<typeof BatchCounts>;

/** GET /v2/batches/{id}; also the final summary event of a batch. */
export const BatchSummary = Type.Object(
  {
    batch_id: Type.String(),
    kind: Type.Enum(Object.values(JobKind)),
    status: Type.Enum(Object.values(BatchState)),
    total: Type.Integer(),
    counts: BatchCounts,
    error_codes: Type.Record(Type.String(), Type.Integer(), {
      description: 'error_code → number of jobs that ended with it',
    }),
    created_at: DateTime(),
    ended_at: Type.Union([DateTime(), Type.Null()]),
    stopped_reason: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: 'BatchSummary' },
);
export type BatchSummary = Static<typeof BatchSummary>;
