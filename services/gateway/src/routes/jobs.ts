import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  Buckets,
  EnqueueResponse,
  JobResult,
  SendCommandRequest,
  SendCommandStructuredRequest,
  SendConfigRequest,
  decodeMessage,
  Transcript,
  askedCommandMode,
  toJobResult,
  type CommandMode,
  type JobKind,
} from '@svc/proto';
import { type Stores } from '@svc/nats';
import type { TSchema } from 'typebox';
import type { JobControl } from '../job-control.js';
import type { Caller } from '../caller.js';
import { JobIntake } from '../job-intake.js';
import { HttpError } from '../http-errors.js';
import { deadlineOf, requestIdOf } from '../http-server.js';
import { validInput } from '../request-input.js';
import { guarded, type Authenticate } from './context.js';
import {
  ENQUEUE_EXAMPLE,
  JOB_RESULT_EXAMPLE,
  JobIdParam,
  SubmitHeaders,
  jobLocation,
  ref,
  routeSchema,
  type ResponseDoc,
} from './route-schemas.js';

type JobParams = { Params: { job_id: string } };

export interface JobRoutesDeps {
  authenticate: Authenticate;
  intake: JobIntake;
  control: JobControl;
  stores: Stores;
  onStoreError: (err: unknown, req: FastifyRequest) => void;
}

const SUBMIT_ROUTES: [string, JobKind, string, string, TSchema][] = [
  ['/v2/send-command', 'command', 'sendCommand', 'Run read-only commands', SendCommandRequest],
  ['/v2/send-config', 'config', 'sendConfig', 'Push configuration commands', SendConfigRequest],
  [
    '/v2/send-command-structured',
    'structured',
    'sendCommandStructured',
    'Run commands and parse their output (TextFSM or TTP)',
    SendCommandStructuredRequest,
  ],
];

/** The 202 of every submission: the job, and where to read it. */
export const ACCEPTED: ResponseDoc = {
  description:
    'Accepted and queued (or an in-flight duplicate, or a repeated idempotency key): read the job at Location.',
  body: ref(EnqueueResponse),
  example: ENQUEUE_EXAMPLE,
  headers: ['Location'],
};

/** The 200 of a job read. */
export const JOB_READ: ResponseDoc = {
  description: 'The job record: results once finished, error fields once failed.',
  body: ref(JobResult),
  example: JOB_RESULT_EXAMPLE,
};

/** The body example of a submission. */
export const SUBMIT_EXAMPLE = {
  host: '192.0.2.10',
  platform: 'cisco_ios',
  commands: ['show version'],
};

/** Answers a submission: 202, the job id as X-Request-ID, Location of the job. */
export function accepted(reply: FastifyReply, jobId: string, body: unknown): FastifyReply {
  return reply
    .code(202)
    .header('X-Request-ID', jobId)
    .header('Location', jobLocation(jobId))
    .send(body);
}

