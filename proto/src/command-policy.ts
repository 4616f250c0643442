import { Type } from 'typebox';
import { ConfigError } from './errors.js';
import { UserPattern } from './user-pattern.js';

/**
 * Which commands `send-command` may run: `any` (default), or `read-only` — no command that
 * enters configuration, restarts, writes, erases, copies or formats storage, clears state or
 * opens a shell, per platform family, plus operator-added RE2 patterns. A context sets its mode
 * (COMMAND_POLICY); a request may ask for read-only for itself (`X-Svc-Command-Policy`, what the
 * MCP adapter sends), never for less than its context's.
 */

/** The modes, in the order a context's setting and a request name them. */
export const COMMAND_MODES = ['any', 'read-only'] as const;
export type CommandMode = (typeof COMMAND_MODES)[number];

export const CommandPolicySettings = {
  COMMAND_POLICY: Type.Array(Type.String(), {
    default: [],
    description:
      'Commands send-command may run per context, comma-separated `[context=]any|read-only` (default any). read-only refuses configuration entry, reload/reboot, write/erase/delete/copy/format, clear, request system …, shells and output redirection (422 naming the command).',
  }),
  COMMAND_DENY_PATTERNS: Type.Array(Type.String(), {
    default: [],
    // A pattern may need a comma (`x{2,}`, `a,b`): the JSON array form holds any.
    jsonArray: true,
    description:
      'More commands refused wherever read-only is in force: RE2 patterns, comma-separated, or a JSON array of strings when a pattern holds a comma (`["^ping .* repeat [0-9]{4,}", "^show tech"]`); matched anywhere in the command (anchor with ^).',
  }),
};

/** A verb and the shortest abbreviation a CLI accepts for it (`conf` for `configure`). */
type Verb = readonly [word: string, shortest: number];

/** IOS, IOS-XE, NX-OS, IOS-XR, EOS and most CLIs modelled on them. */
const IOS_VERBS: readonly Verb[] = [
  ['configure', 4],
  ['reload', 3],
  ['write', 2],
  ['erase', 3],
  ['delete', 3],
  ['copy', 3],
  ['format', 4],
  ['clear', 3],
  ['squeeze', 3],
  ['fsck', 4],
  ['mkdir', 3],
  ['rmdir', 3],
  ['rename', 4],
  ['install', 4],
  ['request', 3],
  ['archive', 4],
  ['license', 4],
  ['hw-module', 4],
  ['crypto', 4],
  ['debug', 3],
  ['undebug', 4],
  ['no', 2],
  ['tclsh', 3],
  ['bash', 4],
  ['run', 3],
  ['guestshell', 5],
  ['setup', 4],
  ['upgrade', 4],
  ['boot', 4],
];

/** Junos operational mode. */
const JUNOS_VERBS: readonly Verb[] = [
  ['configure', 4],
  ['edit', 4],
  ['request', 3],
  ['restart', 4],
  ['clear', 3],
  ['load', 4],
  ['commit', 4],
  ['rollback', 4],
  ['start', 4],
];

/** Huawei VRP and Comware user view. */
const VRP_VERBS: readonly Verb[] = [
  ['system-view', 3],
  ['reboot', 4],
  ['save', 4],
  ['reset', 4],
  ['delete', 3],
  ['copy', 3],
  ['format', 4],
  ['undo', 3],
  ['startup', 4],
  ['move', 4],
  ['rename', 4],
  ['mkdir', 3],
  ['rmdir', 3],
  ['upgrade', 4],
  ['install', 4],
];

/** Multi-word forms whose first word alone is harmless (`set cli …`, `file list`). */
const PHRASES: readonly RegExp[] = [
  /^set\s+(?!cli\b)/i, // Junos `set date`, `set chassis …` in operational mode
  /^file\s+(?:delete|copy|rename|archive|link)\b/i,
  /^monitor\s+capture\b/i,
];

