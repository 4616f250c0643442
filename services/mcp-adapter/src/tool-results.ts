import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import type { AdapterError } from './errors.js';
import type { JobRecord } from './job-wait.js';

/**
 * Output of every job tool, successful or not: the job record fields the specification names,
 * always present (null when unknown) so an assistant can branch on them. Other record fields
 * (timestamps, tags, detected_platform) and error details (http_status, …) pass through: a
 * loose object, since a raw shape would forbid them (additionalProperties: false).
 */
export const JobToolOutput = z.looseObject({
  job_id: z.string().nullable().describe('Job identifier; null when no job was created.'),
  status: z
    .string()
    .nullable()
    .describe('queued, started, finished, failed or cancelled; null when no job was created.'),
  results: z
    .unknown()
    .describe(
      'Command to output (text, or a list of objects for parsed output); null unless finished.',
    ),
  error: z.string().nullable().describe('Sanitized failure message.'),
  error_code: z
    .string()
    .nullable()
    .describe('Machine-parseable failure code (service job code or adapter code).'),
  error_retryable: z
    .boolean()
    .nullable()
    .describe('Whether the same call may succeed if repeated unchanged.'),
});

const FAILED_STATUSES: ReadonlySet<string> = new Set(['failed', 'cancelled']);

/** The record as the tool's structured content and as JSON text; failed jobs are tool errors. */
export function jobResult(
  record: JobRecord,
  options: { failureIsError?: boolean; extra?: Record<string, unknown> } = {},
): CallToolResult {
  const structured: Record<string, unknown> = {
    ...record,
    results: record['results'] ?? null,
    error: record['error'] ?? null,
    error_code: record['error_code'] ?? null,
    error_retryable: record['error_retryable'] ?? null,
    ...options.extra,
  };
  const isError = (options.failureIsError ?? true) && FAILED_STATUSES.has(record.status);
  return toolResult(structured, isError);
}

/** An adapter or API failure as a tool error with the same fields as a job result. */
export function errorResult(err: AdapterError): CallToolResult {
  const d = err.details;
  return toolResult(
    {
      job_id: d.jobId ?? null,
      status: d.jobStatus ?? null,
      results: null,
      error: err.message,
      error_code: err.code,
      error_retryable: err.retryable,
      ...(d.httpStatus !== undefined ? { http_status: d.httpStatus } : {}),
      ...(d.retryAfterSeconds !== undefined ? { retry_after_seconds: d.retryAfterSeconds } : {}),
      ...(d.validation !== undefined ? { validation_error: d.validation } : {}),
    },
    true,
  );
}

/** Plain data (lists, keys) as structured content and JSON text. */
export function dataResult(data: Record<string, unknown>): CallToolResult {
  return toolResult(data, false);
}

function toolResult(structured: Record<string, unknown>, isError: boolean): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(structured, null, 2) }],
    structuredContent: structured,
    ...(isError ? { isError: true } : {}),
  };
}
