import { ErrorCode, SvcError, type CandidateDryRun, type UserPattern } from '@svc/proto';
import type { AnswersFor, CliSession } from './cli-session.js';
import { discardCandidate, enterConfig } from './commit-options.js';

/** What a dry run gives back: each line's output, and the device's diff (null: no candidate). */
export interface DryRunOutcome {
  results: Record<string, string>;
  diff: string | null;
}

export interface DryRunOptions {
  timeoutMs: number;
  answers?: AnswersFor;
  errorPatterns?: readonly UserPattern[];
  /** Names the EOS configuration session (unique per job). */
  session: string;
}

/**
 * A dry run of configuration lines on a platform with a candidate configuration: enter it (EOS:
 * a configuration session of its own), type the lines, read the device's diff, discard the
 * candidate and leave configuration mode. Nothing is committed or saved; a rejected line still
 * discards. The device's running configuration is never changed.
 */
export async function dryRunCandidate(
  cli: CliSession,
  lines: readonly string[],
  plan: CandidateDryRun,
  options: DryRunOptions,
): Promise<DryRunOutcome> {
  const { timeoutMs } = options;
  await enterConfig(cli, plan.enter ?? null, options.session, timeoutMs);
  const results: Record<string, string> = {};
  try {
    for (const [index, line] of lines.entries()) {
      const out = cli.driver.cleanConfigOutput(
        await cli.command(line, {
          timeoutMs,
          follow: 'config',
          confirmations: options.answers?.(index) ?? [],
        }),
      );
      results[line] = out;
      const error = cli.findError(out, undefined, options.errorPatterns);
      if (error !== undefined) {
        throw new SvcError(
          ErrorCode.COMMAND_ERROR,
          `command "${line}" rejected by the device: ${error}`,
        );
      }
    }
    const diff = await cli.command(plan.diff, { timeoutMs, follow: 'config' });
    return { results, diff: diffText(diff) };
  } finally {
    if (!cli.isClosed) await discardCandidate(cli, timeoutMs);
  }
}

/** The diff as the device printed it, without surrounding blank lines. */
function diffText(output: string): string {
  return output.replace(/^\s*\n/, '').trimEnd();
}
