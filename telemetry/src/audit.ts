import type { DestinationStream, Logger } from 'pino';
import { bufferedStdout, createLogger } from './logging.js';

/** Audit event types (the specification's current vocabulary). */
export const AuditEvent = {
  jobSubmitted: 'job.submitted',
  jobStarted: 'job.started',
  jobCompleted: 'job.completed',
  deviceFailure: 'device.failure',
  jobOrphaned: 'job.orphaned',
  // Who did what at the gateway (the older vocabulary's names where it has one).
  jobCancelled: 'job.cancelled',
  jobReplayed: 'job.replayed',
  jobConfirmQueued: 'job.confirm_queued',
  authFailed: 'auth.failed',
  keyCreated: 'apikey.created',
  keyRotated: 'apikey.rotated',
  keyRevoked: 'apikey.revoked',
  hostKeyLoaded: 'host_key.loaded',
  hostKeyForgotten: 'host_key.forgotten',
  configTemplateSaved: 'config_template.saved',
  configTemplateDeleted: 'config_template.deleted',
} as const;
export type AuditEvent = (typeof AuditEvent)[keyof typeof AuditEvent];

export interface AuditFields {
  request_id: string;
  username: string;
  device_ip: string;
  platform: string;
  status: string;
  duration_ms: number;
  [extra: string]: unknown;
}

/**
 * Audit events are JSON log lines with logger `svc.audit`. They have a logger of their own (same
 * destination and redaction as the service's) so that LOG_LEVEL never silences them.
 */
export class AuditLog {
  readonly #log: Logger;
  constructor(service: string, destination?: DestinationStream) {
    this.#log = createLogger(service, 'INFO', destination ?? bufferedStdout(), 'svc.audit');
  }

  emit(eventType: AuditEvent, fields: AuditFields): void {
    this.#log.info(
      { event_type: eventType, ...fields, duration_ms: Math.round(fields.duration_ms) },
      eventType,
    );
  }
}
