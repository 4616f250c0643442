import {
  AUTODETECT,
  SvcError,
  ErrorCode,
  UserPattern,
  PatternError,
  candidateDryRunOf,
  commitFormsOf,
  codePointName,
  forbiddenCharIn,
  type CommandStatus,
} from '@svc/proto';
import { keptOf, redactValues, type ShownWhole } from './redaction.js';
import {
  CommandsRejected,
  DeviceJobFailure,
  sessionOptionsOf,
  transportRouteOf,
  transportSecretsOf,
  shownWholeOf,
  type DeviceJob,
  type DeviceOutcome,
  type RunDeviceJob,
} from './device-job.js';
import { CliSession, type AnswersFor, type ShowOutcome } from './drivers/cli-session.js';
import { dryRunCandidate } from './drivers/dry-run.js';
import { commitWithOptions, confirmCommit, type CommitOutcome } from './drivers/commit-options.js';
import { checkResults, runChecks } from './config-checks.js';
import { getDriver, withLoginCredentials, type Confirmation } from '@svc/drivers';
import { autodetectPlatform } from './autodetect.js';
import { abortError } from './abort.js';
import type { PoolKeyParts, SessionPool } from './session-pool.js';

export interface DeviceRunnerOptions {
  /** Warm sessions shared by the jobs of this actor host; null turns pooling off. */
  pool: SessionPool | null;
  /**
   * Hosts (as written in jobs) and platform ids whose sessions are never pooled
   * (CONNECTION_POOL_EXCLUDE). Compared case-insensitively. Default none.
   */
  poolExclude: readonly string[];
  /**
   * Bound of the prompt check on a warm session before it is reused, in ms (capped by the job's
   * read timeout). A session that fails it is closed and a new one opened. Default 2000.
   */
  staleCheckMs?: number;
  /** Least wait for a commit or save step, in ms (default {@link COMMIT_SAVE_FLOOR_MS}). */
  commitSaveFloorMs?: number;
}

/**
 * Builds the device layer's {@link RunDeviceJob}: picks the driver (fingerprinting first for
 * `autodetect`), takes a warm session or opens one, enters enable, runs the commands (show or
 * config with commit/save) and returns each command's text. Every failure is a SvcError with
 * the precise code, and its text never holds the password or enable secret.
 */
