import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '@svc/telemetry';
import * as z from 'zod';
import { PageSizes } from '@svc/proto';
import { templateArgsShape, workflowArgsShape, workflowBody } from './config-tools.js';
import { isRecord, type ApiClient } from './api-client.js';
import type { McpAdapterConfig } from './config.js';
import { AdapterError, AdapterErrorCode } from './errors.js';
import { TERMINAL_STATUSES, asJobRecord, waitForJob, type JobRecord } from './job-wait.js';
import { registerPrompts } from './prompts.js';
import { registerResources } from './resources.js';
import { JobToolOutput, dataResult, errorResult, jobResult } from './tool-results.js';

export const ADAPTER_NAME = 'svc-mcp';
export const ADAPTER_VERSION = '0.1.0';

export interface McpServerDeps {
  api: ApiClient;
  log: Logger;
}

type ServerConfig = Pick<McpAdapterConfig, 'SVC_MCP_JOB_POLL_INTERVAL' | 'SVC_MCP_JOB_TIMEOUT'> &
  Partial<Pick<McpAdapterConfig, 'SVC_MCP_COMMAND_POLICY'>>;

/** What an MCP request handler receives beside its arguments, narrowed to what tools use. */
interface ToolExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
  sendNotification: (n: {
    method: 'notifications/progress';
    params: { progressToken: string | number; progress: number; message?: string };
  }) => Promise<void>;
}

/** Submission routes and where each kind's result is read. */
const JOB_KINDS = {
  command: { submit: '/v2/send-command', result: '/v2/send-command' },
  config: { submit: '/v2/send-config', result: '/v2/send-command' },
  structured: { submit: '/v2/send-command-structured', result: '/v2/send-command-structured' },
} as const;
type JobKindName = keyof typeof JOB_KINDS;

/**
 * Annotations of the tools that run given commands on a device. The service runs whatever it
 * is given (a `reload` too), so they are not read-only and may be destructive; they reach
 * devices outside the service (open world) and a repeat runs the commands again.
 */
const RUNS_DEVICE_COMMANDS = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true,
} as const;

/**
 * The same tools under the read-only command policy (SVC_MCP_COMMAND_POLICY, the default): the
 * service refuses commands that change or restart the device, so they are not destructive. Not
 * read-only either: they still reach a device, and a deny list is no proof.
 */
const RUNS_READ_ONLY_COMMANDS = { ...RUNS_DEVICE_COMMANDS, destructiveHint: false } as const;

const INSTRUCTIONS =
  'Tools of the svc network device command service. send_command, send_config and ' +
  'send_command_structured run commands on a network device over SSH and wait for the job; each ' +
  'needs the device username and password. Results carry job_id, status, results, error, ' +
  'error_code and error_retryable. Read svc://contexts for routing contexts and svc://health for ' +
  'service state. Never repeat a device password back to the user.';

const connectionShape = {
  host: z.string().min(1).describe('Device address: IPv4, IPv6 or RFC 1123 hostname.'),
  platform: z
    .string()
    .min(1)
    .describe(
      'Device-driver platform (cisco_ios, cisco_nxos, arista_eos, juniper_junos, …); autodetect fingerprints the device.',
    ),
  commands: z.array(z.string().min(1)).min(1).describe('Commands to run, in order (at least one).'),
  username: z
    .string()
    .min(1)
    .describe('Device username, passed to the device; the adapter stores nothing.'),
  password: z.string().min(1).describe('Device password, passed to the device; never logged.'),
  enable: z.string().optional().describe('Enable password; defaults to password.'),
  port: z.number().int().min(1).max(65535).default(22).describe('SSH port, 1 to 65535.'),
  tags: z
    .record(z.string(), z.string())
    .optional()
    .describe('Labels for the job (at most 10; keys and values up to 64 of A-Z a-z 0-9 - _ :).'),
  context: z
    .string()
    .optional()
    .describe('Routing context (see svc://contexts); the service default is "default".'),
};

const jobIdShape = {
  job_id: z.string().min(1).describe('Job identifier returned by a submission.'),
};

/** A page-size argument with the gateway's bounds and default (`PageSizes`). */
function perPage(size: { default: number; max: number }) {
  return z
    .number()
    .int()
    .min(1)
    .max(size.max)
    .default(size.default)
    .describe(`Jobs per page, 1 to ${size.max}.`);
}

