import {
  ErrorCode,
  SvcError,
  UserPattern,
  candidateDryRunOf,
  sessionNameOf,
  type CommitForms,
  type CommitOptions,
  type CommandStatus,
  type ConfirmOf,
} from '@svc/proto';
import type { AnswersFor, CliSession, ShowOutcome } from './cli-session.js';

/**
 * Pushes with commit options (comment, confirmed commit, commit check) and confirms a confirmed
 * commit later (docs/config-workflows.md). The forms per platform are proto's `COMMIT_FORMS`.
 */

export interface CommitOutcome extends ShowOutcome {
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
 * mode. Every step's output and status are kept; a line, check or commit the device rejects
 * ends the job (`failure`) and the candidate is discarded before the session goes anywhere
 * (Junos keeps an uncommitted change in its shared candidate for the next session).
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
  const check = commit.check === true ? forms.check : null;
  const commitCommand = forms.command(commit);
  const steps = [...lines, ...(check !== null ? [check] : []), commitCommand];
  const results: Record<string, string> = {};
  const status: CommandStatus[] = [];
  let failure: SvcError | null = null;
  const finish = (confirmBy: string | null): CommitOutcome => {
    for (const name of steps.slice(status.length))
      status.push({ command: name, status: 'not_run' });
    return { results, status, failure, confirmBy };
  };
  /** Sends one step and records how it fared; false when it ended the job. */
  const step = async (cmd: string, wait: number, index?: number): Promise<boolean> => {
    let out: string;
    try {
      out = cli.driver.cleanConfigOutput(
        await cli.command(cmd, {
          timeoutMs: wait,
          follow: 'exit',
          confirmations: index !== undefined ? (options.answers?.(index) ?? []) : [],
        }),
      );
    } catch (err) {
      failure = SvcError.from(err);
      const timedOut =
        failure.code === ErrorCode.READ_TIMEOUT || failure.code === ErrorCode.JOB_TIMEOUT;
      status.push({ command: cmd, status: timedOut ? 'timeout' : 'error', error: failure.message });
      return false;
    }
    results[cmd] = out;
    const error = cli.findError(out, undefined, options.errorPatterns);
    if (error !== undefined) {
      failure = new SvcError(
        ErrorCode.COMMAND_ERROR,
        `command "${cmd}" rejected by the device: ${error}`,
      );
      status.push({ command: cmd, status: 'error', error });
      return false;
    }
    status.push({ command: cmd, status: 'ok' });
    return true;
  };
  await enterConfig(cli, forms.enter, session, timeoutMs);
  let sent = true;
  for (const [index, line] of lines.entries()) {
    sent = await step(line, timeoutMs, index);
    if (!sent) break;
  }
  if (sent && check !== null) sent = await step(check, options.commitTimeoutMs);
  const started = Date.now();
  if (sent) sent = await step(commitCommand, options.commitTimeoutMs);
  if (!sent) {
    await discardAfterFailure(cli, failure, timeoutMs);
    return finish(null);
  }
  try {
    await cli.leaveConfig(cli.driver.config.exit, timeoutMs);
  } catch (err) {
    // Committed, then stuck in configuration mode: the outputs are kept with the failure.
    failure = SvcError.from(err);
  }
  return finish(
    commit.confirmed_minutes !== undefined
      ? new Date(started + commit.confirmed_minutes * 60_000).toISOString()
      : null,
  );
}

/**
 * After a step failed: a rejection (the device answered) discards the candidate and leaves
 * configuration mode; a timeout or lost session leaves the state unknown, so the session is
 * dropped (it is never pooled again either way).
 */
async function discardAfterFailure(
  cli: CliSession,
  failure: SvcError | null,
  timeoutMs: number,
): Promise<void> {
  if (cli.isClosed) return;
  if (failure?.code !== ErrorCode.COMMAND_ERROR) {
    cli.destroy();
    return;
  }
  await discardCandidate(cli, timeoutMs).catch(() => cli.destroy());
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
      await cli.leaveConfig(cli.driver.config.exit, timeoutMs).catch(() => cli.destroy());
      throw expired();
    }
    const error = cli.findError(out);
    if (error !== undefined) {
      await discardCandidate(cli, timeoutMs).catch(() => cli.destroy());
      throw new SvcError(
        ErrorCode.COMMAND_ERROR,
        `command "${cmd}" rejected by the device: ${error}`,
      );
    }
  }
  await cli.leaveConfig(cli.driver.config.exit, timeoutMs);
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

/**
 * Discards the candidate with the platform's own discard (Junos `rollback 0`, IOS-XR and EOS
 * sessions `abort`; EOS `end` would leave the session pending), else the driver's abort, then
 * leaves configuration mode. One place for dry runs and commits: a candidate is never left
 * behind for the next session.
 */
export async function discardCandidate(cli: CliSession, timeoutMs: number): Promise<void> {
  const config = cli.driver.config;
  for (const cmd of candidateDryRunOf(cli.driver.platform)?.discard ?? config.abort) {
    if (!config.isConfig(cli.prompt)) break;
    await cli.command(cmd, { timeoutMs, follow: 'exit', confirmations: config.exitConfirmations });
  }
  await cli.leaveConfig(config.exit, timeoutMs);
}
