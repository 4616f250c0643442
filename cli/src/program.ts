// The API's JSON bodies are read field by field for printing; their schemas live in the
// service, and a field the CLI does not know is passed through to json/yaml output untouched.
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { parseTemplateFiles, parseTtp } from '@svc/parsers';
import { ApiClient } from './api-client.js';
import { localDataDir } from '@svc/proto/local-data';
import { registerCommunityTemplateCommands } from './community-templates.js';
import { COMMAND_TREE, bashCompletion, zshCompletion } from './completion.js';
import {
  configWorkflowFields,
  commitField,
  configWorkflowOptions,
  printConfigWorkflow,
  registerConfigTemplateCommands,
  type ConfigWorkflowFlags,
} from './config-commands.js';
import { CliError, ExitCode } from './exit-codes.js';
import {
  loadInventory,
  normalizePlatform,
  parseHostPort,
  type InventoryDevice,
} from './inventory.js';
import {
  OUTPUT_FORMATS,
  Progress,
  emit,
  fields,
  structured,
  table,
  type Io,
  type OutputFormat,
} from './output.js';
import { resolveSettings, type ConnectionFlags, type ConnectionSettings } from './settings.js';

/** What the program needs from its process (main.ts is the only module that touches it). */
export interface CliEnv {
  io: Io;
  env: NodeJS.ProcessEnv;
  home: string;
  /** Reads all of stdin (`-` as a file name). */
  readStdin(): Promise<string>;
  version: string;
}

interface GlobalOptions extends ConnectionFlags {
  output: OutputFormat;
}

// The API's JSON, read field by field for printing.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const TERMINAL = new Set(['finished', 'failed', 'cancelled']);
const POLL_MS = 250;
const BATCH_POLL_MS = 500;
const BATCH_PAGE = 500;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function positiveInt(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0)
      throw new CliError(ExitCode.usage, `${name} must be a whole number`);
    return n;
  };
}

function ratio(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) {
    throw new CliError(ExitCode.usage, '--stop-on-failure-ratio must be between 0 and 1');
  }
  return n;
}

function seconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    throw new CliError(ExitCode.usage, 'a duration must be > 0 seconds');
  return n;
}

/** `--tag k=v` pairs as the API's tags object. */
function tagsOf(pairs: string[] | undefined): Record<string, string> | undefined {
  if (!pairs || pairs.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const i = p.indexOf('=');
    if (i <= 0) throw new CliError(ExitCode.usage, `--tag ${p}: use key=value`);
    out[p.slice(0, i)] = p.slice(i + 1);
  }
  return out;
}

/** A job's exit code from its final status. */
function jobExit(status: string): ExitCode {
  if (status === 'finished') return ExitCode.ok;
  if (status === 'cancelled') return ExitCode.cancelled;
  return ExitCode.failed;
}

function batchExit(summary: Json): ExitCode {
  if (summary.status === 'cancelled') return ExitCode.cancelled;
  return summary.counts?.failed > 0 ? ExitCode.failed : ExitCode.ok;
}

/** The text of one command's result (structured results as JSON). */
function resultText(value: unknown): string {
  if (typeof value === 'string') return value.endsWith('\n') ? value : value + '\n';
  return JSON.stringify(value, null, 2) + '\n';
}

function printJobResults(io: Io, job: Json, heading: string | null): void {
  const results = (job.results ?? {}) as Record<string, unknown>;
  const entries = Object.entries(results);
  const many = entries.length > 1 || heading !== null;
  for (const [command, value] of entries) {
    if (many) io.out(`=== ${heading !== null ? `${heading}: ` : ''}${command} ===\n`);
    io.out(resultText(value));
  }
  if (job.status !== 'finished' && job.error) {
    io.err(
      `svc: ${heading ?? `job ${job.job_id}`} ${job.status}: ${job.error_code ?? ''} ${job.error}\n`,
    );
  }
}

/** A batch job's device: its inventory name, when it has one, then `host:port`. */
function deviceLabel(j: Json): string {
  const where = `${j.host as string}:${j.port as number}`;
  return typeof j.name === 'string' ? `${j.name} (${where})` : where;
}