export function createDeviceRunner(options: DeviceRunnerOptions): RunDeviceJob {
  const exclude = new Set(
    options.poolExclude.map((x) => x.trim().toLowerCase()).filter((x) => x !== ''),
  );
  const staleCheckMs = options.staleCheckMs ?? 2000;
  const floorMs = options.commitSaveFloorMs ?? COMMIT_SAVE_FLOOR_MS;

  async function run(given: DeviceJob): Promise<DeviceOutcome> {
    if (given.signal.aborted) throw abortError(given.signal);
    const job = closingWarmAtHandshake(given, options.pool);
    let platform = job.platform;
    let detectedPlatform: string | null = null;
    const pool = options.pool;
    if (platform === AUTODETECT) {
      // One session per device: a warm one goes before the fingerprinting session opens.
      await pool?.closeDevice(deviceOf(job));
      platform = await autodetectPlatform(job);
      detectedPlatform = platform;
    }
    try {
      return await runWith(job, platform, detectedPlatform);
    } catch (err) {
      // The detection is kept on the job whatever happens next.
      if (detectedPlatform === null || err instanceof DeviceJobFailure) throw err;
      const failure = job.signal.aborted ? abortError(job.signal) : SvcError.from(err);
      throw new DeviceJobFailure(failure.code, failure.message, {}, null, detectedPlatform);
    }
  }

  async function runWith(
    job: DeviceJob,
    platform: string,
    detectedPlatform: string | null,
  ): Promise<DeviceOutcome> {
    const pool = options.pool;
    const driver = getDriver(platform);
    if (driver === undefined)
      throw new SvcError(ErrorCode.INTERNAL, `no driver for platform ${platform}`);
    // Commit options and confirm jobs use the platform's commit forms (EOS: a session's commit).
    const ownCommit = job.commitOptions !== undefined || job.confirmOf !== undefined;
    if (job.kind === 'config' && job.dryRun !== true && !ownCommit) {
      // Refuse before touching the device: nothing half-applied.
      if (job.commit && driver.commit === null) {
        throw new SvcError(
          ErrorCode.COMMAND_ERROR,
          `commit is not supported on platform ${platform}`,
        );
      }
      if (driver.commitRequired === true && !job.commit && !job.saveConfig) {
        throw new SvcError(
          ErrorCode.COMMAND_ERROR,
          `platform ${platform} applies configuration changes only on commit (without one they are discarded or left uncommitted in the candidate): send-config needs commit: true`,
        );
      }
      if (job.saveConfig && driver.save === 'none') {
        throw new SvcError(
          ErrorCode.COMMAND_ERROR,
          `save_config is not supported on platform ${platform}`,
        );
      }
    }
    let expect: UserPattern | null = null;
    if (job.expectString !== null && job.kind !== 'config') {
      try {
        expect = UserPattern.compile(job.expectString);
      } catch (err) {
        // The gateway refuses such a pattern; a job queued before that rule still fails cleanly.
        const why = err instanceof PatternError ? `: ${err.message}` : '';
        throw new SvcError(ErrorCode.COMMAND_ERROR, `expect_string cannot be used${why}`);
      }
    }
    const answers = answersOf(job);
    const errorPatterns = jobErrorPatterns(job);
    const poolable =
      pool !== null &&
      job.kind !== 'structured' &&
      job.platform !== AUTODETECT &&
      !exclude.has(job.host.toLowerCase()) &&
      !exclude.has(job.address) &&
      !exclude.has(platform);
    const parts: PoolKeyParts = {
      host: job.address,
      port: job.port,
      username: job.username,
      password: job.password,
      enable: job.enable,
      route: transportRouteOf(job),
      otherSecrets: transportSecretsOf(job),
    };
    let cli: CliSession | null = null;
    if (poolable) {
      const checkMs = Math.min(staleCheckMs, job.readTimeoutMs);
      cli = await pool.acquire(parts, platform, (s) => s.isAlive(checkMs));
    }
    const pooled = cli !== null;
    if (pooled) job.onReached?.();
    // One session per device: any warm session of this device (another user's, or one this
    // job may not reuse) is closed before a new one opens.
    else await pool?.closeDevice(deviceOf(job));
    cli ??= await CliSession.open(
      withLoginCredentials(driver, job.username, job.password),
      sessionOptionsOf(job),
      job.signal,
    );
    const unbind = cli.bindSignal(job.signal);
    if (job.recorder) cli.record(job.recorder);
    let ok = false;
    try {
      await cli.prepare(job.username, job.enable ?? job.password, job.readTimeoutMs);
      const checks = job.kind === 'config' ? (job.checks ?? []) : [];
      const pre = checks.length > 0 ? await runChecks(cli, checks, job.readTimeoutMs, 'pre') : null;
      if (job.kind === 'config' && job.dryRun === true) {
        const outcome = await dryRun(cli, job, { answers, errorPatterns });
        ok = true;
        const workflow = {
          ...outcome.workflow,
          ...(pre !== null ? { checks: checkResults(checks, pre, null) } : {}),
        };
        return {
          results: outcome.results,
          workflow,
          detectedPlatform,
          pooled,
          commandStatus: null,
        };
      }
      if (
        job.kind === 'config' &&
        (job.confirmOf !== undefined || job.commitOptions !== undefined)
      ) {
        const committed = await commitOptionsJob(cli, job, { answers, errorPatterns }, floorMs);
        // A rejected step failed the job with every output (the candidate already discarded).
        const failure = jobFailure(committed, true, detectedPlatform);
        if (failure !== null) throw failure;
        const post = pre !== null ? await runChecks(cli, checks, job.readTimeoutMs, 'post') : null;
        ok = true;
        return {
          results: committed.results,
          detectedPlatform,
          pooled,
          commandStatus: committed.status.length > 0 ? committed.status : null,
          workflow: {
            ...(committed.confirmBy !== null ? { confirm_by: committed.confirmBy } : {}),
            ...(pre !== null ? { checks: checkResults(checks, pre, post) } : {}),
          },
        };
      }
      const outcome =
        job.kind === 'config'
          ? await cli.configure(job.commands, {
              timeoutMs: job.readTimeoutMs,
              commitTimeoutMs: stepTimeoutMs(job.readTimeoutMs, floorMs),
              saveTimeoutMs: stepTimeoutMs(job.readTimeoutMs, floorMs),
              commit: job.commit,
              save: job.saveConfig,
              answers,
              errorPatterns,
            })
          : await cli.show(job.commands, {
              timeoutMs: job.readTimeoutMs,
              timeoutFor: (cmd) => showTimeoutMs(cmd, job.readTimeoutMs),
              expect,
              stopOnError: job.stopOnError ?? false,
              answers,
            });
      // A failed job's session is not pooled again (the device may be mid-way in some state).
      const failure = jobFailure(outcome, job.kind === 'config', detectedPlatform);
      if (failure !== null) throw failure;
      const post = pre !== null ? await runChecks(cli, checks, job.readTimeoutMs, 'post') : null;
      ok = true;
      return {
        results: outcome.results,
        detectedPlatform,
        pooled,
        commandStatus: outcome.status,
        ...(pre !== null ? { workflow: { checks: checkResults(checks, pre, post) } } : {}),
      };
    } finally {
      unbind();
      // A pooled session serves other jobs next: it stops reporting to this one.
      cli.record(null);
      // Back to the pool only at the prompt it was handed out at (brought back if need be).
      if (
        ok &&
        poolable &&
        !job.signal.aborted &&
        (await cli.returnHome(Math.min(staleCheckMs, job.readTimeoutMs)))
      ) {
        // Kept under the device's key too (known by now if it has one): another address of
        // the device closes it before opening its own.
        const device = job.claim?.held ?? undefined;
        pool.release({ ...parts, ...(device !== undefined ? { device } : {}) }, platform, cli);
      } else if (ok) {
        void cli.close().catch(() => undefined);
      } else {
        // A session that failed is never reused; no goodbye needed.
        cli.destroy();
      }
    }
  }

  return async (job: DeviceJob): Promise<DeviceOutcome> => {
    try {
      return await run(job);
    } catch (err) {
      // A failure that carries outputs keeps them (its code is the first failure's, an abort's
      // included); anything else after an abort is the abort.
      const failure =
        err instanceof DeviceJobFailure
          ? err
          : job.signal.aborted
            ? abortError(job.signal)
            : SvcError.from(err);
      const secrets = [job.password, job.enable, ...transportSecretsOf(job)];
      const parts = shownWholeOf(job);
      if (failure instanceof DeviceJobFailure) {
        throw failure.with(redactValues(failure.message, secrets, keptOf(parts)), failure.results);
      }
      throw redactError(failure, secrets, parts);
    }
  };
}

