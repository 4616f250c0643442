import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import {
  V1SendCommandRequest,
  V1SendCommandStructuredRequest,
  toJobResult,
  type JobKind,
} from '@svc/proto';
import { Type, type TSchema } from 'typebox';
import { hasRole } from '../caller.js';
import type { GatewayContext } from '../gateway-context.js';
import { HttpError } from '../http-errors.js';
import { guarded } from './context.js';
import { deadlineOf } from '../http-server.js';
import { jobQueryHandlers, jobQuerySchemas } from './job-queries.js';
import { ReplayRequest } from './replay.js';
import { parsedBody, rawBodyOf } from '../request-input.js';
import {
  ACCEPTED,
  JOB_READ,
  SUBMIT_EXAMPLE,
  accepted,
  askedPolicyOf,
  header,
  originOf,
  submissionInput,
} from './jobs.js';
import { JobIdParam, SubmitHeaders, ref, routeSchema, type RouteDoc } from './route-schemas.js';

type JobParams = { Params: { job_id: string } };

/** When v2 superseded these routes (RFC 9745 `Deprecation`, a structured date). */
export const V1_DEPRECATED_AT = '2025-01-01T00:00:00Z';

/** The v2 route a v1 replay is delegated to, when the replay module registered it. */
const V2_REPLAY = '/v2/jobs/:job_id/replay';

/** Headers a delegated v2 answer keeps on its way back. */
const PASSED_HEADERS = [
  'content-type',
  'x-request-id',
  'location',
  'retry-after',
  'www-authenticate',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];

/** A v1 route's schema: deprecated, tagged v1. */
const v1Schema = (d: Omit<RouteDoc, 'tags' | 'access' | 'deprecated'>) => ({
  schema: routeSchema({ ...d, tags: ['v1'], access: 'caller', deprecated: true }),
});

/**
 * The deprecated /v1 routes, kept for old clients: same authentication, roles, validation and
 * ownership as v2, the retired request fields (`ip`, `device_type`, `delay_factor`) accepted,
 * v1's cancel answers (200 / 404 / 400), and `Deprecation` + `Sunset` (+ a successor `Link`) on
 * every answer, errors included.
 */
export function registerV1Routes(app: FastifyInstance, ctx: GatewayContext): void {
  const deprecation = `@${Math.floor(Date.parse(V1_DEPRECATED_AT) / 1000)}`;
  const sunset = new Date(ctx.config.SVC_V1_SUNSET).toUTCString();
  const deprecated: onRequestHookHandler = (_req, reply, done) => {
    void reply.header('Deprecation', deprecation);
    void reply.header('Sunset', sunset);
    void reply.header('Link', '</v2/openapi.json>; rel="successor-version"');
    done();
  };
  const v1 = { onRequest: deprecated };
  const submitSchema = (operationId: string, summary: string, schema: TSchema) =>
    v1Schema({
      operationId,
      summary,
      body: ref(schema),
      bodyExample: SUBMIT_EXAMPLE,
      requestHeaders: SubmitHeaders,
      ok: { 202: ACCEPTED },
      errors: [403, 409, 422],
    });
  const readSchema = (operationId: string, summary: string) =>
    v1Schema({
      operationId,
      summary,
      params: JobIdParam,
      ok: { 200: JOB_READ },
      errors: [403, 404],
    });

  const submit = (kind: JobKind) =>
    guarded(async (req, reply) => {
      const caller = await ctx.authenticate(req);
      const traceparent = header(req, 'traceparent');
      const response = await ctx.intake.submit({
        kind,
        ...submissionInput(req, caller),
        caller,
        idempotencyKey: header(req, 'x-idempotency-key'),
        source: req.ip,
        deadline: deadlineOf(req),
        ...(traceparent ? { traceparent } : {}),
      });
      return accepted(reply, response.job_id, response);
    }, ctx.onStoreError);
  app.post(
    '/v1/send_command',
    {
      ...v1,
      ...submitSchema(
        'v1SendCommand',
        'Deprecated: use POST /v2/send-command',
        V1SendCommandRequest,
      ),
    },
    submit('command'),
  );
  app.post(
    '/v1/send_command_structured',
    {
      ...v1,
      ...submitSchema(
        'v1SendCommandStructured',
        'Deprecated: use POST /v2/send-command-structured',
        V1SendCommandStructuredRequest,
      ),
    },
    submit('structured'),
  );

  const getJob = guarded<FastifyRequest<JobParams>>(async (req, reply) => {
    const caller = await ctx.authenticate(req);
    const record = await ctx.control.readWithResults(caller, req.params.job_id);
    return reply.code(200).send(toJobResult(record));
  }, ctx.onStoreError);
  app.get<JobParams>(
    '/v1/send_command/:job_id',
    { ...v1, ...readSchema('v1GetJob', 'Deprecated: use GET /v2/send-command/{job_id}') },
    getJob,
  );
  app.get<JobParams>(
    '/v1/send_command_structured/:job_id',
    {
      ...v1,
      ...readSchema(
        'v1GetStructuredJob',
        'Deprecated: use GET /v2/send-command-structured/{job_id}',
      ),
    },
    getJob,
  );

  app.delete<JobParams>(
    '/v1/send_command/:job_id',
    {
      ...v1,
      ...v1Schema({
        operationId: 'v1CancelJob',
        summary: 'Deprecated cancel: 200 on success, 404 unknown, 400 already finished',
        params: JobIdParam,
        ok: {
          200: {
            description: 'Cancelled.',
            body: Type.Object({
              job_id: Type.String(),
              status: Type.Literal('cancelled'),
              message: Type.String(),
            }),
            example: {
              job_id: '3f1c9a4e-8d1b-4e53-9a51-2f7f3e1f0c11',
              status: 'cancelled',
              message: 'job cancelled',
            },
          },
        },
        errors: [400, 403, 404],
      }),
    },
    guarded<FastifyRequest<JobParams>>(async (req, reply) => {
      const caller = await ctx.authenticate(req);
      if (caller.role === 'viewer') throw new HttpError(403, 'role viewer may not cancel jobs');
      const jobId = req.params.job_id;
      // v1 answered an ended job with 400 where v2 answers 409.
      if (!(await ctx.control.cancel(caller, jobId, originOf(req))))
        throw new HttpError(400, 'job already finished');
      return reply.code(200).send({ job_id: jobId, status: 'cancelled', message: 'job cancelled' });
    }, ctx.onStoreError),
  );

  const queries = jobQueryHandlers(app, ctx);
  const s = jobQuerySchemas(true);
  app.get('/v1/jobs', { ...v1, schema: s.list }, queries.list);
  app.get('/v1/jobs/failed', { ...v1, schema: s.failed }, queries.failed);
  app.get('/v1/contexts', { ...v1, schema: s.contexts }, queries.contexts);

  app.post<JobParams>(
    '/v1/jobs/:job_id/replay',
    {
      ...v1,
      ...v1Schema({
        operationId: 'v1ReplayJob',
        summary: 'Deprecated: use POST /v2/jobs/{job_id}/replay',
        params: JobIdParam,
        // Passed on to the v2 route, which judges them (the fallback judges the policy).
        requestHeaders: SubmitHeaders,
        body: ref(ReplayRequest),
        bodyOptional: true,
        ok: { 202: ACCEPTED },
        errors: [403, 404, 409, 422],
      }),
    },
    guarded<FastifyRequest<JobParams>>(async (req, reply) => {
      if (app.hasRoute({ method: 'POST', url: V2_REPLAY })) return delegate(app, req, reply);
      return replayFallback(ctx, req, reply);
    }, ctx.onStoreError),
  );
}