function batchCountsLine(s: Json): string {
  const c = s.counts ?? {};
  const ended = (c.finished ?? 0) + (c.failed ?? 0) + (c.cancelled ?? 0);
  return `batch ${String(s.batch_id).slice(0, 8)}: ${ended}/${s.total} ended (${c.finished} finished, ${c.failed} failed, ${c.cancelled} cancelled), ${c.started} running, ${c.queued} queued`;
}

function summaryTable(s: Json): string {
  const c = s.counts ?? {};
  let text = fields({
    batch_id: s.batch_id,
    kind: s.kind,
    status: s.status,
    total: s.total,
    finished: c.finished,
    failed: c.failed,
    cancelled: c.cancelled,
    started: c.started,
    queued: c.queued,
    created_at: s.created_at,
    ended_at: s.ended_at,
  });
  if (s.stopped_reason) text += `stopped:    ${s.stopped_reason}\n`;
  const codes = Object.entries((s.error_codes ?? {}) as Record<string, number>);
  if (codes.length > 0)
    text += 'errors:     ' + codes.map(([k, v]) => `${k}=${v}`).join(' ') + '\n';
  return text;
}

/** Commands shared by `run` and `config`: the body fields common to a job and a batch. */
interface JobFlags {
  host?: string;
  hosts?: string;
  group?: string;
  port?: number;
  platform?: string;
  tag?: string[];
  readTimeout?: number;
  connTimeout?: number;
  wait: boolean;
  timeout?: number;
  transcript?: boolean;
}