/**
 * A config job's dry run: the device's diff where the platform has a candidate configuration,
 * else nothing at all in configuration mode (`diff: null`). Never commits or saves.
 */
async function dryRun(
  cli: CliSession,
  job: DeviceJob,
  extra: { answers: AnswersFor | undefined; errorPatterns: UserPattern[] },
): Promise<Pick<DeviceOutcome, 'results' | 'workflow'>> {
  const plan = candidateDryRunOf(cli.driver.platform);
  if (plan === null) return { results: {}, workflow: { diff: null } };
  const done = await dryRunCandidate(cli, job.commands, plan, {
    timeoutMs: job.readTimeoutMs,
    ...(extra.answers !== undefined ? { answers: extra.answers } : {}),
    errorPatterns: extra.errorPatterns,
    session: `svc-${job.jobId.replace(/[^A-Za-z0-9]/g, '').slice(0, 12)}`,
  });
  return { results: done.results, workflow: { diff: done.diff } };
}

/**
 * A push with commit options (comment, confirmed commit, commit check), or a confirm job: the
 * platform's forms (proto `COMMIT_FORMS`); the gateway refused them on other platforms.
 */
async function commitOptionsJob(
  cli: CliSession,
  job: DeviceJob,
  extra: { answers: AnswersFor | undefined; errorPatterns: UserPattern[] },
  floorMs: number,
): Promise<CommitOutcome> {
  const forms = commitFormsOf(cli.driver.platform);
  if (forms === null) {
    throw new SvcError(
      ErrorCode.COMMAND_ERROR,
      `commit options and confirmed commits are not supported on platform ${cli.driver.platform}`,
    );
  }
  if (job.confirmOf !== undefined) {
    const results = await confirmCommit(cli, forms, job.confirmOf, job.readTimeoutMs);
    return { results, status: [], failure: null, confirmBy: null };
  }
  return commitWithOptions(cli, job.commands, forms, job.commitOptions ?? {}, {
    timeoutMs: job.readTimeoutMs,
    commitTimeoutMs: stepTimeoutMs(job.readTimeoutMs, floorMs),
    jobId: job.jobId,
    ...(extra.answers !== undefined ? { answers: extra.answers } : {}),
    errorPatterns: extra.errorPatterns,
  });
}