/** Output sent to a file instead of the caller (`| redirect`, `| tee`, `| append`, `| save`). */
const REDIRECT = /\|\s*(?:redirect|tee|append|save|copy)\b|>\s*\S/i;

function verbsOf(platform: string): readonly Verb[] {
  const p = platform.toLowerCase();
  if (p.startsWith('juniper_')) return JUNOS_VERBS;
  if (p.startsWith('huawei') || p === 'hp_comware') return VRP_VERBS;
  if (p.startsWith('cisco_') || p.startsWith('arista_')) return IOS_VERBS;
  return [...IOS_VERBS, ...JUNOS_VERBS, ...VRP_VERBS];
}

export interface CommandPolicy {
  /** The mode of `context`, made read-only when `asked` is. */
  modeFor(context: string, asked: CommandMode | null): CommandMode;
  /** Why `command` is refused under read-only on `platform`, or null when it may run. */
  readOnlyRefusal(command: string, platform: string): string | null;
}

/** The policy from the settings; throws ConfigError listing every bad entry. */
export function commandPolicy(config: {
  COMMAND_POLICY: readonly string[];
  COMMAND_DENY_PATTERNS: readonly string[];
}): CommandPolicy {
  const problems: string[] = [];
  const modes = new Map<string | null, CommandMode>();
  for (const raw of config.COMMAND_POLICY) {
    const m = /^(?:([A-Za-z0-9_-]+)=)?(any|read-only)$/.exec(raw.trim());
    if (m === null)
      problems.push(`COMMAND_POLICY: ${JSON.stringify(raw)} is not [context=]any|read-only`);
    else modes.set(m[1] ?? null, m[2] as CommandMode);
  }
  const patterns: UserPattern[] = [];
  for (const raw of config.COMMAND_DENY_PATTERNS) {
    const problem = UserPattern.problem(raw);
    if (problem !== null)
      problems.push(`COMMAND_DENY_PATTERNS: ${JSON.stringify(raw)}: ${problem}`);
    else patterns.push(UserPattern.compile(raw));
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    modeFor(context, asked) {
      const own = modes.get(context) ?? modes.get(null) ?? 'any';
      return asked === 'read-only' ? 'read-only' : own;
    },
    readOnlyRefusal(command, platform) {
      const text = command.trim();
      const first = (text.split(/\s+/)[0] ?? '').toLowerCase();
      const verb = verbsOf(platform).find(
        ([word, shortest]) => first.length >= shortest && word.startsWith(first),
      );
      if (verb !== undefined) return `"${verb[0]}" changes or restarts the device`;
      if (PHRASES.some((p) => p.test(text))) return 'it changes the device';
      if (REDIRECT.test(text)) return 'it writes output to a file on the device';
      const operator = patterns.find((p) => p.find(text) !== null);
      if (operator !== undefined) return `it matches COMMAND_DENY_PATTERNS (${operator.source})`;
      return null;
    },
  };
}

/** A word's letters in either case, for a JSON Schema pattern (which has no flags). */
const caseless = (word: string): string =>
  [...word]
    .map((c) =>
      c.toLowerCase() === c.toUpperCase() ? c : `[${c.toUpperCase()}${c.toLowerCase()}]`,
    )
    .join('');

/**
 * `X-Svc-Command-Policy`: a mode in any case, blanks around it allowed; empty asks for nothing.
 * The gateway judges the header with this schema (and documents it by it); `askedCommandMode`
 * reads a value it accepted.
 */
export const AskedCommandModeHeader = Type.String({
  pattern: `^\\s*(?:${COMMAND_MODES.map(caseless).join('|')})?\\s*$`,
  description:
    "Ask for `read-only` for this request alone (never for less than its context's mode); `any` or empty asks for nothing more. Any case.",
  examples: ['read-only'],
});

/** `X-Svc-Command-Policy` as `AskedCommandModeHeader` accepted it: null when absent or empty. */
export function askedCommandMode(value: string | undefined): CommandMode | null {
  const v = value?.trim().toLowerCase() ?? '';
  return v === '' ? null : (v as CommandMode);
}
