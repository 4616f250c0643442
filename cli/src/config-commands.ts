// The API's JSON bodies are read field by field for printing.
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import type { ApiClient } from './api-client.js';
import { CliError, ExitCode } from './exit-codes.js';
import { table, type Io } from './output.js';

/**
 * Configuration workflows on the command line (docs/cli.md, docs/config-workflows.md): the
 * `svc templates` commands for stored configuration templates, and the template, dry-run and
 * check flags of `svc config`. Kept apart from program.ts so that other `templates`
 * subcommands can be added beside these.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export interface TemplateCommandDeps {
  clientOf(cmd: Command): ApiClient;
  out(cmd: Command, value: unknown, asTable: () => string): void;
  readStdin(): Promise<string>;
}

/** Flags `svc config` takes for templates, dry runs and checks. */
export interface ConfigWorkflowFlags {
  template?: string;
  templateFile?: string;
  var?: string[];
  varsFile?: string;
  dryRun?: boolean;
  check?: string[];
  errorPattern?: string[];
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new CliError(ExitCode.usage, `${path}: ${(err as Error).message}`);
  }
}

/** `--var k=v` (v read as JSON when it is JSON: numbers, lists; else text) over `--vars-file`. */
export function varsOf(o: ConfigWorkflowFlags): Record<string, unknown> {
  let vars: Record<string, unknown> = {};
  if (o.varsFile !== undefined) {
    const parsed: unknown = parseYaml(readText(o.varsFile));
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new CliError(ExitCode.usage, `${o.varsFile}: vars must be a YAML or JSON mapping`);
    }
    vars = { ...(parsed as Record<string, unknown>) };
  }
  for (const pair of o.var ?? []) {
    const i = pair.indexOf('=');
    if (i <= 0) throw new CliError(ExitCode.usage, `--var ${pair}: use name=value`);
    const raw = pair.slice(i + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // Plain text.
    }
    vars[pair.slice(0, i)] = value;
  }
  return vars;
}

/** Adds the workflow flags to `svc config`. */
export function configWorkflowOptions(c: Command): Command {
  return c
    .option('--template <name>', 'render the lines from this stored configuration template')
    .option('--template-file <file>', 'render the lines from this template text (Jinja2)')
    .option('--var <name=value>', 'a template variable (repeatable; JSON values allowed)', collect)
    .option('--vars-file <file>', 'template variables from a YAML or JSON mapping')
    .option('--dry-run', 'change nothing: show the device diff where it has a candidate')
    .option('--check <command>', 'a show command run before and after (repeatable)', collect)
    .option(
      '--error-pattern <re2>',
      'an output line matching it fails a line (repeatable)',
      collect,
    );
}

/** The body fields of the workflow flags; `hasLines` says -f/-c gave lines too. */
export function configWorkflowFields(
  o: ConfigWorkflowFlags,
  hasLines: boolean,
): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (o.template !== undefined && o.templateFile !== undefined) {
    throw new CliError(ExitCode.usage, 'give --template or --template-file, not both');
  }
  const templated = o.template !== undefined || o.templateFile !== undefined;
  if (templated && hasLines) {
    throw new CliError(ExitCode.usage, 'give configuration lines (-f/-c) or a template, not both');
  }
  if (!templated && (o.var !== undefined || o.varsFile !== undefined)) {
    throw new CliError(ExitCode.usage, '--var and --vars-file need --template or --template-file');
  }
  if (templated) {
    body['template'] = {
      ...(o.template !== undefined ? { name: o.template } : { text: readText(o.templateFile!) }),
      vars: varsOf(o),
    };
  }
  if (o.dryRun) body['dry_run'] = true;
  if (o.check !== undefined) body['checks'] = o.check;
  if (o.errorPattern !== undefined) body['error_patterns'] = o.errorPattern;
  return body;
}

/** `commit` of a send-config: true, or the options object when any commit option is given. */
export function commitField(o: {
  commit?: boolean;
  commitComment?: string;
  confirmMinutes?: number;
  commitCheck?: boolean;
}): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  if (o.commitComment !== undefined) options['comment'] = o.commitComment;
  if (o.confirmMinutes !== undefined) {
    if (!Number.isInteger(o.confirmMinutes) || o.confirmMinutes < 1 || o.confirmMinutes > 60) {
      throw new CliError(ExitCode.usage, '--confirm-minutes: a whole number from 1 to 60');
    }
    options['confirmed_minutes'] = o.confirmMinutes;
  }
  if (o.commitCheck) options['check'] = true;
  if (Object.keys(options).length > 0) return { commit: options };
  return o.commit ? { commit: true } : {};
}

const RED = '\x1b[31m';
const GREEN = '\x1b[32m';
const CYAN = '\x1b[36m';
const RESET = '\x1b[0m';

/** A unified diff, coloured on a terminal. */
export function diffText(diff: string, colour: boolean): string {
  const text = diff.endsWith('\n') ? diff : `${diff}\n`;
  if (!colour) return text;
  return text
    .split('\n')
    .map((l) =>
      l.startsWith('+++') || l.startsWith('---')
        ? l
        : l.startsWith('+')
          ? `${GREEN}${l}${RESET}`
          : l.startsWith('-')
            ? `${RED}${l}${RESET}`
            : l.startsWith('@@')
              ? `${CYAN}${l}${RESET}`
              : l,
    )
    .join('\n');
}