/** A config job's own error patterns (`error_patterns`), compiled for the linear-time engine. */
function jobErrorPatterns(job: DeviceJob): UserPattern[] {
  return (job.errorPatterns ?? []).map((source, n) => {
    try {
      return UserPattern.compile(source);
    } catch (err) {
      // The gateway refuses such a pattern; a job queued before that rule still fails cleanly.
      const why = err instanceof PatternError ? `: ${err.message}` : '';
      throw new SvcError(ErrorCode.COMMAND_ERROR, `error_patterns[${n}] cannot be used${why}`);
    }
  });
}

/**
 * Least wait for a commit or a save (ms): a commit on a large device, or writing a large
 * configuration to flash, takes minutes where a show takes seconds (the trusted driver library
 * waits 120 s for a commit). The job's read_timeout still wins when it is longer.
 */
export const COMMIT_SAVE_FLOOR_MS = 120_000;
/** Least wait for a show known to run for minutes (`show tech-support`), in ms. */
export const LONG_SHOW_FLOOR_MS = 300_000;

/**
 * Shows that print for minutes: support bundles and full configurations with defaults.
 * Abbreviations count (`sh tech`, `sh run all`).
 */
export const LONG_SHOWS: readonly RegExp[] = [
  /^sh(?:o|ow)?\s+tech(?:-support)?\b/i,
  /^sh(?:o|ow)?\s+run(?:ning-config)?\s+all\b/i,
  /^dis(?:play)?\s+diagnostic-information\b/i,
  /^request\s+support\s+information\b/i,
];

/** The wait of a commit or save step: the job's read timeout, at least the floor. */
export function stepTimeoutMs(readTimeoutMs: number, floorMs = COMMIT_SAVE_FLOOR_MS): number {
  return Math.max(readTimeoutMs, floorMs);
}

/** The wait of one show command: long shows get at least their floor. */
export function showTimeoutMs(command: string, readTimeoutMs: number): number {
  const long = LONG_SHOWS.some((p) => p.test(command.trim()));
  return long ? Math.max(readTimeoutMs, LONG_SHOW_FLOOR_MS) : readTimeoutMs;
}

/**
 * The job's answers as the session's confirmations, per command index. The gateway checked
 * them; a job queued before a rule changed still fails cleanly (COMMAND_ERROR, nothing sent).
 */
export function answersOf(job: Pick<DeviceJob, 'answers'>): AnswersFor {
  const compiled = (job.answers ?? []).map((a, n) => {
    let pattern: UserPattern;
    try {
      pattern = UserPattern.compile(a.prompt);
    } catch (err) {
      const why = err instanceof PatternError ? `: ${err.message}` : '';
      throw new SvcError(ErrorCode.COMMAND_ERROR, `answers[${n}].prompt cannot be used${why}`);
    }
    const found = forbiddenCharIn(a.answer);
    if (found !== null) {
      throw new SvcError(
        ErrorCode.COMMAND_ERROR,
        `refused to send answers[${n}]: it holds ${codePointName(found.codePoint)} at position ${found.index} (no line breaks or control characters reach a device)`,
      );
    }
    const confirmation: Confirmation = {
      pattern: { test: (line: string) => pattern.find(line) !== null },
      // Typed, then Enter: "" confirms a `[confirm]` with Enter alone.
      answer: `${a.answer}\n`,
    };
    return { command: a.command, confirmation };
  });
  return (index) =>
    compiled
      .filter((a) => a.command === undefined || a.command === index)
      .map((a) => a.confirmation);
}