/** Submission, result and cancellation routes of v2. */
export function registerJobRoutes(app: FastifyInstance, deps: JobRoutesDeps): void {
  const { authenticate, intake, control, onStoreError } = deps;

  for (const [path, kind, operationId, summary, schema] of SUBMIT_ROUTES) {
    app.post(
      path,
      {
        schema: routeSchema({
          operationId,
          summary,
          tags: ['jobs'],
          access: 'caller',
          body: ref(schema),
          bodyExample: SUBMIT_EXAMPLE,
          requestHeaders: SubmitHeaders,
          ok: { 202: ACCEPTED },
          errors: [403, 409, 422],
        }),
      },
      guarded(async (req, reply) => {
        const caller = await authenticate(req);
        const traceparent = req.headers['traceparent'];
        const response = await intake.submit({
          kind,
          ...submissionInput(req, caller),
          caller,
          idempotencyKey: header(req, 'x-idempotency-key'),
          source: req.ip,
          deadline: deadlineOf(req),
          ...(typeof traceparent === 'string' ? { traceparent } : {}),
        });
        return accepted(reply, response.job_id, response);
      }, onStoreError),
    );
  }

  const getJob = guarded<FastifyRequest<JobParams>>(async (req, reply) => {
    const caller = await authenticate(req);
    const record = await control.readWithResults(caller, req.params.job_id);
    return reply.code(200).send(toJobResult(record));
  }, onStoreError);
  const readSchema = (operationId: string, summary: string) => ({
    schema: routeSchema({
      operationId,
      summary,
      tags: ['jobs'],
      access: 'caller',
      params: JobIdParam,
      ok: { 200: JOB_READ },
      errors: [403, 404],
    }),
  });
  app.get<JobParams>(
    '/v2/send-command/:job_id',
    readSchema('getSendCommandJob', 'A job submitted with send-command'),
    getJob,
  );
  app.get<JobParams>(
    '/v2/send-command-structured/:job_id',
    readSchema('getStructuredJob', 'A job submitted with send-command-structured'),
    getJob,
  );
  app.get<JobParams>('/v2/jobs/:job_id', readSchema('getJob', 'A job, of any kind'), getJob);

  // The device session of a job: its submitter only (not even an admin key), since a session
  // shows more of the device than the results do.
  app.get<JobParams>(
    '/v2/jobs/:job_id/transcript',
    {
      schema: routeSchema({
        operationId: 'getJobTranscript',
        summary:
          'The device session transcript of a job (its submitter only): kept for failed jobs, on request, or per context',
        tags: ['jobs'],
        access: 'caller',
        params: JobIdParam,
        ok: {
          200: {
            description: 'What was sent and received, redacted and size-capped.',
            body: ref(Transcript),
            headers: ['Cache-Control'],
          },
        },
        errors: [403, 404],
      }),
    },
    guarded<FastifyRequest<JobParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      const jobId = req.params.job_id;
      const record = await control.read(caller, jobId);
      if (record.owner !== caller.id) throw HttpError.foreignJob();
      const entry = await deps.stores[Buckets.transcripts].get(jobId);
      if (!entry || entry.operation !== 'PUT') {
        throw new HttpError(
          404,
          `job ${jobId} has no transcript (kept for failed jobs, transcript: true, or TRANSCRIPT_CONTEXTS)`,
        );
      }
      return reply
        .code(200)
        .header('Cache-Control', 'no-store')
        .send(decodeMessage(Transcript, entry.value));
    }, onStoreError),
  );

  app.delete<JobParams>(
    '/v2/send-command/:job_id',
    {
      schema: routeSchema({
        operationId: 'cancelJob',
        summary: 'Cancel a queued or running job (best effort)',
        tags: ['jobs'],
        access: 'caller',
        params: JobIdParam,
        ok: { 204: { description: 'Cancelled.' } },
        errors: [403, 404, 409],
      }),
    },
    guarded<FastifyRequest<JobParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      if (caller.role === 'viewer') throw new HttpError(403, 'role viewer may not cancel jobs');
      const cancelled = await control.cancel(caller, req.params.job_id, originOf(req));
      if (!cancelled) throw new HttpError(409, 'job already finished');
      return reply.code(204).send();
    }, onStoreError),
  );
}

/**
 * The input of a submission, in the order its answers are due: 403 for a role that may not
 * submit, then the headers (X-Request-ID, X-Svc-Command-Policy), bad JSON, and the body's schema.
 */
export function submissionInput(
  req: FastifyRequest,
  caller: Caller,
): { jobId: string; commandPolicy: CommandMode | null; body: unknown } {
  JobIntake.mustSubmit(caller);
  const jobId = jobIdOf(req);
  return { jobId, commandPolicy: askedPolicyOf(req), body: validInput(req, 'body') };
}

/** The headers of a request that makes a new job, judged by SubmitHeaders. */
function submitHeaders(req: FastifyRequest): {
  'x-request-id'?: string;
  'x-svc-command-policy'?: string;
} {
  // A route without SubmitHeaders would take any text for a job id.
  if (!req.getValidationFunction('headers')) throw new Error(`${req.url}: no header schema`);
  return validInput(req, 'headers');
}

/**
 * The id of a new job: the request's X-Request-ID (SubmitHeaders: a UUID v4), else a fresh one.
 * Every header of SubmitHeaders is judged here, each bad one a 422.
 */
export function jobIdOf(req: FastifyRequest): string {
  const sent = submitHeaders(req)['x-request-id'];
  return sent === undefined || sent === '' ? randomUUID() : sent.toLowerCase();
}

/** The mode X-Svc-Command-Policy asks for (SubmitHeaders: a mode in any case, or none). */
export function askedPolicyOf(req: FastifyRequest): CommandMode | null {
  return askedCommandMode(submitHeaders(req)['x-svc-command-policy']);
}

/** Where a request came from, for audit lines. */
export function originOf(req: FastifyRequest): { source: string; requestId: string } {
  return { source: req.ip, requestId: requestIdOf(req) };
}

export function header(req: FastifyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
