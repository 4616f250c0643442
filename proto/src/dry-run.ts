import type { BuiltinDriverFacts } from './driver-description.js';
import { isPlatform } from './platforms.js';

/**
 * How a dry run loads configuration lines into a platform's candidate configuration, reads the
 * device's own diff and discards the candidate (docs/config-workflows.md). Platforms without an
 * entry have no candidate to load into: their dry run never enters configuration mode.
 */
export interface CandidateDryRun {
  /**
   * What enters configuration mode, `{session}` standing for a session name unique to the job
   * (EOS configuration sessions); null: the driver's own `config.enter`.
   */
  enter: string | null;
  /** Prints the candidate's changes against the running configuration. */
  diff: string;
  /** Discards the candidate (the driver's exit commands follow while still in configuration mode). */
  discard: readonly string[];
}

export const CANDIDATE_DRY_RUNS: Readonly<Record<string, CandidateDryRun>> = {
  juniper_junos: { enter: null, diff: 'show | compare', discard: ['rollback 0'] },
  cisco_xr: { enter: null, diff: 'show commit changes diff', discard: ['abort'] },
  arista_eos: {
    enter: 'configure session {session}',
    diff: 'show session-config diffs',
    discard: ['abort'],
  },
};

/** The candidate dry run of a platform, or null when it has none. */
export function candidateDryRunOf(platform: string): CandidateDryRun | null {
  return CANDIDATE_DRY_RUNS[platform] ?? null;
}

/**
 * Why a dry run cannot be done on a built-in platform, or null. A platform that applies changes
 * only on commit and has no candidate support here cannot show a change without making one.
 */
export function dryRunProblem(platform: string, drivers: BuiltinDriverFacts): string | null {
  if (candidateDryRunOf(platform) !== null || !isPlatform(platform)) return null;
  const commit = drivers[platform].commit;
  if (commit !== null && commit.required === true) {
    return `platform ${platform} applies changes only on commit and has no candidate configuration svc can load and discard; dry runs work on ${Object.keys(CANDIDATE_DRY_RUNS).join(', ')} (with the device's diff) and on platforms without commit (rendered lines only)`;
  }
  return null;
}
