/**
 * What a platform driver is at run time: a compiled driver description (`compile.ts` turns the
 * data of `@svc/proto`'s DriverDescription into these patterns and functions). The session logic
 * that uses it lives in device-actor's `device/drivers/cli-session.ts`.
 */

/** A question the device asks and the answer we give (e.g. `Destination filename [...]?`). */
export interface Confirmation {
  /** Tested against the last, unterminated line of output (a RegExp, or a job's RE2 pattern). */
  readonly pattern: { test(line: string): boolean };
  /** Sent as typed, including the newline when one is needed. */
  readonly answer: string;
  /** The answer is a password: asked again on a later line means it was refused. */
  readonly refusedIfAskedAgain?: boolean;
}

export interface EnableMode {
  /** The command that asks for privileges (`enable`). */
  readonly command: string;
  /** Other forms, tried in order when the device refuses the one before (IPOS `enable`). */
  readonly alternatives?: readonly string[];
  /** Whether a prompt line is already privileged. */
  isEnabled(prompt: string): boolean;
  readonly passwordPrompt: RegExp;
  /** Some platforms (ProCurve) ask for a user name first. */
  readonly usernamePrompt?: RegExp;
}

export interface ConfigMode {
  /** Enters configuration mode (`configure terminal`); null when commands run at the prompt. */
  readonly enter: string | null;
  /** Leaves configuration mode after success (`end`). */
  readonly exit: readonly string[];
  /** Leaves configuration mode discarding what it can after a rejected line. */
  readonly abort: readonly string[];
  /** Whether a prompt line is in configuration mode (any depth). */
  isConfig(prompt: string): boolean;
  /** Questions asked on the way out (XR/Junos "uncommitted changes"). */
  readonly exitConfirmations: readonly Confirmation[];
  /**
   * The line after which the device reads free text without prompts (IOS banners); group 1
   * ends the text. Null when the platform has none.
   */
  readonly textEntry?: RegExp | null;
}

export interface CommitStep {
  readonly command: string;
  readonly confirmations: readonly Confirmation[];
}

export interface SaveStep {
  readonly command: string;
  readonly confirmations: readonly Confirmation[];
  /** Runs in configuration mode, after the commit, before leaving it (VyOS `save`). */
  readonly inConfig?: boolean;
}

export interface Driver {
  /** A built-in platform id or one from a user driver file. */
  readonly platform: string;
  /** Tested on the last line at login, before the exact prompt is known. */
  readonly loginPrompt: RegExp;
  /** Questions between authentication and the first prompt (ProCurve "Press any key"). */
  readonly loginConfirmations: readonly Confirmation[];
  /** The part of a prompt line that stays the same in every mode (`R1` of `R1(config)#`). */
  basePrompt(promptLine: string): string;
  /** A regex for any prompt of this device, built from the escaped base prompt. */
  promptPattern(escapedBase: string): RegExp;
  readonly enable: EnableMode | null;
  /** Sent once per session after enable: terminal length/width, pager off. */
  readonly pagingOff: readonly string[];
  /** Configuration mode; null when the platform has none (config lines run at the prompt). */
  readonly config: ConfigMode;
  /** Null when the platform has no commit: a job asking for one fails with COMMAND_ERROR. */
  readonly commit: CommitStep | null;
  /**
   * True when a change takes effect only on commit: leaving configuration mode without one
   * discards it (IOS-XR, VRP V8) or leaves it in a candidate that outlives the session (Junos,
   * PAN-OS). A config job without `commit` (or `save_config`) is refused before touching the
   * device.
   */
  readonly commitRequired?: boolean;
  /**
   * How configuration is persisted: a save command, `commit` when the commit itself persists
   * (XR, Junos, PAN-OS), `auto` when the device writes on its own (FortiOS), or `none`.
   */
  readonly save: SaveStep | 'commit' | 'auto' | 'none';
  /** Lines that mean the device rejected a command; the matching line becomes the error. */
  readonly errorPatterns: readonly RegExp[];
  /** Removes per-command noise in config mode (Junos `[edit]` banners). */
  cleanConfigOutput(output: string): string;
  /**
   * Lines the device prints just above its prompt that are not output (Junos `{master:0}`,
   * `[edit interfaces]`): removed from the end of every output, like the trusted driver does.
   */
  readonly contextLines?: readonly RegExp[];
  /** Paging prompts of this platform besides the common ones the reader knows. */
  readonly pagers?: readonly Confirmation[];
}

/**
 * Removes trailing context lines from an output. Only the end is checked: the same text inside
 * the output is output. The blank line the device prints above them stays (the output's last
 * newline), as the trusted driver library keeps it: outputs are byte-identical to its.
 */
export function stripContextLines(output: string, patterns: readonly RegExp[]): string {
  if (patterns.length === 0) return output;
  const lines = output.split('\n');
  let end = lines.length;
  while (end > 0 && patterns.some((p) => p.test((lines[end - 1] ?? '').trim()))) end--;
  if (end === lines.length) return output;
  return lines.slice(0, end).join('\n');
}

/** Prompt helpers shared by the Cisco-like CLIs (`R1>`, `R1#`, `R1(config-if)#`). */
export const ciscoLike = {
  loginPrompt: /[>#]\s*$/,
  // Arrow functions: drivers copy these members, so they must not depend on `this`.
  basePrompt: (line: string): string =>
    line
      .trim()
      .replace(/[>#]$/, '')
      .replace(/\([^)]*\)$/, ''),
  promptPattern: (b: string): RegExp => new RegExp(`^${b}(?:\\([^)\\n]*\\))?[>#]\\s*$`),
  isEnabled: (prompt: string): boolean => /#\s*$/.test(prompt),
  isConfig: (prompt: string): boolean => /\(config[^)]*\)#\s*$/.test(prompt),
} as const;

export function keepOutput(output: string): string {
  return output;
}

/** Escapes text for use inside a RegExp. */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
