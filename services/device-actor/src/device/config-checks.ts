import { createTwoFilesPatch } from 'diff';
import { ErrorCode, SvcError, type PrePostCheck } from '@svc/proto';
import type { CliSession } from './drivers/cli-session.js';

/**
 * Pre/post checks of a config job (`checks`): show commands run before the change and after it,
 * in the same session, each output compared as a unified diff (docs/config-workflows.md).
 */

/** Runs the checks; a check the device rejects before the change fails the job untouched. */
export async function runChecks(
  cli: CliSession,
  checks: readonly string[],
  timeoutMs: number,
  when: 'pre' | 'post',
): Promise<Record<string, string>> {
  const shown = await cli.show(checks, { timeoutMs, expect: null, stopOnError: true });
  // A check that timed out or lost the session ends the job as any command would.
  if (shown.failure !== null) throw shown.failure;
  const rejected = shown.status.find((s) => s.status === 'error');
  if (rejected !== undefined && when === 'pre') {
    throw new SvcError(
      ErrorCode.COMMAND_ERROR,
      `check "${rejected.command}" rejected by the device before the change (nothing was changed): ${rejected.error ?? ''}`,
    );
  }
  return shown.results;
}

/** The `checks` of the job record: pre (and post, with the diff) per command. */
export function checkResults(
  checks: readonly string[],
  pre: Record<string, string>,
  post: Record<string, string> | null,
): Record<string, PrePostCheck> {
  const out: Record<string, PrePostCheck> = {};
  for (const cmd of checks) {
    const before = pre[cmd] ?? '';
    if (post === null) {
      out[cmd] = { pre: before };
      continue;
    }
    const after = post[cmd] ?? '';
    out[cmd] = { pre: before, post: after, diff: unifiedDiff(cmd, before, after) };
  }
  return out;
}

/** "" when equal, else a unified diff of the two outputs (three lines of context). */
export function unifiedDiff(cmd: string, before: string, after: string): string {
  if (before === after) return '';
  return createTwoFilesPatch(
    `${cmd} (pre)`,
    `${cmd} (post)`,
    withNewline(before),
    withNewline(after),
    '',
    '',
    {
      context: 3,
    },
  )
    .replace(/^={60,}\n/, '')
    .trimEnd();
}

function withNewline(text: string): string {
  return text.endsWith('\n') || text === '' ? text : `${text}\n`;
}
