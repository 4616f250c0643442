import { Type, type Static } from 'typebox';

/**
 * Sizes of the paged job lists (`per_page`; `page` counts from 1): GET /v2/jobs and
 * GET /v2/batches/{batch_id}/jobs. The gateway's query schemas and the MCP tools take them here.
 */
export const PageSizes = {
  jobs: { default: 20, max: 100 },
  batchJobs: { default: 50, max: 500 },
} as const;

/** One validation failure: where, what, and a pydantic-style type name. */
export const ValidationIssue = Type.Object({
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
  msg: Type.String(),
  type: Type.String(),
});
export type ValidationIssue = Static<typeof ValidationIssue>;

/** 422 body. */
export const ValidationErrorBody = Type.Object(
  {
    message: Type.String(),
    validation_error: Type.Object({ json: Type.Array(ValidationIssue) }),
  },
  { $id: 'ValidationErrorBody' },
);
export type ValidationErrorBody = Static<typeof ValidationErrorBody>;

/** 401, 403, 404, 409, 429, 503 body. */
export const MessageBody = Type.Object(
  { message: Type.String(), error_code: Type.Optional(Type.String()) },
  { $id: 'MessageBody' },
);
export type MessageBody = Static<typeof MessageBody>;

export const HealthStatus = {
  healthy: 'healthy',
  degraded: 'degraded',
  noWorkers: 'no_workers',
} as const;

export const HealthRecord = Type.Object(
  {
    status: Type.Enum(Object.values(HealthStatus)),
    version: Type.String(),
    uptime_seconds: Type.Integer(),
    components: Type.Object({
      // Only the component statuses SPEC's Health record lists.
      redis: Type.Object({ status: Type.Enum(['healthy', 'unhealthy']) }),
      queue: Type.Object({ status: Type.Enum(['healthy', 'unhealthy']), depth: Type.Integer() }),
      workers: Type.Object({
        status: Type.Enum(['healthy', 'unhealthy', 'no_workers']),
        count: Type.Integer(),
        active_jobs: Type.Integer(),
      }),
      failed_jobs: Type.Integer(),
    }),
    message: Type.Optional(
      Type.String({
        description:
          'When degraded: what the gateway waits for, e.g. `waiting for NATS at nats://host:4222` (additive).',
      }),
    ),
  },
  { $id: 'HealthRecord' },
);
export type HealthRecord = Static<typeof HealthRecord>;