/**
 * The MCP server of the adapter: the specification's tools, the `svc://` resources and the
 * prompts, all backed by the REST API through `deps.api`. One instance per MCP session.
 */
export function createMcpServer(config: ServerConfig, deps: McpServerDeps): McpServer {
  const { api, log } = deps;
  const server = new McpServer(
    { name: ADAPTER_NAME, version: ADAPTER_VERSION },
    { instructions: INSTRUCTIONS },
  );
  // SVC_MCP_COMMAND_POLICY: what the command tools ask the service for, and say they do.
  const readOnly = config.SVC_MCP_COMMAND_POLICY !== 'any';
  const commandPolicyHeader: Record<string, string> = readOnly
    ? { 'x-svc-command-policy': 'read-only' }
    : {};
  const waitOptions = {
    pollIntervalMs: config.SVC_MCP_JOB_POLL_INTERVAL * 1000,
    jobTimeoutMs: config.SVC_MCP_JOB_TIMEOUT * 1000,
  };

  /** Runs a tool body; adapter failures become tool errors, anything else an INTERNAL one. */
  const guarded = async (
    tool: string,
    body: () => Promise<CallToolResult>,
    jobId?: string,
  ): Promise<CallToolResult> => {
    try {
      return await body();
    } catch (caught) {
      if (caught instanceof AdapterError) {
        // A 404 or 409 about a named job still says which job, as every job tool result does.
        const err =
          jobId !== undefined && caught.details.jobId === undefined
            ? new AdapterError(caught.code, caught.message, caught.retryable, {
                ...caught.details,
                jobId,
              })
            : caught;
        log.info(
          {
            tool,
            error_code: err.code,
            http_status: err.details.httpStatus,
            job_id: err.details.jobId,
          },
          'tool error',
        );
        return errorResult(err);
      }
      if (caught instanceof Error && caught.name === 'AbortError') {
        // The client cancelled the call; the SDK drops whatever is answered. The job runs on.
        log.info({ tool, job_id: jobId }, 'tool call cancelled by the client');
        return errorResult(AdapterError.of(AdapterErrorCode.CANCELLED_BY_CLIENT, caught.message));
      }
      log.error({ tool, err: caught }, 'tool failed unexpectedly');
      const message = caught instanceof Error ? caught.message : String(caught);
      return errorResult(AdapterError.of(AdapterErrorCode.INTERNAL, message));
    }
  };

  const submitAndWait = async (
    tool: string,
    kind: JobKindName,
    body: Record<string, unknown>,
    extra: ToolExtra,
    submitPath?: string,
  ): Promise<CallToolResult> => {
    const route = JOB_KINDS[kind];
    const policy = kind === 'config' ? {} : commandPolicyHeader;
    const path = submitPath ?? route.submit;
    const accepted = (await api.post(path, body, { signal: extra.signal, headers: policy })).body;
    if (!isRecord(accepted) || typeof accepted['job_id'] !== 'string') {
      throw AdapterError.of(
        AdapterErrorCode.BAD_RESPONSE,
        `POST ${path}: the answer has no job_id`,
      );
    }
    const jobId = accepted['job_id'];
    // Ids and sizes only: the body holds device credentials.
    log.info(
      { tool, job_id: jobId, commands: (body['commands'] as unknown[] | undefined)?.length ?? 0 },
      'job submitted',
    );
    // Progress: "queued" at once (the client learns the job id while it waits, e.g. to cancel),
    // then "started". Not the terminal status: the result carries it, and the SDK client drops
    // a progress notification that arrives in the same read as the response it belongs to.
    const progressToken = extra._meta?.progressToken;
    let step = 0;
    const progress = (status: string) => {
      if (progressToken === undefined || TERMINAL_STATUSES.has(status)) return;
      step += 1;
      extra
        .sendNotification({
          method: 'notifications/progress',
          params: { progressToken, progress: step, message: `job ${jobId} ${status}` },
        })
        .catch(() => undefined); // a client gone away must not fail the job wait
    };
    progress('queued');
    const record = await waitForJob(api, route.result, jobId, {
      ...waitOptions,
      signal: extra.signal,
      onStatus: progress,
    });
    log.info(
      { tool, job_id: jobId, status: record.status, error_code: record['error_code'] },
      'job ended',
    );
    const flags = {
      ...(accepted['deduplicated'] === true ? { deduplicated: true } : {}),
      ...(accepted['idempotent'] === true ? { idempotent: true } : {}),
    };
    return jobResult(record, { extra: flags });
  };

  server.registerTool(
    'send_command',
    {
      title: readOnly ? 'Run commands (read-only policy)' : 'Run commands',
      description:
        'Run commands (meant for show commands) on a network device over SSH and wait for the ' +
        'result. ' +
        (readOnly
          ? 'Read-only policy in force: the service refuses commands that enter configuration, ' +
            'reload, write, erase, copy, delete, format or clear (a 422 naming the command). '
          : 'The service runs whatever it is given, so a command can change or reload the ' +
            'device: use send_config for configuration. ') +
        'Returns job_id, status, results (command to output), error, error_code, error_retryable.',
      inputSchema: connectionShape,
      outputSchema: JobToolOutput,
      annotations: readOnly ? RUNS_READ_ONLY_COMMANDS : RUNS_DEVICE_COMMANDS,
    },
    (args, extra) =>
      guarded('send_command', () =>
        submitAndWait('send_command', 'command', connectionBody(args), extra),
      ),
  );

  server.registerTool(
    'send_config',
    {
      title: 'Push configuration',
      description:
        'Enter configuration mode on a network device, apply the commands and wait for the result; ' +
        'optionally commit (platforms that need it) and save the running configuration to startup. ' +
        'Not retried automatically: a failed push needs a deliberate decision.',
      inputSchema: {
        ...connectionShape,
        commands: z
          .array(z.string().min(1))
          .min(1)
          .optional()
          .describe(
            'Configuration lines, in order (at least one); or give template_name/template_text.',
          ),
        ...workflowArgsShape,
        commit: z
          .union([
            z.boolean(),
            z
              .object({
                comment: z.string().min(1).optional().describe('Commit comment (Junos, IOS-XR).'),
                confirmed_minutes: z
                  .number()
                  .int()
                  .min(1)
                  .max(60)
                  .optional()
                  .describe(
                    'Confirmed commit: the device rolls back after this many minutes unless confirm_commit confirms it; the result has confirm_by.',
                  ),
                check: z.boolean().optional().describe('Junos: commit check first.'),
              })
              .strict(),
          ])
          .optional()
          .describe(
            'true: commit (Junos, IOS XR and other commit platforms). Or commit options on Junos, IOS-XR and EOS: comment, confirmed_minutes (1-60), check.',
          ),
        save_config: z
          .boolean()
          .optional()
          .describe('Save the running configuration to startup afterwards.'),
      },
      outputSchema: JobToolOutput,
      annotations: {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      },
    },
    (args, extra) =>
      guarded('send_config', () =>
        submitAndWait(
          'send_config',
          'config',
          {
            ...connectionBody(args),
            ...workflowBody(args),
            ...(args.commit !== undefined ? { commit: args.commit } : {}),
            ...(args.save_config !== undefined ? { save_config: args.save_config } : {}),
          },
          extra,
        ),
      ),
  );

  server.registerTool(
    'confirm_commit',
    {
      title: 'Confirm a confirmed commit',
      description:
        'Confirm a confirmed commit (send_config with commit.confirmed_minutes) before its confirm_by, ' +
        'as a new job on the same device; only the caller who pushed it may. After confirm_by the ' +
        'device has rolled the change back and the job fails with CONFIRM_EXPIRED.',
      inputSchema: {
        job_id: z.string().min(1).describe('The job id of the confirmed commit.'),
        username: z.string().min(1).describe('Device username, passed to the device.'),
        password: z.string().min(1).describe('Device password; never logged.'),
        enable: z.string().optional().describe('Enable password; defaults to password.'),
      },
      outputSchema: JobToolOutput,
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
    },
    (args, extra) =>
      guarded('confirm_commit', () =>
        submitAndWait(
          'confirm_commit',
          'config',
          {
            username: args.username,
            password: args.password,
            ...(args.enable !== undefined ? { enable: args.enable } : {}),
          },
          extra,
          `/v2/jobs/${encodeURIComponent(args.job_id)}/confirm`,
        ),
      ),
  );

  server.registerTool(
    'dry_run_config',
    {
      title: 'Dry-run a configuration change',
      description:
        'Show what a configuration change would do without changing the device: the lines (or a ' +
        'template rendered with vars) are loaded into a candidate on Junos, IOS-XR and EOS and the ' +
        "device's own diff comes back as diff, then the candidate is discarded; elsewhere nothing " +
        'enters configuration mode (diff null). Returns rendered, diff and the pre checks.',
      inputSchema: {
        ...connectionShape,
        commands: z
          .array(z.string().min(1))
          .min(1)
          .optional()
          .describe('Configuration lines; or give template_name/template_text.'),
        ...workflowArgsShape,
      },
      outputSchema: JobToolOutput,
      // Never changes the device: it logs in, loads a candidate and discards it.
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    (args, extra) =>
      guarded('dry_run_config', () =>
        submitAndWait(
          'dry_run_config',
          'config',
          { ...connectionBody(args), ...workflowBody(args), dry_run: true },
          extra,
        ),
      ),
  );

  server.registerTool(
    'list_config_templates',
    {
      title: 'List configuration templates',
      description:
        'Stored configuration templates of a routing context (name, description, version).',
      inputSchema: { context: connectionShape.context },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      guarded('list_config_templates', async () =>
        dataResult(
          asObject(
            (
              await api.get('/v2/config-templates', {
                signal: extra.signal,
                query: { context: args.context },
              })
            ).body,
            'GET /v2/config-templates',
          ),
        ),
      ),
  );

  server.registerTool(
    'render_config_template',
    {
      title: 'Render a configuration template',
      description:
        'Render a stored template (template_name) or template text (template_text) with vars into ' +
        'configuration lines, without contacting any device.',
      inputSchema: { ...templateArgsShape, context: connectionShape.context },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      guarded('render_config_template', async () => {
        const query = { context: args.context };
        const vars = args.vars ?? {};
        const answer =
          args.template_name !== undefined
            ? await api.post(
                `/v2/config-templates/${encodeURIComponent(args.template_name)}/render`,
                { vars },
                { signal: extra.signal, query },
              )
            : await api.post(
                '/v2/config-templates/render',
                { template: args.template_text ?? '', vars },
                { signal: extra.signal, query },
              );
        return dataResult(asObject(answer.body, 'POST render'));
      }),
  );

  server.registerTool(
    'send_command_structured',
    {
      title: readOnly
        ? 'Run commands with parsed output (read-only policy)'
        : 'Run commands with parsed output',
      description:
        (readOnly
          ? 'Run commands (read-only policy in force: the service refuses commands that change or restart the device) and parse '
          : 'Run commands (meant for show commands; the service runs whatever it is given) and parse ') +
        'each output into structured records with the community TextFSM template for the ' +
        'platform and command. A results entry is a list of objects when a template matched, ' +
        'otherwise the raw text.',
      inputSchema: connectionShape,
      outputSchema: JobToolOutput,
      annotations: readOnly ? RUNS_READ_ONLY_COMMANDS : RUNS_DEVICE_COMMANDS,
    },
    (args, extra) =>
      guarded('send_command_structured', () =>
        submitAndWait('send_command_structured', 'structured', connectionBody(args), extra),
      ),
  );

  server.registerTool(
    'get_job_result',
    {
      title: 'Get a job result',
      description:
        'Current status and, once ended, the results or error of a job submitted with this API key.',
      inputSchema: jobIdShape,
      outputSchema: JobToolOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      guarded(
        'get_job_result',
        async () => {
          const path = `/v2/jobs/${encodeURIComponent(args.job_id)}`;
          return jobResult(
            asJobRecord((await api.get(path, { signal: extra.signal })).body, `GET ${path}`),
          );
        },
        args.job_id,
      ),
  );

  server.registerTool(
    'cancel_job',
    {
      title: 'Cancel a job',
      description:
        'Cancel a queued or running job (best effort: it may finish first). A job that already ' +
        'finished gives a CONFLICT error.',
      inputSchema: jobIdShape,
      outputSchema: JobToolOutput,
      annotations: {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    (args, extra) =>
      guarded(
        'cancel_job',
        async () => {
          const id = encodeURIComponent(args.job_id);
          await api.delete(`/v2/send-command/${id}`, { signal: extra.signal });
          log.info({ tool: 'cancel_job', job_id: args.job_id }, 'job cancelled');
          let record: JobRecord;
          try {
            record = asJobRecord(
              (await api.get(`/v2/jobs/${id}`, { signal: extra.signal })).body,
              'GET /v2/jobs',
            );
          } catch {
            // The cancel itself succeeded (204); a failed read-back must not report it as failed.
            record = { job_id: args.job_id, status: 'cancelled' };
          }
          return jobResult(record, { failureIsError: false });
        },
        args.job_id,
      ),
  );

  server.registerTool(
    'list_jobs',
    {
      title: 'List jobs',
      description: 'Jobs submitted with this API key, newest first, one page at a time.',
      inputSchema: {
        page: z.number().int().min(1).default(1).describe('Page number, from 1.'),
        per_page: perPage(PageSizes.jobs),
        status: z
          .enum(['queued', 'started', 'finished', 'failed'])
          .optional()
          .describe('Only jobs in this status.'),
        tag: z.string().optional().describe('Only jobs carrying this tag, as key:value.'),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      guarded('list_jobs', async () => {
        const answer = await api.get('/v2/jobs', {
          query: { page: args.page, per_page: args.per_page, status: args.status, tag: args.tag },
          signal: extra.signal,
        });
        return dataResult(asObject(answer.body, 'GET /v2/jobs'));
      }),
  );

  const batchIdShape = {
    batch_id: z.string().min(1).describe('Batch identifier returned by run_batch.'),
  };

  server.registerTool(
    'run_batch',
    {
      title: 'Run one job per device',
      description:
        'Submit a batch: the same commands on many devices, one job per device (kind command, ' +
        'config or structured). Returns batch_id, jobs (job_id, host, port) and total at once; ' +
        'follow it with get_batch. Config batches take canary, max_parallel and ' +
        'stop_on_failure_ratio.',
      inputSchema: {
        kind: z.enum(['command', 'config', 'structured']).describe('Job kind of every device.'),
        commands: z.array(z.string().min(1)).min(1).describe('Commands, in order.'),
        devices: z
          .array(
            z.object({
              host: z.string().min(1),
              port: z.number().int().min(1).max(65535).optional(),
              platform: z.string().min(1).optional(),
            }),
          )
          .min(1)
          .describe('Devices: host, optional port and platform.'),
        platform: z
          .string()
          .min(1)
          .optional()
          .describe('Platform of every device (default cisco_ios).'),
        username: z.string().min(1).describe('Device username, passed to the devices.'),
        password: z.string().min(1).describe('Device password; never logged.'),
        enable: z.string().optional().describe('Enable password; defaults to password.'),
        context: z.string().optional().describe('Routing context.'),
        canary: z.number().int().min(0).optional().describe('config: devices run first.'),
        max_parallel: z.number().int().min(1).optional().describe('config: jobs at once.'),
        stop_on_failure_ratio: z
          .number()
          .min(0)
          .max(1)
          .optional()
          .describe('config: failed/ended ratio above which jobs not started are cancelled.'),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
    },
    (args, extra) =>
      guarded('run_batch', async () => {
        const body = Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined));
        const answer = await api.post('/v2/batches', body, { signal: extra.signal });
        const created = asObject(answer.body, 'POST /v2/batches');
        log.info({ tool: 'run_batch', batch_id: created['batch_id'] }, 'batch submitted');
        return dataResult(created);
      }),
  );

  server.registerTool(
    'get_batch',
    {
      title: 'Get a batch',
      description:
        'Status of a batch (running, finished, cancelled), counts per job status and per error ' +
        'code; with page, also the jobs of that page with their results.',
      inputSchema: {
        ...batchIdShape,
        page: z.number().int().min(1).optional().describe('Also return this page of jobs.'),
        per_page: perPage(PageSizes.batchJobs),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      guarded('get_batch', async () => {
        const id = encodeURIComponent(args.batch_id);
        const summary = asObject(
          (await api.get(`/v2/batches/${id}`, { signal: extra.signal })).body,
          'GET /v2/batches',
        );
        if (args.page === undefined) return dataResult(summary);
        const page = asObject(
          (
            await api.get(`/v2/batches/${id}/jobs`, {
              query: { page: args.page, per_page: args.per_page },
              signal: extra.signal,
            })
          ).body,
          'GET /v2/batches/jobs',
        );
        return dataResult({ ...summary, jobs: page['jobs'], page: args.page });
      }),
  );

  server.registerTool(
    'cancel_batch',
    {
      title: 'Cancel a batch',
      description: 'Cancel every job of a batch that has not started; started ones run to the end.',
      inputSchema: batchIdShape,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args, extra) =>
      guarded('cancel_batch', async () => {
        const id = encodeURIComponent(args.batch_id);
        const answer = await api.delete(`/v2/batches/${id}`, { signal: extra.signal });
        return dataResult(asObject(answer.body, 'DELETE /v2/batches'));
      }),
  );

  server.registerTool(
    'list_batches',
    {
      title: 'List batches',
      description: 'Batches submitted with this API key, newest first.',
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (_args, extra) =>
      guarded('list_batches', async () =>
        dataResult(
          asObject(
            (await api.get('/v2/batches', { signal: extra.signal })).body,
            'GET /v2/batches',
          ),
        ),
      ),
  );

  server.registerTool(
    'create_api_key',
    {
      title: 'Create an API key',
      description:
        'Create an API key (needs an admin key, or the admin secret of a local `npm start`). The token is returned once: hand it to the user ' +
        'and do not repeat it afterwards.',
      inputSchema: {
        role: z
          .enum(['viewer', 'operator', 'admin'])
          .default('operator')
          .describe('Role of the new key.'),
        contexts: z
          .array(z.string().min(1))
          .optional()
          .describe('Routing contexts the key may use; default all.'),
        ttl: z
          .number()
          .int()
          .min(0)
          .optional()
          .describe(
            'Lifetime in seconds; 0 means no expiry; default the server default (90 days).',
          ),
      },
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: false,
      },
    },
    (args, extra) =>
      guarded('create_api_key', async () => {
        const body = {
          role: args.role,
          ...(args.contexts !== undefined ? { contexts: args.contexts } : {}),
          ...(args.ttl !== undefined ? { ttl: args.ttl } : {}),
        };
        const created = asObject(
          (await api.post('/v2/api-keys', body, { signal: extra.signal, auth: 'admin' })).body,
          'POST /v2/api-keys',
        );
        log.info(
          { tool: 'create_api_key', key_id: created['key_id'], role: created['role'] },
          'api key created',
        );
        return dataResult(created);
      }),
  );

  server.registerTool(
    'revoke_api_key',
    {
      title: 'Revoke an API key',
      description:
        'Revoke an API key by key_id (needs an admin key, or the admin secret of a local `npm start`); it is rejected immediately afterwards.',
      inputSchema: { key_id: z.string().min(1).describe('Identifier of the key to revoke.') },
      annotations: {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    (args, extra) =>
      guarded('revoke_api_key', async () => {
        const answer = await api.delete(`/v2/api-keys/${encodeURIComponent(args.key_id)}`, {
          signal: extra.signal,
          auth: 'admin',
        });
        log.info({ tool: 'revoke_api_key', key_id: args.key_id }, 'api key revoked');
        return dataResult({
          ...(isRecord(answer.body) ? answer.body : {}),
          key_id: args.key_id,
          revoked: true,
        });
      }),
  );

  registerResources(server, api);
  registerPrompts(server);
  return server;
}

interface ConnectionArgs {
  host: string;
  platform: string;
  /** Absent: send_config and dry_run_config from a template. */
  commands?: string[] | undefined;
  username: string;
  password: string;
  enable?: string | undefined;
  port: number;
  tags?: Record<string, string> | undefined;
  context?: string | undefined;
}

/** The submission body: optional fields only when given, so the service's defaults apply. */
function connectionBody(args: ConnectionArgs): Record<string, unknown> {
  return {
    host: args.host,
    platform: args.platform,
    ...(args.commands !== undefined ? { commands: args.commands } : {}),
    username: args.username,
    password: args.password,
    port: args.port,
    ...(args.enable !== undefined ? { enable: args.enable } : {}),
    ...(args.tags !== undefined ? { tags: args.tags } : {}),
    ...(args.context !== undefined ? { context: args.context } : {}),
  };
}

function asObject(body: unknown, what: string): Record<string, unknown> {
  if (isRecord(body)) return body;
  throw AdapterError.of(AdapterErrorCode.BAD_RESPONSE, `${what}: the answer is not a JSON object`);
}
