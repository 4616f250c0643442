import { readFileSync } from 'node:fs';

/**
 * The shape of `platforms/<platform>.json`: everything the simulator knows about a platform's
 * CLI. Text may use `{hostname}`, `{username}`, and in regex catalog entries `$1`..`$9`.
 * Multi-line text may be given as an array of lines.
 */
export type Text = string | readonly string[];

export interface CatalogEntry {
  /** Exact command text (case-sensitive, surrounding spaces ignored). */
  command?: string;
  /** Or a regex source matched against the whole command. */
  regex?: string;
  output: Text;
  /** Only answered in privileged (enable) mode. */
  privileged?: boolean;
  /**
   * A large output: `output` is one line, repeated (`{line}` numbers it from 1) until the text
   * holds at least this many characters; a number or `$1`..`$9` of the regex.
   */
  repeatTo?: string;
  /** Questions asked before the output (IOS `clear counters` `[confirm]`). */
  confirm?: readonly Confirm[];
}

export interface Confirm {
  /** Printed without a newline; the device then reads one line. */
  prompt: string;
  /**
   * Regex an answer must match for the command to go on (default `^(?:[yY].*)?$`: Enter or
   * yes, as `[confirm]` takes); any other answer cancels it.
   */
  accept?: string;
  /** Printed when an answer cancelled the command. */
  cancelled?: Text;
}

