import { Type, type Static } from 'typebox';
import type { ValidationIssue } from './messages/http.js';
import type { BuiltinDriverFacts } from './driver-description.js';
import { isPlatform } from './platforms.js';

/**
 * Commit options of a send-config (`"commit": {"comment", "confirmed_minutes", "check"}`) and
 * confirmed commits: the platform forms, and how a later job confirms one
 * (docs/config-workflows.md). One table per platform; a platform without an entry has no forms.
 */

export const MIN_CONFIRMED_MINUTES = 1;
export const MAX_CONFIRMED_MINUTES = 60;

export const CommitOptions = Type.Object(
  {
    comment: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        // No quotes, backslashes or control characters: the comment is typed inside quotes.
        pattern: '^[^"\\\\\\x00-\\x1f\\x7f]+$',
        description:
          'Commit comment (Junos `comment "…"`, IOS-XR `comment …`). No quotes or backslashes.',
      }),
    ),
    confirmed_minutes: Type.Optional(
      Type.Integer({
        minimum: MIN_CONFIRMED_MINUTES,
        maximum: MAX_CONFIRMED_MINUTES,
        description:
          'Confirmed commit: the device rolls the change back by itself after this many minutes (1–60) unless POST /v2/jobs/{job_id}/confirm confirms it. The result has confirm_by.',
      }),
    ),
    check: Type.Optional(
      Type.Boolean({
        description:
          'Junos: validate with `commit check` before committing (a failed check fails the job, nothing committed).',
      }),
    ),
  },
  { $id: 'CommitOptions', additionalProperties: false },
);
export type CommitOptions = Static<typeof CommitOptions>;

/** A confirm job's link to the confirmed commit it confirms. */
export const ConfirmOf = Type.Object(
  {
    job_id: Type.String(),
    /** EOS: the configuration session holding the pending commit. */
    session: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type ConfirmOf = Static<typeof ConfirmOf>;

export interface CommitForms {
  comment: boolean;
  check: string | null;
  /**
   * What enters configuration mode for a push with commit options, `{session}` a session name
   * of the job (EOS); null: the driver's own.
   */
  enter: string | null;
  /** The commit command for the options. */
  command(options: CommitOptions): string;
  /** Confirms a pending confirmed commit: entered as `enter` (null: the driver's), then `commands`. */
  confirm: { enter: string | null; commands: readonly string[] };
  /**
   * Shown at the exec prompt before confirming: `pattern` (regex, `{session}` filled) matches
   * its output while a confirmed commit waits. Null: the confirm command's output tells.
   */
  pending: { command: string; pattern: string } | null;
  /** Matches the confirm command's output when nothing was pending (the device rolled back). */
  expired: string | null;
}

function hms(minutes: number): string {
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:00`;
}

export const COMMIT_FORMS: Readonly<Record<string, CommitForms>> = {
  juniper_junos: {
    comment: true,
    check: 'commit check',
    enter: null,
    command: (o) =>
      [
        'commit',
        ...(o.confirmed_minutes !== undefined ? [`confirmed ${o.confirmed_minutes}`] : []),
        ...(o.comment !== undefined ? [`comment "${o.comment}"`] : []),
      ].join(' '),
    confirm: { enter: null, commands: ['commit'] },
    // `show system commit`: "0  … by svc via cli commit confirmed, rollback in 4mins".
    pending: { command: 'show system commit', pattern: '(?i)commit confirmed, rollback in' },
    expired: null,
  },
  cisco_xr: {
    comment: true,
    check: null,
    enter: null,
    // XR: the trial period in seconds; everything after `comment` is the comment, so it is last.
    command: (o) =>
      [
        'commit',
        ...(o.confirmed_minutes !== undefined ? [`confirmed ${o.confirmed_minutes * 60}`] : []),
        ...(o.comment !== undefined ? [`comment ${o.comment}`] : []),
      ].join(' '),
    confirm: { enter: null, commands: ['commit'] },
    pending: null,
    expired: '(?i)No configuration changes to commit',
  },
  arista_eos: {
    comment: false,
    check: null,
    enter: 'configure session {session}',
    command: (o) =>
      o.confirmed_minutes !== undefined ? `commit timer ${hms(o.confirmed_minutes)}` : 'commit',
    confirm: { enter: 'configure session {session}', commands: ['commit'] },
    pending: {
      command: 'show configuration sessions',
      pattern: '(?m)^\\s*\\*?\\s*{session}\\s+pending-commit-timer',
    },
    expired: null,
  },
};

export function commitFormsOf(platform: string): CommitForms | null {
  return COMMIT_FORMS[platform] ?? null;
}

/** The EOS configuration session name of a job (also used by its confirm job). */
export function sessionNameOf(jobId: string): string {
  return `svc-${jobId.replace(/[^A-Za-z0-9]/g, '').slice(0, 12)}`;
}

/** Problems of a commit object on a platform (422 at `["body","commit",…]`). */
export function commitOptionIssues(
  platform: string,
  options: CommitOptions,
  drivers: BuiltinDriverFacts,
  saveConfig = false,
): ValidationIssue[] {
  const forms = commitFormsOf(platform);
  if (forms === null) {
    return [
      {
        loc: ['body', 'commit'],
        msg: `commit options (comment, confirmed_minutes, check) are supported on ${Object.keys(COMMIT_FORMS).join(', ')}, not on platform ${platform}; use "commit": true`,
        type: 'value_error',
      },
    ];
  }
  const issues: ValidationIssue[] = [];
  // Where saving is a step of its own (EOS `write memory`), a confirmed commit's rollback would
  // not undo the saved startup configuration; a commit-persisting platform needs no save.
  if (saveConfig && isPlatform(platform) && drivers[platform].save !== 'commit') {
    issues.push({
      loc: ['body', 'save_config'],
      msg: `save_config cannot be combined with commit options on platform ${platform}: save after the change is confirmed`,
      type: 'value_error',
    });
  }
  if (options.comment !== undefined && !forms.comment) {
    issues.push({
      loc: ['body', 'commit', 'comment'],
      msg: `platform ${platform} has no commit comment`,
      type: 'value_error',
    });
  }
  if (options.check === true && forms.check === null) {
    issues.push({
      loc: ['body', 'commit', 'check'],
      msg: `platform ${platform} has no commit check`,
      type: 'value_error',
    });
  }
  return issues;
}