/** After a config job's results (table output): its rendered lines, diff and check diffs. */
export function printConfigWorkflow(io: Io, job: Json): void {
  const colour = io.outIsTty === true;
  if (Array.isArray(job.rendered) && job.diff !== undefined) {
    io.out(`=== rendered ===\n${(job.rendered as string[]).join('\n')}\n`);
  }
  if (typeof job.diff === 'string') io.out(`=== diff ===\n${diffText(String(job.diff), colour)}`);
  else if (job.diff === null)
    io.out('=== diff ===\n(no candidate configuration on this platform)\n');
  if (typeof job.confirm_by === 'string') {
    io.out(
      `=== confirmed commit ===\nconfirm by ${job.confirm_by}: svc jobs confirm ${String(job.job_id)} (else the device rolls it back)\n`,
    );
  }
  for (const [cmd, check] of Object.entries((job.checks ?? {}) as Record<string, Json>)) {
    if (check.diff === undefined) {
      io.out(`=== check (pre): ${cmd} ===\n${String(check.pre)}\n`);
    } else {
      io.out(
        `=== check: ${cmd} ===\n${check.diff === '' ? '(no change)\n' : diffText(String(check.diff), colour)}`,
      );
    }
  }
}

function templatePath(name: string, suffix = ''): string {
  return `/v2/config-templates/${encodeURIComponent(name)}${suffix}`;
}

/** `svc templates put|get|list|delete|render` (gets or creates the `templates` command). */
export function registerConfigTemplateCommands(program: Command, deps: TemplateCommandDeps): void {
  const templates =
    program.commands.find((c) => c.name() === 'templates') ??
    program
      .command('templates')
      .description(
        'stored configuration templates: put, get, list, delete, render (docs/config-workflows.md); community parsing templates: install (docs/parsers.md)',
      );
  const query = (o: { context?: string }) =>
    o.context !== undefined ? { context: o.context } : {};
  const withContext = (c: Command) =>
    c.option('--context <name>', 'routing context (default "default")');

  withContext(
    templates
      .command('put')
      .description('store a configuration template (Jinja2 syntax) from a file (- for stdin)')
      .argument('<name>', 'template name')
      .argument('<file>', 'template text file, - for stdin')
      .option('--description <text>', 'what the template is for'),
  ).action(
    async (
      name: string,
      file: string,
      o: { context?: string; description?: string },
      cmd: Command,
    ) => {
      const text = file === '-' ? await deps.readStdin() : readText(file);
      const { body } = await deps.clientOf(cmd).request('PUT', templatePath(name), {
        body: {
          template: text,
          ...(o.description !== undefined ? { description: o.description } : {}),
        },
        query: query(o),
      });
      deps.out(cmd, body, () => `${body.name as string} version ${body.version as number}\n`);
    },
  );

  withContext(
    templates
      .command('get')
      .description('print a stored template')
      .argument('<name>', 'template name'),
  ).action(async (name: string, o: { context?: string }, cmd: Command) => {
    const { body } = await deps
      .clientOf(cmd)
      .request('GET', templatePath(name), { query: query(o) });
    deps.out(cmd, body, () => String(body.template).replace(/\n?$/, '\n'));
  });

  withContext(templates.command('list').description('list the stored templates')).action(
    async (o: { context?: string }, cmd: Command) => {
      const { body } = await deps
        .clientOf(cmd)
        .request('GET', '/v2/config-templates', { query: query(o) });
      deps.out(cmd, body, () =>
        table(
          ['name', 'version', 'updated_at', 'description'],
          body.templates as Record<string, unknown>[],
        ),
      );
    },
  );

  withContext(
    templates
      .command('delete')
      .description('delete a stored template')
      .argument('<name>', 'template name'),
  ).action(async (name: string, o: { context?: string }, cmd: Command) => {
    await deps.clientOf(cmd).request('DELETE', templatePath(name), { query: query(o) });
    deps.out(cmd, { deleted: name }, () => `deleted ${name}\n`);
  });

  withContext(
    templates
      .command('render')
      .description('render a stored template (or --file text) with vars; no device is contacted')
      .argument('[name]', 'stored template name')
      .option('--file <file>', 'render this template text instead of a stored one')
      .option('--var <name=value>', 'a variable (repeatable; JSON values allowed)', collect)
      .option('--vars-file <file>', 'variables from a YAML or JSON mapping'),
  ).action(
    async (
      name: string | undefined,
      o: { context?: string; file?: string; var?: string[]; varsFile?: string },
      cmd: Command,
    ) => {
      if ((name === undefined) === (o.file === undefined)) {
        throw new CliError(ExitCode.usage, 'give a template name or --file, not both');
      }
      const vars = varsOf(o);
      const { body } =
        name !== undefined
          ? await deps.clientOf(cmd).request('POST', templatePath(name, '/render'), {
              body: { vars },
              query: query(o),
            })
          : await deps.clientOf(cmd).request('POST', '/v2/config-templates/render', {
              body: { template: readText(o.file!), vars },
              query: query(o),
            });
      deps.out(cmd, body, () => `${(body.lines as string[]).join('\n')}\n`);
    },
  );
}