export interface PlatformData {
  platform: string;
  defaultHostname: string;
  /** Prompts may hold `{counter}`: the number of commands run so far plus one (EXOS). */
  prompts: {
    user: string;
    enable: string;
    config?: string;
    /** Submode prompt; `{sub}` is the submode name. */
    sub?: string;
  };
  /** The mode a login lands in. */
  loginMode: 'user' | 'enable';
  banner?: Text;
  /** ProCurve: "Press any key to continue" after the banner. */
  pressAnyKey?: boolean;
  /** The text of that key prompt when it is another (ERS: `Enter Ctrl-Y to begin.`). */
  pressAnyKeyPrompt?: string;
  /**
   * A login inside the shell after SSH authentication (Cisco Sx300, PowerConnect): the user
   * name and password are asked again; a wrong pair prints `failure` and asks again.
   */
  inbandLogin?: { usernamePrompt: string; passwordPrompt: string; failure: Text };
  /**
   * A question asked before the output of each catalog command (SmartAX `{ <cr>||<K> }:`),
   * answered with a line; `off` commands stop it for the session (`undo smart`).
   */
  commandQuestion?: { prompt: string; off: readonly string[] };
  /** Decorate prompts with ANSI cursor sequences (ProCurve does). */
  ansi?: boolean;
  paging: null | {
    prompt: string;
    /** Written after the key that moves past the prompt. */
    erase: string;
    lines: number;
    off: readonly string[];
    offOutput?: Text;
  };
  /** Commands accepted anywhere with no output (terminal width, ...). */
  silent?: readonly string[];
  enable: null | {
    command: string;
    usernamePrompt?: string;
    /** Empty: the platform enters privileged mode without asking (SmartAX). */
    passwordPrompt: string;
    failure: Text;
  };
  config: null | {
    style: 'mode' | 'blocks';
    /** `mode` style: the command entering configuration mode. */
    enter?: string;
    enterOutput?: Text;
    /** Leave configuration mode entirely. */
    exit: readonly string[];
    /** Up one level (leaves configuration mode at the top). */
    up?: readonly string[];
    /** Leave discarding the changes (XR `abort`, FortiOS `abort`). */
    abort?: readonly string[];
    /** Discard the changes and stay (Junos `rollback 0`, PAN-OS `revert config`). */
    rollback?: readonly string[];
    rollbackOutput?: Text;
    /** Submodes (`mode` style) or blocks (`blocks` style); group 1 names the prompt. */
    submodes?: readonly { regex: string; kind?: 'config' | 'edit' }[];
    /** Printed on its own line before each configuration prompt (Junos `[edit]`). */
    promptPrefix?: string;
    /** Asked on exit with uncommitted changes; yes commits, no discards, else stays. */
    uncommittedPrompt?: string;
    /**
     * `shared`: the candidate configuration outlives the session (Junos, PAN-OS): changes not
     * committed stay in it after leaving configuration mode, and "yes" to `uncommittedPrompt`
     * leaves them there instead of committing (Junos "Exit with uncommitted changes?").
     */
    candidate?: 'shared';
    /** Prefix that runs an exec command from configuration mode (`do`). */
    execPrefix?: string;
    /**
     * A configuration line that renames the device at once (regex, group 1 the new name):
     * every prompt from the next one on shows it (IOS `hostname`, VRP `sysname`).
     */
    hostnameCommand?: string;
    /**
     * Configuration-mode prompts shorten a long name: `hostname` cuts the host name to this many
     * characters (IOS: 20), `base` cuts everything before the mode suffix (IOS-XR: 31 of
     * `RP/0/RP0/CPU0:name`). Exec prompts show the whole name.
     */
    promptTruncate?: { hostname?: number; base?: number };
    /**
     * A line that starts free-text entry (IOS `banner motd #`; group 1 the delimiter): the
     * device prints `prompt` (`$1` filled) and reads lines, with no prompt, up to the one that
     * holds the delimiter.
     */
    textEntry?: { regex: string; prompt: string };
    /** Configuration lines that ask before they apply (IOS `crypto key generate rsa`). */
    questions?: readonly (Confirm & { regex: string; output?: Text })[];
    /**
     * The candidate configuration's changes against the running one (dry runs): `command` prints
     * `header`, one `added` line per configuration line typed since the last commit or discard
     * (`{line}` filled), then `footer`.
     */
    candidateDiff?: { command: string; header?: Text; added: string; footer?: Text };
    /**
     * Configuration sessions (EOS `configure session NAME`, group 1 the name): configuration
     * mode on a candidate of its own, `prompt` shown at its top (`{sub}` the name); `abort`
     * discards it, a hostname line is not applied until commit.
     */
    session?: { enter: string; prompt: string };
    /** Configuration lines that apply but print a warning the platform's errors do not match. */
    warnings?: readonly { regex: string; output: Text }[];
  };
  commit: null | { command: string; output: Text };
  /**
   * Commit options and confirmed commits: `commit` (regex, whole command) matches every commit
   * form, named group `timer` the rollback window in `unit`. A confirmed commit applies the
   * changes and rolls them back by itself when the window ends unless a later commit (or
   * `check`) confirms it. `pending` answers `command` at the exec prompt with `waiting` (one
   * line per pending commit, `{session}` filled) or `idle`. `nothing` is a commit's output when
   * there is nothing to commit or confirm (XR). `leaves`: a commit leaves configuration mode
   * (EOS sessions).
   */
  confirmedCommit?: {
    commit: string;
    unit: 'minutes' | 'seconds' | 'hms';
    output: Text;
    confirmedOutput: Text;
    check?: string;
    checkOutput?: Text;
    pending?: { command: string; waiting: Text; idle: Text };
    nothing?: Text;
    leaves?: boolean;
  };
  /**
   * A commit the device refuses: while the candidate holds a line matching `line` (regex),
   * every commit form (`commit`, the `confirmedCommit` forms and its `check`) prints `output`
   * and changes nothing; the candidate keeps its lines.
   */
  commitRefused?: { line: string; output: Text };
  save: null | {
    commands: readonly string[];
    confirms?: readonly Confirm[];
    output: Text;
    /** Saved from configuration mode (VyOS), not from exec. */
    inConfig?: boolean;
  };
  errors: {
    /** Unknown command. `{caret}` is a line with '^' under the command, `{cmd0}` its first word. */
    unknown: Text;
    /** A rejected configuration line; defaults to `unknown`. */
    configRejected?: Text;
  };
  /** Configuration lines matching this regex are rejected. Default `^bogus\b`. */
  configReject?: string;
  commands: readonly CatalogEntry[];
}

/** The text of a `repeatTo` entry: whole numbered lines, at least `chars` characters. */
export function repeatedOutput(line: string, chars: number): string {
  const lines: string[] = [];
  let size = -1;
  for (let n = 1; size < chars; n++) {
    const next = line.replaceAll('{line}', String(n));
    lines.push(next);
    size += next.length + 1;
  }
  return lines.join('\n');
}

export function textOf(t: Text | undefined): string {
  if (t === undefined) return '';
  return typeof t === 'string' ? t : t.join('\n');
}

const cache = new Map<string, PlatformData>();

/** The folder of the platform JSON files (source tree: tsc does not copy JSON). */
export const PLATFORMS_DIR = new URL('../../support/platforms/', import.meta.url);

export function loadPlatform(platform: string): PlatformData {
  const hit = cache.get(platform);
  if (hit !== undefined) return hit;
  if (!/^[a-z0-9_]+$/.test(platform)) throw new Error(`bad platform name ${platform}`);
  let raw: string;
  try {
    raw = readFileSync(new URL(`${platform}.json`, PLATFORMS_DIR), 'utf8');
  } catch {
    throw new Error(`no simulator data for platform ${platform}`);
  }
  const data = JSON.parse(raw) as PlatformData;
  cache.set(platform, data);
  return data;
}
