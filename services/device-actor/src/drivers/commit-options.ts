import {
  ErrorCode,
  SvcError,
  UserPattern,
  candidateDryRunOf,
  sessionNameOf,
  type CommitForms,
  type CommitOptions,
  type ConfirmOf,
} from '@svc/proto';
import type { AnswersFor, CliSession } from './cli-session.js';

/**
 * Pushes with commit options (comment, confirmed commit, commit check) and confirms a confirmed
 * commit later (docs/config-workflows.md). The forms per platform are proto's `COMMIT_FORMS`.
 */

export interface CommitOutcome {
  results: Record<string, string>;
  /** Confirmed commits: when the device rolls the change back unless confirmed. */
  confirmBy: string | null;
}

export interface CommitRunOptions {
  timeoutMs: number;
  commitTimeoutMs: number;
  jobId: string;
  answers?: AnswersFor;
  errorPatterns?: readonly UserPattern[];
}

/**
 * Enters configuration mode (EOS: a configuration session named after the job), types the
 * lines, runs `commit check` when asked, commits with the options and leaves configuration
 * mode. A rejected line, check or commit fails the job and the candidate is discarded.
 */
export async function commitWithOptions(
  cli: CliSession,
  lines: readonly string[],
  forms: CommitForms,
  commit: CommitOptions,
  options: CommitRunOptions,
): Promise<CommitOutcome> {
  const { timeoutMs } = options;
  const session = sessionNameOf(options.jobId);
  await enterConfig(cli, forms.enter, session, timeoutMs);
  const results: Record<string, string> = {};
  const send = async (cmd: string, wait: number, index?: number): Promise<void> => {
    const out = cli.driver.cleanConfigOutput(
      await cli.command(cmd, {
        timeoutMs: wait,
        follow: 'exit',
        confirmations: index !== undefined ? (options.answers?.(index) ?? []) : [],
      }),
    );
    results[cmd] = out;
    const error = cli.findError(out, undefined, options.errorPatterns);
    if (error !== undefined) {
      throw new SvcError(
        ErrorCode.COMMAND_ERROR,
        `command "${cmd}" rejected by the device: ${error}`,
      );
    }
  };
  try {
    for (const [index, line] of lines.entries()) await send(line, timeoutMs, index);
    if (commit.check === true && forms.check !== null) {
      await send(forms.check, options.commitTimeoutMs);
    }
  } catch (err) {
    if (!cli.isClosed) await abort(cli, timeoutMs).catch(() => cli.destroy());
    throw err;
  }
  const started = Date.now();
  await send(forms.command(commit), options.commitTimeoutMs);
  const confirmBy =
    commit.confirmed_minutes !== undefined
      ? new Date(started + commit.confirmed_minutes * 60_000).toISOString()
      : null;
  await leave(cli, timeoutMs);
  return { results, confirmBy };
}

/**
 * Confirms the confirmed commit of `of`: checks that the device still waits for it (else
 * CONFIRM_EXPIRED: the device rolled it back), then confirms it as the platform does.
 */
export async function confirmCommit(
  cli: CliSession,
  forms: CommitForms,
  of: ConfirmOf,
  timeoutMs: number,
): Promise<Record<string, string>> {
  const session = of.session ?? sessionNameOf(of.job_id);
  const expired = (): SvcError =>
    new SvcError(
      ErrorCode.CONFIRM_EXPIRED,
      `the confirmed commit of job ${of.job_id} is no longer waiting on the device: its window passed and the device rolled the change back`,
    );
  const results: Record<string, string> = {};
  if (forms.pending !== null) {
    const shown = await cli.command(forms.pending.command, { timeoutMs });
    results[forms.pending.command] = shown;
    const pattern = UserPattern.compile(forms.pending.pattern.replaceAll('{session}', session));
    if (!shown.split('\n').some((l) => pattern.find(l) !== null)) throw expired();
  }
  await enterConfig(cli, forms.confirm.enter, session, timeoutMs);
  const gone = forms.expired !== null ? UserPattern.compile(forms.expired) : null;
  for (const cmd of forms.confirm.commands) {
    const out = cli.driver.cleanConfigOutput(await cli.command(cmd, { timeoutMs, follow: 'exit' }));
    results[cmd] = out;
    if (gone !== null && out.split('\n').some((l) => gone.find(l) !== null)) {
      await leave(cli, timeoutMs);
      throw expired();
    }
    const error = cli.findError(out);
    if (error !== undefined) {
      await abort(cli, timeoutMs).catch(() => cli.destroy());
      throw new SvcError(
        ErrorCode.COMMAND_ERROR,
        `command "${cmd}" rejected by the device: ${error}`,
      );
    }
  }
  await leave(cli, timeoutMs);
  return results;
}

/**
 * Enters configuration mode by the platform's `form` (`{session}` replaced by a session name:
 * EOS configuration sessions), or its plain one; refused or not at a configuration prompt: thrown.
 */
export async function enterConfig(
  cli: CliSession,
  form: string | null,
  session: string,
  timeoutMs: number,
): Promise<void> {
  const config = cli.driver.config;
  const cmd = form?.replaceAll('{session}', session) ?? config.enter;
  if (cmd === null) {
    throw new SvcError(
      ErrorCode.INTERNAL,
      `platform ${cli.driver.platform} has no configuration mode`,
    );
  }
  const out = await cli.command(cmd, { timeoutMs, follow: 'config' });
  const refused = cli.findError(out);
  if (refused !== undefined || !config.isConfig(cli.prompt)) {
    throw new SvcError(
      ErrorCode.COMMAND_ERROR,
      `could not enter configuration mode with "${cmd}": ${refused ?? cli.prompt}`,
    );
  }
}

/** Leaves configuration mode (a commit that already left it, EOS, needs nothing). */
async function leave(cli: CliSession, timeoutMs: number): Promise<void> {
  const config = cli.driver.config;
  for (let round = 0; round < 4 && config.isConfig(cli.prompt); round++) {
    for (const cmd of config.exit) {
      if (!config.isConfig(cli.prompt)) break;
      await cli.command(cmd, {
        timeoutMs,
        follow: 'exit',
        confirmations: config.exitConfirmations,
      });
    }
  }
}

/** Discards the candidate with the platform's abort, then leaves configuration mode. */
async function abort(cli: CliSession, timeoutMs: number): Promise<void> {
  const config = cli.driver.config;
  // The candidate's own discard (EOS: `abort` ends the session; `end` would leave it pending).
  for (const cmd of candidateDryRunOf(cli.driver.platform)?.discard ?? config.abort) {
    if (!config.isConfig(cli.prompt)) break;
    await cli.command(cmd, { timeoutMs, follow: 'exit', confirmations: config.exitConfirmations });
  }
  await leave(cli, timeoutMs);
}