/**
 * The same error with the secrets removed from its text, the parts it names (`parts`: host,
 * port, user, commands) shown whole. The cause is dropped: it may hold device output or
 * library state we cannot vouch for.
 */
export function redactError(
  err: SvcError,
  secrets: readonly (string | null)[],
  parts?: ShownWhole,
): SvcError {
  return new SvcError(err.code, redactValues(err.message, secrets, keptOf(parts)));
}

/**
 * The failure a session outcome stands for, or null when every command answered without a
 * rejection. Its code is the first failure's: a rejected command (COMMAND_ERROR) comes before
 * a later read timeout, lost session or abort, whose text follows the rejections'.
 */
export function jobFailure(
  outcome: ShowOutcome,
  config: boolean,
  detectedPlatform: string | null,
): DeviceJobFailure | null {
  const { results, status, failure } = outcome;
  const endedBy = ended(status, failure);
  // A configuration job ends at its rejected line: its failure says it all.
  const rejectedShows = config ? [] : status.filter((s) => s.status === 'error' && s !== endedBy);
  if (rejectedShows.length > 0) {
    // Commands not run after a failure are not stop_on_error's doing.
    const told =
      failure === null ? status : status.filter((s) => s.status !== 'not_run' && s !== endedBy);
    const then = failure === null ? '' : `; then ${failure.message}`;
    return new CommandsRejected(
      rejectionMessage(told, told.length) + then,
      results,
      status,
      detectedPlatform,
    );
  }
  if (failure === null) return null;
  return failure.code === ErrorCode.COMMAND_ERROR
    ? new CommandsRejected(failure.message, results, status, detectedPlatform)
    : new DeviceJobFailure(failure.code, failure.message, results, status, detectedPlatform);
}

/** The status entry of the command the failure ended (the last one sent), if any. */
function ended(
  status: readonly CommandStatus[],
  failure: SvcError | null,
): CommandStatus | undefined {
  if (failure === null) return undefined;
  const sent = status.filter((s) => s.status !== 'not_run');
  const last = sent[sent.length - 1];
  return last !== undefined && last.status !== 'ok' && last.error === failure.message
    ? last
    : undefined;
}

/** The job's error text: each rejected command with the device's words. */
export function rejectionMessage(status: readonly CommandStatus[], total: number): string {
  const bad = status.filter((s) => s.status === 'error');
  const notRun = total - status.filter((s) => s.status !== 'not_run').length;
  const tail =
    notRun > 0 ? ` (stop_on_error: ${notRun} later command${notRun === 1 ? '' : 's'} not run)` : '';
  const first = bad[0];
  if (bad.length === 1 && first !== undefined) {
    return `command "${first.command}" rejected by the device: ${first.error ?? ''}${tail}`;
  }
  const each = bad.map((s) => `"${s.command}": ${s.error ?? ''}`).join('; ');
  const sent = status.filter((s) => s.status !== 'not_run').length;
  return `${bad.length} of ${sent} commands rejected by the device: ${each}${tail}`;
}

/** Where a job's device is for the pool: its address, and its key when the job holds one. */
function deviceOf(job: DeviceJob): { host: string; port: number; device?: string } {
  const device = job.claim?.held ?? undefined;
  return { host: job.address, port: job.port, ...(device !== undefined ? { device } : {}) };
}

/**
 * The job with a host-key check that, once the key is accepted, closes the warm sessions of the
 * device it names (kept at its other addresses): at first contact the device is known only then,
 * and its warm session elsewhere must go before this one logs in.
 */
function closingWarmAtHandshake(job: DeviceJob, pool: SessionPool | null): DeviceJob {
  const verify = job.verifyHostKey;
  if (pool === null || verify === undefined) return job;
  return {
    ...job,
    verifyHostKey: async (key) => {
      const refusal = await verify(key);
      const device = job.claim?.held;
      if (refusal === null && device != null) await pool.closeDevice({ device });
      return refusal;
    },
  };
}
