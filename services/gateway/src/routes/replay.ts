import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import {
  MAX_SECRET_LENGTH,
  NullableDeviceText,
  SshReplaySecrets,
  basicCredentialIssues,
  replaySshSecrets,
  commitFormsOf,
  sessionNameOf,
  type DeviceSecrets,
  type EnqueueResponse,
  type JobRecord,
  type JobSpec,
  type ValidationIssue,
} from '@svc/proto';
import { AuditEvent } from '@svc/telemetry';
import { hasRole, mayUseContext, type Caller } from '../caller.js';
import type { GatewayContext } from '../gateway-context.js';
import { HttpError } from '../http-errors.js';
import { validInput } from '../request-input.js';
import { guarded } from './context.js';
import { ACCEPTED, accepted, askedPolicyOf, header, jobIdOf } from './jobs.js';
import { JobIdParam, SubmitHeaders, ref, routeSchema } from './route-schemas.js';

const NullableString = Type.Union([Type.String(), Type.Null()]);

/**
 * Optional body of a replay: the caller's current device credentials. Basic callers' device
 * credentials are their Basic pair (username/password here are ignored); Bearer callers must
 * give username and password (or ssh.private_key). The original webhook secret, private key and
 * jump-host credentials are not kept, so a signed webhook needs webhook_secret again and a job
 * with a key or jump hosts needs `ssh` again.
 */
export const ReplayRequest = Type.Object(
  {
    username: Type.Optional(NullableDeviceText('Device username.', MAX_SECRET_LENGTH)),
    password: Type.Optional(NullableDeviceText('Device password.', MAX_SECRET_LENGTH)),
    enable: Type.Optional(NullableDeviceText('Enable password.', MAX_SECRET_LENGTH)),
    webhook_secret: Type.Optional(NullableString),
    ssh: Type.Optional(SshReplaySecrets),
  },
  { $id: 'ReplayRequest', additionalProperties: false },
);
type ReplayRequest = Static<typeof ReplayRequest>;

type JobParams = { Params: { job_id: string } };

/**
 * POST /v2/jobs/{job_id}/replay: a failed job, by its submitter only (403 for anyone else,
 * admin keys included: the replay runs under the caller's own device credentials), again as a
 * new job with the caller's current credentials. 409 when the job is not failed.
 */
export function registerReplayRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.post<JobParams>(
    '/v2/jobs/:job_id/replay',
    {
      schema: routeSchema({
        operationId: 'replayJob',
        summary: 'Run a failed job again as a new job, with the caller’s current credentials',
        description:
          'Only the submitter of the failed job may replay it. Bearer callers give username and password in the body; Basic callers use their Basic pair.',
        tags: ['jobs'],
        access: 'caller',
        params: JobIdParam,
        body: ref(ReplayRequest),
        bodyOptional: true,
        requestHeaders: SubmitHeaders,
        ok: { 202: ACCEPTED },
        errors: [403, 404, 409, 422],
      }),
    },
    guarded<FastifyRequest<JobParams>>(async (req, reply) => {
      const { caller, record, newId } = await ownJob(ctx, req, 'replay');
      if (record.status !== 'failed') {
        throw new HttpError(409, `only failed jobs can be replayed; this one is ${record.status}`);
      }
      const response = await resubmit(ctx, req, caller, record, record.spec, newId, {
        event: AuditEvent.jobReplayed,
        field: 'replay_of',
      });
      return accepted(reply, response.job_id, response);
    }, ctx.onStoreError),
  );
  app.post<JobParams>(
    '/v2/jobs/:job_id/confirm',
    {
      schema: routeSchema({
        operationId: 'confirmCommit',
        summary: 'Confirm a confirmed commit, as a new job on the same device',
        description:
          'The job must be a finished send-config with commit.confirmed_minutes (else 409). The new job confirms the commit on the device (Junos and IOS-XR `commit`, EOS `configure session <name>` + `commit`); after confirm_by the device has rolled the change back and the confirm job fails with CONFIRM_EXPIRED. Caller rules and body as a replay: only the submitter, with the caller’s current credentials.',
        tags: ['jobs'],
        access: 'caller',
        params: JobIdParam,
        body: ref(ReplayRequest),
        bodyOptional: true,
        requestHeaders: SubmitHeaders,
        ok: { 202: ACCEPTED },
        errors: [403, 404, 409, 422],
      }),
    },
    guarded<FastifyRequest<JobParams>>(async (req, reply) => {
      const { caller, record, newId } = await ownJob(ctx, req, 'confirm');
      const forms = commitFormsOf(record.spec.platform);
      if (
        record.spec.kind !== 'config' ||
        record.spec.commit_options?.confirmed_minutes === undefined ||
        forms === null
      ) {
        throw new HttpError(
          409,
          `job ${record.job_id} is not a confirmed commit (a send-config with commit.confirmed_minutes): there is nothing to confirm`,
        );
      }
      if (record.status !== 'finished' || record.confirm_by === undefined) {
        throw new HttpError(
          409,
          `only a finished confirmed commit can be confirmed; job ${record.job_id} is ${record.status}`,
        );
      }
      const spec: JobSpec = {
        ...withoutWorkflow(record.spec),
        commands: [...forms.confirm.commands],
        commit: false,
        save_config: false,
        confirm_of: {
          job_id: record.job_id,
          ...(forms.confirm.enter?.includes('{session}') === true
            ? { session: sessionNameOf(record.job_id) }
            : {}),
        },
      };
      const response = await resubmit(ctx, req, caller, record, spec, newId, {
        event: AuditEvent.jobConfirmQueued,
        field: 'confirm_of',
      });
      return accepted(reply, response.job_id, response);
    }, ctx.onStoreError),
  );
}

