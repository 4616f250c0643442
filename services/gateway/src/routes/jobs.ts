import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  Buckets,
  decodeJson,
  toJobResult,
  type JobKind,
  type Stores,
  type Transcript,
} from '@svc/proto';
import type { JobControl } from '../job-control.js';
import type { JobIntake } from '../job-intake.js';
import { HttpError } from '../http-errors.js';
import { requestIdOf } from '../http-server.js';
import { guarded, type Authenticate } from './context.js';

type JobParams = { Params: { job_id: string } };

export interface JobRoutesDeps {
  authenticate: Authenticate;
  intake: JobIntake;
  control: JobControl;
  stores: Stores;
  onStoreError: (err: unknown, req: FastifyRequest) => void;
}

const SUBMIT_ROUTES: [string, JobKind][] = [
  ['/v2/send-command', 'command'],
  ['/v2/send-config', 'config'],
  ['/v2/send-command-structured', 'structured'],
];

/** Submission, result and cancellation routes of v2. */
export function registerJobRoutes(app: FastifyInstance, deps: JobRoutesDeps): void {
  const { authenticate, intake, control, onStoreError } = deps;

  for (const [path, kind] of SUBMIT_ROUTES) {
    app.post(
      path,
      guarded(async (req, reply) => {
        const caller = await authenticate(req);
        const traceparent = req.headers['traceparent'];
        const response = await intake.submit({
          kind,
          body: req.body as string | undefined,
          caller,
          requestId: header(req, 'x-request-id'),
          idempotencyKey: header(req, 'x-idempotency-key'),
          source: req.ip,
          ...(typeof traceparent === 'string' ? { traceparent } : {}),
        });
        void reply.header('X-Request-ID', response.job_id);
        return reply.code(202).send(response);
      }, onStoreError),
    );
  }

  const getJob = guarded<FastifyRequest<JobParams>>(async (req, reply) => {
    const caller = await authenticate(req);
    const record = await control.read(caller, req.params.job_id);
    return reply.code(200).send(toJobResult(record));
  }, onStoreError);
  app.get<JobParams>('/v2/send-command/:job_id', getJob);
  app.get<JobParams>('/v2/send-command-structured/:job_id', getJob);
  app.get<JobParams>('/v2/jobs/:job_id', getJob);

  // The device session of a job: its submitter only (not even an admin key), since a session
  // shows more of the device than the results do.
  app.get<JobParams>(
    '/v2/jobs/:job_id/transcript',
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
        .send(decodeJson<Transcript>(entry.value));
    }, onStoreError),
  );

  app.delete<JobParams>(
    '/v2/send-command/:job_id',
    guarded<FastifyRequest<JobParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      if (caller.role === 'viewer') throw new HttpError(403, 'role viewer may not cancel jobs');
      const cancelled = await control.cancel(caller, req.params.job_id, originOf(req));
      if (!cancelled) throw new HttpError(409, 'job already finished');
      return reply.code(204).send();
    }, onStoreError),
  );
}

/** Where a request came from, for audit lines. */
export function originOf(req: FastifyRequest): { source: string; requestId: string } {
  return { source: req.ip, requestId: requestIdOf(req) };
}

export function header(req: FastifyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