/** Runs the v2 replay route in-process with the same headers and body; passes its answer on. */
async function delegate(
  app: FastifyInstance,
  req: FastifyRequest<JobParams>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (
      v === undefined ||
      ['host', 'content-length', 'connection', 'transfer-encoding'].includes(k)
    )
      continue;
    headers[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  const answer = await app.inject({
    method: 'POST',
    url: `/v2/jobs/${encodeURIComponent(req.params.job_id)}/replay`,
    headers,
    // The client's address, not the injector's: brute-force limits and audit lines use it.
    remoteAddress: req.ip,
    ...(rawBodyOf(req) !== undefined ? { payload: rawBodyOf(req) } : {}),
  });
  for (const name of PASSED_HEADERS) {
    const value = answer.headers[name];
    if (value !== undefined) void reply.header(name, value);
  }
  return reply.code(answer.statusCode).send(answer.body);
}

/**
 * Replay without the v2 module: a failed job of the caller runs again as a new job with the
 * caller's current credentials (Basic: its own; Bearer: username/password in the body).
 */
async function replayFallback(
  ctx: GatewayContext,
  req: FastifyRequest<JobParams>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const caller = await ctx.authenticate(req);
  if (!hasRole(caller, 'operator'))
    throw new HttpError(403, `role ${caller.role} may not replay jobs`);
  const record = await ctx.control.read(caller, req.params.job_id);
  if (record.status !== 'failed') throw new HttpError(409, 'only failed jobs can be replayed');
  let creds: { username: string; password: string; enable: string | null };
  if (caller.basic) creds = { ...caller.basic, enable: null };
  else {
    const body = parsedBody(req) as Record<string, unknown> | null;
    const username = body?.['username'];
    const password = body?.['password'];
    const enable = body?.['enable'];
    const missing = [
      ...(typeof username === 'string' ? [] : ['username']),
      ...(typeof password === 'string' ? [] : ['password']),
    ];
    if (missing.length > 0) {
      throw HttpError.validation(
        missing.map((f) => ({
          loc: ['body', f],
          msg: 'field required with Bearer auth',
          type: 'missing',
        })),
      );
    }
    creds = {
      username: username as string,
      password: password as string,
      enable: typeof enable === 'string' ? enable : null,
    };
  }
  // The guards of a replay: the command policy as it is now, lockout, budgets, queue depth.
  const address = await ctx.intake.admitReplay(
    caller,
    record.spec,
    creds.username,
    askedPolicyOf(req),
  );
  const sealed = ctx.sealer.seal({ ...creds, webhook_secret: null });
  const response = await ctx.intake.enqueue(
    randomUUID(),
    record.spec,
    creds.username,
    sealed,
    caller,
    undefined,
    { address, source: req.ip, replayOf: record.job_id },
  );
  return accepted(reply, response.job_id, response);
}