export function buildProgram(cli: CliEnv): { program: Command; exitCode: () => ExitCode } {
  const { io } = cli;
  let exitCode: ExitCode = ExitCode.ok;
  const program = new Command('svc');
  program
    .description('Command line for the svc network device command service (docs/cli.md)')
    .version(cli.version, '-V, --version')
    .addOption(new Option('--url <url>', 'service URL (SVC_URL; default https://127.0.0.1:8443)'))
    .addOption(new Option('--api-key <token>', 'Bearer API key (SVC_API_KEY)'))
    .addOption(
      new Option(
        '--username <name>',
        'device username; Basic user without an API key (SVC_USERNAME)',
      ),
    )
    .addOption(
      new Option('--password <secret>', 'device password; prefer SVC_PASSWORD or the config file'),
    )
    .addOption(
      new Option('--enable <secret>', 'enable secret (SVC_ENABLE; defaults to the password)'),
    )
    .addOption(new Option('--ca-file <file>', 'PEM CA of the service certificate (SVC_CA_FILE)'))
    .addOption(
      new Option('--insecure', 'accept any service certificate (SVC_INSECURE=1); tests only'),
    )
    .addOption(
      new Option(
        '--admin-secret <secret>',
        'key administration as admin:<secret> (SVC_ADMIN_SECRET)',
      ),
    )
    .addOption(
      new Option('--config <file>', 'config file (SVC_CONFIG; default ~/.config/svc/config.json)'),
    )
    .addOption(
      new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table'),
    )
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.out(s),
      writeErr: (s) => io.err(s),
    });

  const globals = (cmd: Command): GlobalOptions => cmd.optsWithGlobals<GlobalOptions>();
  let cachedSettings: ConnectionSettings | null = null;
  const settingsOf = (cmd: Command): ConnectionSettings =>
    (cachedSettings ??= resolveSettings(globals(cmd), cli.env, cli.home));
  const clientOf = (cmd: Command) => new ApiClient(settingsOf(cmd));
  const out = (cmd: Command, value: unknown, asTable: () => string) =>
    emit(io, globals(cmd).output, value, asTable);

  /** Device credentials for a job body: body fields with an API key, the Basic ones otherwise. */
  const credentialFields = (cmd: Command): Record<string, string> => {
    const s = settingsOf(cmd);
    const f: Record<string, string> = {};
    if (s.apiKey !== null) {
      if (s.username !== null) f['username'] = s.username;
      if (s.password !== null) f['password'] = s.password;
    }
    if (s.enable !== null) f['enable'] = s.enable;
    return f;
  };

  const sharedFields = (cmd: Command, o: JobFlags): Record<string, unknown> => ({
    ...credentialFields(cmd),
    ...(o.platform !== undefined ? { platform: normalizePlatform(o.platform) } : {}),
    ...(o.readTimeout !== undefined ? { read_timeout: o.readTimeout } : {}),
    ...(o.connTimeout !== undefined ? { conn_timeout: o.connTimeout } : {}),
    ...(tagsOf(o.tag) ? { tags: tagsOf(o.tag) } : {}),
    ...(o.transcript ? { transcript: true } : {}),
  });

  /** `withVars`: each inventory device carries its host vars (a config batch's template). */
  const devicesOf = (o: JobFlags, withVars = false): InventoryDevice[] | null => {
    if (o.host !== undefined && o.hosts !== undefined) {
      throw new CliError(ExitCode.usage, 'give --host or --hosts, not both');
    }
    if (o.group !== undefined && o.hosts === undefined) {
      throw new CliError(ExitCode.usage, '--group needs --hosts @inventory.yaml');
    }
    if (o.hosts !== undefined) {
      return loadInventory(o.hosts, {
        ...(o.group !== undefined ? { group: o.group } : {}),
        vars: withVars,
      }).map(({ vars, ...d }) =>
        vars !== undefined && Object.keys(vars).length > 0 ? { ...d, vars } : d,
      );
    }
    if (o.host === undefined)
      throw new CliError(ExitCode.usage, 'give --host HOST or --hosts @INVENTORY');
    return null;
  };

  const deadlineOf = (o: { timeout?: number }) =>
    o.timeout !== undefined ? Date.now() + o.timeout * 1000 : Infinity;

  /** Polls a job to its end, drawing the progress line. */
  const waitJob = async (cmd: Command, jobId: string, o: { timeout?: number }): Promise<Json> => {
    const api = clientOf(cmd);
    const progress = new Progress(io);
    const deadline = deadlineOf(o);
    try {
      for (;;) {
        const { body } = await api.request('GET', `/v2/jobs/${encodeURIComponent(jobId)}`);
        if (TERMINAL.has(body.status)) return body;
        progress.update(`job ${jobId.slice(0, 8)}: ${body.status}`);
        if (Date.now() > deadline) {
          throw new CliError(
            ExitCode.timeout,
            `job ${jobId} still ${body.status} after --timeout (it keeps running)`,
          );
        }
        await sleep(POLL_MS);
      }
    } finally {
      progress.done();
    }
  };

  const waitBatch = async (
    cmd: Command,
    batchId: string,
    o: { timeout?: number },
  ): Promise<Json> => {
    const api = clientOf(cmd);
    const progress = new Progress(io);
    const deadline = deadlineOf(o);
    try {
      for (;;) {
        const { body } = await api.request('GET', `/v2/batches/${encodeURIComponent(batchId)}`);
        if (body.status !== 'running') return body;
        progress.update(batchCountsLine(body));
        if (Date.now() > deadline) {
          throw new CliError(
            ExitCode.timeout,
            `batch ${batchId} still running after --timeout (it keeps running)`,
          );
        }
        await sleep(BATCH_POLL_MS);
      }
    } finally {
      progress.done();
    }
  };

  const batchJobs = async (cmd: Command, batchId: string): Promise<Json[]> => {
    const api = clientOf(cmd);
    const jobs: Json[] = [];
    for (let page = 1; ; page++) {
      const { body } = await api.request('GET', `/v2/batches/${encodeURIComponent(batchId)}/jobs`, {
        query: { page, per_page: BATCH_PAGE },
      });
      jobs.push(...(body.jobs as Json[]));
      if (jobs.length >= body.total || body.jobs.length === 0) return jobs;
    }
  };

  /** Submits a batch, waits (unless --no-wait), prints its results; sets the exit code. */
  const runBatch = async (
    cmd: Command,
    o: JobFlags,
    body: Record<string, unknown>,
    printOutputs: boolean,
  ): Promise<void> => {
    const api = clientOf(cmd);
    const devices = body['devices'] as InventoryDevice[];
    if (
      !api.usesApiKey &&
      devices.some((d) => d.username !== undefined || d.password !== undefined)
    ) {
      io.err(
        "svc: note: with Basic credentials the service uses them on every device; the inventory's usernames and passwords apply with an API key only\n",
      );
    }
    const { body: created } = await api.request('POST', '/v2/batches', { body });
    if (!o.wait) {
      out(cmd, created, () => `${created.batch_id as string}\n`);
      return;
    }
    io.err(
      io.errIsTty ? `batch ${created.batch_id as string}: ${created.total as number} jobs\n` : '',
    );
    const summary = await waitBatch(cmd, created.batch_id as string, o);
    const jobs = await batchJobs(cmd, created.batch_id as string);
    out(cmd, { ...summary, jobs }, () => {
      let text = '';
      if (printOutputs) {
        for (const j of jobs) {
          text += `=== ${deviceLabel(j)} [${j.status as string}] ===\n`;
          for (const v of Object.values((j.results ?? {}) as Record<string, unknown>))
            text += resultText(v);
          if (j.status !== 'finished' && j.error)
            text += `error: ${j.error_code ?? ''} ${j.error}\n`;
        }
      } else {
        text += table(
          ['name', 'host', 'port', 'status', 'error_code', 'error'],
          jobs.map((j) => ({ ...j, error: j.error ?? null })),
        );
      }
      return text + summaryTable(summary);
    });
    exitCode = batchExit(summary);
  };

  /** Submits one job, waits (unless --no-wait), prints its results; sets the exit code. */
  const runOne = async (cmd: Command, o: JobFlags, path: string, body: Record<string, unknown>) => {
    const api = clientOf(cmd);
    const { body: enqueued } = await api.request('POST', path, { body });
    if (!o.wait) {
      out(cmd, enqueued, () => `${enqueued.job_id as string}\n`);
      return;
    }
    const job = await waitJob(cmd, enqueued.job_id as string, o);
    if (globals(cmd).output === 'table') {
      printJobResults(io, job, null);
      printConfigWorkflow(io, job);
    } else io.out(structured(job, globals(cmd).output as 'json' | 'yaml'));
    exitCode = jobExit(job.status as string);
  };

  const jobOptions = (c: Command) =>
    c
      .option('--host <host>', 'one device: host, host:port or [v6]:port')
      .option('--hosts <list>', 'a batch: @inventory.csv|.yaml (CSV, Ansible, Nornir) or h1,h2,...')
      .option('--group <name>', 'with a YAML inventory: only the hosts of this group')
      .option('--port <port>', 'SSH port (default 22)', positiveInt('--port'))
      .option('--platform <name>', 'platform (cisco_ios, arista_eos, ..., autodetect)')
      .option('--tag <key=value>', 'a job tag (repeatable)', collect)
      .option('--read-timeout <seconds>', 'wait for device output, seconds', seconds)
      .option('--conn-timeout <seconds>', 'TCP connect timeout, seconds', seconds)
      .option('--transcript', 'keep the session transcript (svc jobs transcript ID)')
      .option('--no-wait', 'print the job or batch id and return at once')
      .option(
        '--timeout <seconds>',
        'stop waiting after this long (exit 7; the work goes on)',
        seconds,
      );

  const hostFields = (o: JobFlags): Record<string, unknown> => {
    const d = parseHostPort(o.host!);
    return {
      host: d.host,
      ...(d.port !== undefined ? { port: d.port } : o.port !== undefined ? { port: o.port } : {}),
    };
  };

  jobOptions(
    program
      .command('run')
      .description(
        'run show commands on a device (--host) or on every device of an inventory (--hosts)',
      )
      .argument('[command...]', 'one command, words joined by spaces (e.g. show version)')
      .option(
        '-c, --command <command>',
        'a command (repeatable; with or instead of the argument)',
        collect,
      )
      .option('--textfsm-template <name>', 'parse with this TextFSM template (structured job)')
      .option(
        '--ttp-template <text>',
        'parse with this TTP template or ttp:// path (structured job)',
      )
      .option('--structured', 'parse with the community template for the platform and command'),
  ).action(
    async (
      words: string[],
      o: JobFlags & {
        command?: string[];
        textfsmTemplate?: string;
        ttpTemplate?: string;
        structured?: boolean;
      },
      cmd: Command,
    ) => {
      const commands = [...(words.length > 0 ? [words.join(' ')] : []), ...(o.command ?? [])];
      if (commands.length === 0)
        throw new CliError(ExitCode.usage, 'no command: svc run show version --host R1');
      const isStructured = Boolean(o.structured || o.textfsmTemplate || o.ttpTemplate);
      const body: Record<string, unknown> = {
        commands,
        ...sharedFields(cmd, o),
        ...(o.textfsmTemplate !== undefined ? { textfsm_template: o.textfsmTemplate } : {}),
        ...(o.ttpTemplate !== undefined ? { ttp_template: o.ttpTemplate } : {}),
      };
      const devices = devicesOf(o);
      if (devices === null) {
        await runOne(cmd, o, isStructured ? '/v2/send-command-structured' : '/v2/send-command', {
          ...body,
          ...hostFields(o),
        });
        return;
      }
      await runBatch(
        cmd,
        o,
        {
          kind: isStructured ? 'structured' : 'command',
          ...body,
          devices: withPort(devices, o.port),
        },
        true,
      );
    },
  );

  jobOptions(
    configWorkflowOptions(program.command('config'))
      .description('push configuration lines to a device or, in waves, to an inventory')
      .option('-f, --file <file>', 'configuration lines, one per line (- for stdin)')
      .option('-c, --command <line>', 'a configuration line (repeatable)', collect)
      .option(
        '--canary <n>',
        'batch: run the first N devices first, the rest once they all succeeded',
        positiveInt('--canary'),
      )
      .option(
        '--max-parallel <n>',
        'batch: at most N devices at once',
        positiveInt('--max-parallel'),
      )
      .option(
        '--stop-on-failure-ratio <ratio>',
        'batch: stop when this share of ended jobs failed (0..1)',
        ratio,
      )
      .option('--save', 'save the running configuration (save_config)')
      .option('--commit', 'commit on platforms that need it')
      .option('--commit-comment <text>', 'commit with this comment (Junos, IOS-XR)')
      .option(
        '--confirm-minutes <n>',
        'confirmed commit: the device rolls back after N minutes (1-60) unless `svc jobs confirm`',
        Number,
      )
      .option('--commit-check', 'Junos: commit check before the commit'),
  ).action(
    async (
      o: JobFlags &
        ConfigWorkflowFlags & {
          file?: string;
          command?: string[];
          canary?: number;
          maxParallel?: number;
          stopOnFailureRatio?: number;
          save?: boolean;
          commit?: boolean;
          commitComment?: string;
          confirmMinutes?: number;
          commitCheck?: boolean;
        },
      cmd: Command,
    ) => {
      let lines = o.command ?? [];
      if (o.file !== undefined) {
        let text: string;
        try {
          text = o.file === '-' ? await cli.readStdin() : readFileSync(o.file, 'utf8');
        } catch (err) {
          throw new CliError(ExitCode.usage, `${o.file}: ${(err as Error).message}`);
        }
        lines = [...text.split(/\r?\n/).filter((l) => l.trim() !== ''), ...lines];
      }
      const workflow = configWorkflowFields(o, lines.length > 0);
      if (lines.length === 0 && workflow['template'] === undefined)
        throw new CliError(
          ExitCode.usage,
          'no configuration: give -f FILE, -c LINE or --template NAME',
        );
      const body: Record<string, unknown> = {
        ...(lines.length > 0 ? { commands: lines } : {}),
        ...workflow,
        ...sharedFields(cmd, o),
        ...(o.save ? { save_config: true } : {}),
        ...commitField(o),
      };
      // A template's vars are the batch's (--var, --vars-file) under each host's own.
      const devices = devicesOf(o, workflow['template'] !== undefined);
      if (devices === null) {
        if (
          o.canary !== undefined ||
          o.maxParallel !== undefined ||
          o.stopOnFailureRatio !== undefined
        ) {
          throw new CliError(
            ExitCode.usage,
            '--canary, --max-parallel and --stop-on-failure-ratio need --hosts',
          );
        }
        await runOne(cmd, o, '/v2/send-config', { ...body, ...hostFields(o) });
        return;
      }
      await runBatch(
        cmd,
        o,
        {
          kind: 'config',
          ...body,
          devices: withPort(devices, o.port),
          ...(o.canary !== undefined ? { canary: o.canary } : {}),
          ...(o.maxParallel !== undefined ? { max_parallel: o.maxParallel } : {}),
          ...(o.stopOnFailureRatio !== undefined
            ? { stop_on_failure_ratio: o.stopOnFailureRatio }
            : {}),
        },
        false,
      );
    },
  );

  const batch = program.command('batch').description('follow and cancel batches');
  batch
    .command('list')
    .description("the caller's batches, newest first")
    .action(async (_o: unknown, cmd: Command) => {
      const { body } = await clientOf(cmd).request('GET', '/v2/batches');
      const list = (body.batches ?? body) as Json[];
      out(cmd, body, () =>
        table(['batch_id', 'kind', 'status', 'total', 'created_at', 'ended_at'], list),
      );
    });
  batch
    .command('status')
    .description('counts per status and per error code')
    .argument('<batch_id>')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const { body } = await clientOf(cmd).request('GET', `/v2/batches/${encodeURIComponent(id)}`);
      out(cmd, body, () => summaryTable(body));
    });
  batch
    .command('watch')
    .description('follow a batch to its end (exit 0 all finished, 1 some failed, 8 cancelled)')
    .argument('<batch_id>')
    .option('--timeout <seconds>', 'stop waiting after this long (exit 7)', seconds)
    .action(async (id: string, o: { timeout?: number }, cmd: Command) => {
      const summary = await waitBatch(cmd, id, o);
      out(cmd, summary, () => summaryTable(summary));
      exitCode = batchExit(summary);
    });
  batch
    .command('jobs')
    .description('the jobs of a batch with their results')
    .argument('<batch_id>')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const jobs = await batchJobs(cmd, id);
      out(cmd, jobs, () => table(['job_id', 'name', 'host', 'port', 'status', 'error_code'], jobs));
    });
  batch
    .command('cancel')
    .description('cancel the jobs of a batch that have not started')
    .argument('<batch_id>')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const { body } = await clientOf(cmd).request(
        'DELETE',
        `/v2/batches/${encodeURIComponent(id)}`,
      );
      out(cmd, body, () => summaryTable(body));
    });

  const jobs = program.command('jobs').description('list, read, cancel and replay jobs');
  jobs
    .command('list')
    .description("the caller's jobs")
    .addOption(
      new Option('--status <status>').choices([
        'queued',
        'started',
        'finished',
        'failed',
        'cancelled',
      ]),
    )
    .option('--tag <key:value>', 'only jobs with this tag')
    .option('--page <n>', 'page', positiveInt('--page'))
    .option('--per-page <n>', 'jobs per page (1 to 100)', positiveInt('--per-page'))
    .action(
      async (
        o: { status?: string; tag?: string; page?: number; perPage?: number },
        cmd: Command,
      ) => {
        const { body } = await clientOf(cmd).request('GET', '/v2/jobs', {
          query: { status: o.status, tag: o.tag, page: o.page, per_page: o.perPage },
        });
        out(cmd, body, () => {
          const p = body.pagination ?? {};
          // The API counts 0 pages when nothing matches: "page 1/0" read as a fault.
          if (p.total === 0) return 'no jobs\n';
          return (
            table(['job_id', 'status', 'created_at', 'ended_at', 'tags'], body.jobs as Json[]) +
            `page ${p.page}/${p.pages}, ${p.total} jobs\n`
          );
        });
      },
    );
  jobs
    .command('get')
    .description('a job with its results (--wait: until it ends; exit code by its status)')
    .argument('<job_id>')
    .option('--wait', 'wait for the job to end')
    .option('--timeout <seconds>', 'with --wait: stop waiting after this long (exit 7)', seconds)
    .action(async (id: string, o: { wait?: boolean; timeout?: number }, cmd: Command) => {
      const job = o.wait
        ? await waitJob(cmd, id, o)
        : (await clientOf(cmd).request('GET', `/v2/jobs/${encodeURIComponent(id)}`)).body;
      out(cmd, job, () => {
        const rest = Object.fromEntries(
          Object.entries(job as Record<string, unknown>).filter(([k]) => k !== 'results'),
        );
        return (
          fields(rest) +
          Object.entries((job.results ?? {}) as Record<string, unknown>)
            .map(([c, v]) => `=== ${c} ===\n${resultText(v)}`)
            .join('')
        );
      });
      if (o.wait) exitCode = jobExit(job.status as string);
    });
  jobs
    .command('cancel')
    .description('cancel a queued or running job (best effort)')
    .argument('<job_id>')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      await clientOf(cmd).request('DELETE', `/v2/send-command/${encodeURIComponent(id)}`);
      out(cmd, { job_id: id, cancelled: true }, () => `job ${id} cancelled\n`);
    });
  /**
   * `jobs replay` and `jobs confirm`: a new job from an earlier one, logged in with the current
   * device credentials (enable secret included, as `svc run` sends them).
   */
  const resubmit =
    (route: 'replay' | 'confirm') =>
    async (id: string, o: { wait?: boolean; timeout?: number }, cmd: Command) => {
      const { body } = await clientOf(cmd).request(
        'POST',
        `/v2/jobs/${encodeURIComponent(id)}/${route}`,
        { body: credentialFields(cmd) },
      );
      if (!o.wait) {
        out(cmd, body, () => `${body.job_id as string}\n`);
        return;
      }
      const job = await waitJob(cmd, body.job_id as string, o);
      if (globals(cmd).output === 'table') printJobResults(io, job, null);
      else io.out(structured(job, globals(cmd).output as 'json' | 'yaml'));
      exitCode = jobExit(job.status as string);
    };
  jobs
    .command('replay')
    .description('run a failed job again with your current credentials')
    .argument('<job_id>')
    .option('--wait', 'wait for the new job to end')
    .option('--timeout <seconds>', 'with --wait: stop waiting after this long (exit 7)', seconds)
    .action(resubmit('replay'));
  jobs
    .command('confirm')
    .description(
      'confirm a confirmed commit (send-config --confirm-minutes) before the device rolls it back',
    )
    .argument('<job_id>')
    .option('--wait', 'wait for the confirm job to end')
    .option('--timeout <seconds>', 'with --wait: stop waiting after this long (exit 7)', seconds)
    .action(resubmit('confirm'));
  jobs
    .command('transcript')
    .description("a job's device session transcript (the job's owner only)")
    .argument('<job_id>')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const { body } = await clientOf(cmd).request(
        'GET',
        `/v2/jobs/${encodeURIComponent(id)}/transcript`,
      );
      out(
        cmd,
        body,
        () =>
          ((body.entries ?? []) as Json[])
            .map(
              (e) =>
                `${e.at as string} ${e.dir === 'sent' ? '>>' : '<<'} ${JSON.stringify(e.data)}\n`,
            )
            .join('') + (body.truncated ? '[transcript truncated at its size cap]\n' : ''),
      );
    });

  const keys = program
    .command('keys')
    .description('API keys (admin: SVC_ADMIN_SECRET or an admin key)');
  const keyTable = (k: Json) => fields(k, Object.keys(k as object));
  keys
    .command('create')
    .description('create a key; its token is shown once')
    .addOption(
      new Option('--role <role>').choices(['admin', 'operator', 'viewer']).default('operator'),
    )
    .option('--contexts <list>', 'allowed contexts, comma-separated (default every context)')
    .option('--ttl <seconds>', 'lifetime in seconds; 0 never expires', positiveInt('--ttl'))
    .option('--created-by <name>', 'recorded as the creator')
    .action(
      async (
        o: { role: string; contexts?: string; ttl?: number; createdBy?: string },
        cmd: Command,
      ) => {
        const { body } = await clientOf(cmd).request('POST', '/v2/api-keys', {
          auth: 'admin',
          body: {
            role: o.role,
            ...(o.contexts !== undefined
              ? {
                  contexts: o.contexts
                    .split(',')
                    .map((c) => c.trim())
                    .filter(Boolean),
                }
              : {}),
            ...(o.ttl !== undefined ? { ttl: o.ttl } : {}),
            ...(o.createdBy !== undefined ? { created_by: o.createdBy } : {}),
          },
        });
        out(cmd, body, () => keyTable(body));
      },
    );
  keys
    .command('list')
    .description('keys (never their tokens)')
    .action(async (_o: unknown, cmd: Command) => {
      const { body } = await clientOf(cmd).request('GET', '/v2/api-keys', { auth: 'admin' });
      out(cmd, body, () =>
        table(
          ['key_id', 'role', 'contexts', 'created_at', 'expires_at', 'created_by'],
          body.keys as Json[],
        ),
      );
    });
  keys
    .command('revoke')
    .description('revoke a key at once')
    .argument('<key_id>')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      await clientOf(cmd).request('DELETE', `/v2/api-keys/${encodeURIComponent(id)}`, {
        auth: 'admin',
      });
      out(cmd, { key_id: id, revoked: true }, () => `key ${id} revoked\n`);
    });
  keys
    .command('rotate')
    .description('a new token for a key (the old one stops working)')
    .argument('<key_id>')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const { body } = await clientOf(cmd).request(
        'POST',
        `/v2/api-keys/${encodeURIComponent(id)}/rotate`,
        { auth: 'admin' },
      );
      out(cmd, body, () => keyTable(body));
    });

  const parse = program
    .command('parse')
    .description('parse saved device output locally (no service needed)');
  const readInput = async (path: string): Promise<string> => {
    try {
      return path === '-' ? await cli.readStdin() : readFileSync(path, 'utf8');
    } catch (err) {
      throw new CliError(ExitCode.usage, `${path}: ${(err as Error).message}`);
    }
  };
  const parsed = (cmd: Command, value: unknown) =>
    out(cmd, value, () => {
      const rows = Array.isArray(value) ? (value as unknown[]) : null;
      if (
        rows &&
        rows.length > 0 &&
        rows.every((r) => typeof r === 'object' && r !== null && !Array.isArray(r))
      ) {
        const cols = [...new Set(rows.flatMap((r) => Object.keys(r as object)))];
        return table(cols, rows as Record<string, unknown>[]);
      }
      return JSON.stringify(value, null, 2) + '\n';
    });
  const parserError = (err: unknown): never => {
    if (err instanceof CliError) throw err;
    throw new CliError(ExitCode.failed, err instanceof Error ? err.message : String(err));
  };
  parse
    .command('textfsm')
    .description('parse INPUT (- for stdin) with TextFSM template(s), joined by ":"')
    .argument('<templates>')
    .argument('<input>')
    .action(async (templates: string, input: string, _o: unknown, cmd: Command) => {
      const text = await readInput(input);
      let value: unknown;
      try {
        value = parseTemplateFiles(templates.split(':'), text);
      } catch (err) {
        parserError(err);
      }
      parsed(cmd, value);
    });
  parse
    .command('ttp')
    .description('parse INPUT (- for stdin) with a TTP template')
    .argument('<template>')
    .argument('<input>')
    .action(async (template: string, input: string, _o: unknown, cmd: Command) => {
      const text = await readInput(input);
      let value: unknown;
      try {
        value = parseTtp(readFileSync(template, 'utf8'), text, { templatesDir: dirname(template) });
      } catch (err) {
        parserError(err);
      }
      parsed(cmd, value);
    });

  program
    .command('health')
    .description('service health (exit 0 healthy, 1 otherwise, 5 unreachable)')
    .action(async (_o: unknown, cmd: Command) => {
      const { body } = await clientOf(cmd).request('GET', '/healthcheck', {
        auth: 'none',
        accept: [503],
      });
      out(cmd, body, () => {
        const c = body.components ?? {};
        return fields({
          status: body.status,
          version: body.version,
          uptime_seconds: body.uptime_seconds,
          store: c.redis?.status,
          queue: `${c.queue?.status as string} (depth ${c.queue?.depth as number})`,
          workers: `${c.workers?.status as string} (${c.workers?.count as number} hosts, ${c.workers?.active_jobs as number} active jobs)`,
          failed_jobs: c.failed_jobs,
        });
      });
      exitCode = body.status === 'healthy' ? ExitCode.ok : ExitCode.failed;
    });

  registerConfigTemplateCommands(program, { clientOf, out, readStdin: () => cli.readStdin() });
  registerCommunityTemplateCommands(program, {
    out,
    dataDir: () => localDataDir(cli.env['SVC_DATA_DIR']),
  });

  program
    .command('completion')
    .description('print a shell completion script: eval "$(svc completion bash)"')
    .addArgument(new Command().createArgument('<shell>', 'bash or zsh').choices(['bash', 'zsh']))
    .action((shell: string) => {
      io.out(shell === 'zsh' ? zshCompletion() : bashCompletion());
    });

  // Every command of the tree is a command of the program (completion stays in step).
  for (const name of Object.keys(COMMAND_TREE)) {
    if (!program.commands.some((c) => c.name() === name)) throw new Error(`no command ${name}`);
  }
  return { program, exitCode: () => exitCode };
}

function withPort(devices: InventoryDevice[], port: number | undefined): InventoryDevice[] {
  return port === undefined
    ? devices
    : devices.map((d) => (d.port === undefined ? { ...d, port } : d));
}

/** Runs the CLI; resolves to the exit code (never throws). */
export async function runCli(argv: string[], cli: CliEnv): Promise<number> {
  const { program, exitCode } = buildProgram(cli);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode();
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end with exit code 0 through this path.
      return err.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    if (err instanceof CliError) {
      cli.io.err(`svc: ${err.message}\n`);
      return err.exitCode;
    }
    cli.io.err(
      `svc: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    return ExitCode.internal;
  }
}