/** A spec without the fields of the change itself (a confirm job sends none of it). */
function withoutWorkflow(spec: JobSpec): JobSpec {
  const rest = { ...spec };
  for (const field of [
    'template',
    'checks',
    'dry_run',
    'error_patterns',
    'commit_options',
    'answers',
    'confirm_of',
  ] as const) {
    delete rest[field];
  }
  return rest;
}

/**
 * The caller rules of a replay (and of a confirm): an operator or admin, strictly the
 * submitter of the job (admin keys included: it runs under the caller's own device
 * credentials), allowed the job's context.
 */
export async function ownJob(
  ctx: GatewayContext,
  req: FastifyRequest<JobParams>,
  action: string,
): Promise<{ caller: Caller; record: JobRecord; newId: string }> {
  const caller = await ctx.authenticate(req);
  if (!hasRole(caller, 'operator'))
    throw new HttpError(403, `role ${caller.role} may not ${action} jobs`);
  const newId = jobIdOf(req);
  const stored = await ctx.jobs.get(req.params.job_id);
  if (!stored) throw new HttpError(404, `job ${req.params.job_id} not found`);
  const record = stored.record;
  // Strictly the submitter's, admin keys included (docs/security.md).
  if (record.owner !== caller.id) throw HttpError.foreignJob();
  if (!mayUseContext(caller, record.spec.context)) {
    throw new HttpError(403, `this key may not use context ${record.spec.context}`);
  }
  return { caller, record, newId };
}

/**
 * Queues `spec` as a new job under the caller's current device credentials (the body of
 * ReplayRequest), linked to `record` in the job message and the audit line.
 */
export async function resubmit(
  ctx: GatewayContext,
  req: FastifyRequest<JobParams>,
  caller: Caller,
  record: JobRecord,
  spec: JobSpec,
  newId: string,
  link: { event: AuditEvent; field: string },
): Promise<EnqueueResponse> {
  const body = validInput<ReplayRequest>(req, 'body');
  // The original job's key and jump-host credentials were never kept: given again here.
  const ssh = replaySshSecrets(record.spec.ssh, body.ssh);
  const issues: ValidationIssue[] = [...ssh.issues];
  let username: string | null | undefined = body.username;
  let password: string | null | undefined = body.password;
  // A private key logs in without a password.
  if (!caller.basic && !password && ssh.secrets.private_key !== null) password = '';
  if (caller.basic) {
    issues.push(...basicCredentialIssues(caller.basic));
    ({ username, password } = caller.basic);
  } else {
    if (!username)
      issues.push({
        loc: ['body', 'username'],
        msg: 'field required with Bearer authentication',
        type: 'missing',
      });
    if (password == null || (password === '' && ssh.secrets.private_key === null))
      issues.push({
        loc: ['body', 'password'],
        msg: 'field required with Bearer authentication',
        type: 'missing',
      });
  }
  if (body.webhook_secret != null && record.spec.webhook_url === null) {
    issues.push({
      loc: ['body', 'webhook_secret'],
      msg: 'the job has no webhook_url',
      type: 'value_error',
    });
  }
  if (!ctx.config.SVC_CONTEXTS.includes(record.spec.context)) {
    issues.push({
      loc: ['body', 'context'],
      msg: `context ${record.spec.context} no longer exists`,
      type: 'value_error',
    });
  }
  if (issues.length > 0 || !username || password == null) throw HttpError.validation(issues);

  const secrets: DeviceSecrets = {
    username,
    password,
    enable: body.enable ?? null,
    webhook_secret: body.webhook_secret ?? null,
    ...ssh.secrets,
  };
  const address = await ctx.intake.admitReplay(caller, spec, username, askedPolicyOf(req));
  const traceparent = header(req, 'traceparent');
  const response = await ctx.intake.enqueue(
    newId,
    spec,
    username,
    ctx.sealer.seal(secrets),
    caller,
    traceparent,
    {
      address,
      source: req.ip,
      ...(link.field === 'replay_of' ? { replayOf: record.job_id } : {}),
    },
  );
  ctx.audit.emit(link.event, {
    request_id: response.job_id,
    job_id: response.job_id,
    username,
    device_ip: record.spec.host,
    platform: record.spec.platform,
    status: 'queued',
    duration_ms: 0,
    caller: caller.id,
    source_ip: req.ip,
    context: record.spec.context,
    [link.field]: record.job_id,
  });
  return response;
}
