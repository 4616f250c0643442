import type { Counter } from 'prom-client';
import type { DeviceSecrets, JobRecord, Sealer } from '@svc/proto';
import type { AuditLog, Logger } from '@svc/telemetry';
import type { Jobs } from '@svc/jobs';
import type { KV } from '@nats-io/kv';
import type { DeviceActorConfig } from '../config.js';
import type { RunDeviceJob } from '../device/device-job.js';
import type { DeviceAdmission } from './device-admission.js';
import type { DeviceLocks } from './device-claim.js';
import type { DeviceHolds } from './cluster-claims.js';
import type { Semaphore } from './mailbox.js';
import type { ParsedOutputs } from './structured-output.js';
import type { RunningJobs } from './running-jobs.js';

/**
 * Turns raw outputs of a structured job into parsed results (per command), with per command
 * whether a template parsed it and which (merged into command_status).
 */
export type ParseOutputs = (
  record: JobRecord,
  raw: Record<string, unknown>,
  platform: string,
) => Promise<ParsedOutputs>;

/**
 * What every device actor of one host shares: the stores, the guards, the device layer and the
 * host's session slots. Built once by the host; an actor holds only its own mailbox.
 */
export interface ActorContext {
  readonly config: DeviceActorConfig;
  readonly hostId: string;
  readonly log: Logger;
  readonly audit: AuditLog;
  readonly sealer: Sealer;
  /** Every change of a job's status (start, finish, fail) goes through here. */
  readonly jobs: Jobs;
  /** Reachability, host keys, SSH profile, lockout and breaker: what a job passes first. */
  readonly admission: DeviceAdmission;
  readonly runner: RunDeviceJob;
  readonly parseOutputs: ParseOutputs | undefined;
  /** ACTOR_MAX_SESSIONS across every device of the host. */
  readonly sessions: Semaphore;
  /** DEVICE_MAX_SESSIONS per device key (pinned host key), across the device's addresses. */
  readonly deviceLocks: DeviceLocks;
  /** The same key's claim across hosts (`svc-locks`): one host at a time holds sessions to it. */
  readonly deviceHolds: DeviceHolds;
  /** Jobs running now, by id: what a cancel or a shutdown aborts. */
  readonly running: RunningJobs;
  /**
   * Jobs whose bookkeeping failed past every retry (their message sent back): a host that stops
   * fails those still started on it.
   */
  readonly unsettled: Set<string>;
  /** Whether a host's heartbeat is gone from `svc-workers` (reaped, or stopped cleanly). */
  readonly hostGone: (hostId: string) => Promise<boolean>;
  readonly transcripts: KV;
  /** Whether a finished job of this context keeps its transcript (failed jobs always do). */
  readonly transcriptWanted: (context: string) => boolean;
  readonly jobsEnded: Counter<'status'>;
  /** Set once the host stops taking work: queued jobs stay in their shards, not run. */
  readonly draining: () => boolean;
  readonly onJobEnded: ((record: JobRecord, secrets: DeviceSecrets) => void) | undefined;
}
