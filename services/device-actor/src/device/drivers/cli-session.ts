import {
  SvcError,
  ErrorCode,
  codePointName,
  forbiddenCharIn,
  type CommandStatus,
  type UserPattern,
} from '@svc/proto';
import { matchPager } from '../ssh/pager.js';
import { SshSession, type SshSessionOptions, type WaitTest } from '../ssh/ssh-session.js';
import { OutputScanner, type TerminalText } from '../ssh/terminal-text.js';
import {
  escapeRegExp,
  stripContextLines,
  type Confirmation,
  type Driver,
  type EnableMode,
  type SaveStep,
} from '@svc/drivers';
import type { SessionTap } from '../transcript.js';

/**
 * A device CLI session: an {@link SshSession} driven by a platform {@link Driver}. It knows the
 * device's prompt, enters enable and configuration mode, and turns each command into the text a
 * person would see (no echo, no prompt, no paging artefacts).
 */

export interface CommandOptions {
  /** Longest wait for the end of the output (ms). */
  timeoutMs: number;
  /** Ends the output instead of the prompt (the job's expect_string, matched in linear time). */
  expect?: UserPattern | null;
  /** Questions answered while this command runs (the driver's, or the job's answers). */
  confirmations?: readonly Confirmation[];
  /**
   * Commands that may change the prompt itself. `config`: a configuration line may rename the
   * device (`hostname`), so any configuration prompt of the platform's shape ends the output;
   * `exit`: leaving configuration mode may show a renamed device's exec prompt. The base
   * prompt is learned again from the prompt that ended the output.
   */
  follow?: 'config' | 'exit';
}

/** The job's answers to the questions of its command number `index` (0-based). */
export type AnswersFor = (index: number) => readonly Confirmation[];

export interface ConfigOptions {
  timeoutMs: number;
  /** Wait for the commit's end (ms); default `timeoutMs`. Commits take long on big devices. */
  commitTimeoutMs?: number;
  /** Wait for the save's end (ms); default `timeoutMs`. */
  saveTimeoutMs?: number;
  commit: boolean;
  save: boolean;
  /** Answers to questions the configuration lines ask (the job's `answers`). */
  answers?: AnswersFor;
  /** The job's own error patterns (`error_patterns`), added to the driver's. */
  errorPatterns?: readonly UserPattern[];
}

export interface ShowOutcome {
  /** Every command that answered (rejected ones included), in order. */
  results: Record<string, string>;
  /** One entry per command of the job (config: then the commit and save steps), in order. */
  status: CommandStatus[];
  /**
   * What ended the job before its end (a read timeout, a lost session, an abort, a rejected
   * configuration line, a failed commit or save); null when every command was sent.
   */
  failure: SvcError | null;
}

/** The status a command gets when `err` ended it while it ran. */
function statusOfFailure(command: string, err: SvcError): CommandStatus {
  const timedOut = err.code === ErrorCode.READ_TIMEOUT || err.code === ErrorCode.JOB_TIMEOUT;
  return { command, status: timedOut ? 'timeout' : 'error', error: err.message };
}

/** How many leading lines of a show command's output are checked for a device error. */
const SHOW_ERROR_LINES = 4;

/**
 * Fewest characters of a known base prompt that a shortened prompt still shows. IOS cuts the
 * host name at 20 characters in configuration prompts and IOS-XR the whole base at 31; the
 * trusted driver library keeps 16 of IOS's to be safe, and so does this.
 */
export const MIN_SHOWN_BASE = 16;

/**
 * Longest last line tested as a prompt, pager or question: longer lines are output still
 * arriving, and testing them on every chunk would make reading quadratic.
 */
const MAX_LINE_CHECKED = 4096;
/** How far into the text a command's echo (first or second line) is looked for. */
const ECHO_WINDOW = 4096;
/** How far into the text bare prompts and blank lines before an echo are looked for. */
const STALE_WINDOW = 4096;

/** Any prompt of a learned shape, whatever the device's name (see learnedPromptPattern). */
const LEARNED_SHAPE = /^(?:\* )?[<[]?[~*]*[^\n]{1,255}?[>#$%\]]\s*$/;

/** How any prompt ends, whatever the platform: a mode mark, maybe a space after it. */
const ANY_PROMPT_END = /\S\s*[>#$%\]]\s?$/;

/** The current, unterminated line, or null when it is too long to be a prompt or question. */
function lastLineOf(text: TerminalText): string | null {
  return text.length - text.finishedLength > MAX_LINE_CHECKED ? null : text.lastLine;
}

export class CliSession {
  /** The last prompt line seen, e.g. `R1#`. */
  prompt = '';
  private promptRe: RegExp = /$^/;
  /** The base prompt learned last (`R1` of `R1(config)#`); null before the first prompt. */
  private base: string | null = null;
  /** Any prompt of the platform's shape, whatever the device's name. */
  private shapeRe: RegExp;
  private prepared = false;
  /** While the device reads free text (a banner): what ends it. */
  private textEnd: string | null = null;
  /** Set once output ended on an expect_string: the prompt state is then unknown. */
  private desynced = false;
  /**
   * The privileged exec prompt the session is handed out at (set once prepared): a pooled
   * session goes back only at it.
   */
  private home: string | null = null;

  private constructor(
    readonly driver: Driver,
    private readonly ssh: SshSession,
  ) {
    this.shapeRe = driver.promptPattern('[^\\n]{1,255}?');
  }

  /** Connects, logs in and reads the prompt. The session is closed again on any failure. */
  static async open(
    driver: Driver,
    options: SshSessionOptions & { readTimeoutMs: number },
    signal: AbortSignal,
  ): Promise<CliSession> {
    const ssh = await SshSession.open(options, signal);
    const cli = new CliSession(driver, ssh);
    const unbind = ssh.bindSignal(signal);
    try {
      await cli.discoverPrompt(options.readTimeoutMs);
      return cli;
    } catch (err) {
      ssh.destroy();
      throw err;
    } finally {
      unbind();
    }
  }

  get isClosed(): boolean {
    return this.ssh.isClosed;
  }

  /** Characters the reader processed or looked at so far (linear reading is tested on it). */
  get scanned(): number {
    return this.ssh.output.scanned;
  }

  /** Chunks of output received so far. */
  get chunks(): number {
    return this.ssh.output.chunks;
  }

  /** Reports what this session sends and receives to `tap` (a job's transcript) until unset. */
  record(tap: SessionTap | null): void {
    this.ssh.tap = tap;
  }

  /** False once output ended on an expect_string: such a session must not be reused. */
  get reusable(): boolean {
    return !this.ssh.isClosed && !this.desynced;
  }

  bindSignal(signal: AbortSignal): () => void {
    return this.ssh.bindSignal(signal);
  }

  /** Reads the first prompt (answering login questions), then asks again to be sure of it. */
  private async discoverPrompt(timeoutMs: number): Promise<void> {
    const { loginPrompt, loginConfirmations } = this.driver;
    // Where the line answered last starts (-1: nothing answered yet).
    let answeredAt = -1;
    const answered = new Set<Confirmation>();
    await this.ssh.waitFor(
      (text) => {
        const tail = lastLineOf(text);
        if (tail === null) return undefined;
        if (loginPrompt.test(tail)) return true;
        const question = loginConfirmations.find((c) => c.pattern.test(tail));
        // The platform's login pattern is a hint: a line of any prompt shape ends the wait too
        // (the newline sent next tells a banner line from the prompt).
        if (question === undefined && ANY_PROMPT_END.test(tail)) return true;
        if (question !== undefined && answeredAt !== text.finishedLength) {
          if (question.refusedIfAskedAgain === true && answered.has(question)) {
            throw new SvcError(
              ErrorCode.AUTH_FAILED,
              'login refused by the device (in-band password)',
            );
          }
          answered.add(question);
          answeredAt = text.finishedLength;
          this.ssh.write(question.answer);
        }
        return undefined;
      },
      timeoutMs,
      'the first prompt',
    );
    // A banner line ending in '#' can look like a prompt when it arrives without its newline;
    // the line the device prints for an empty command is the prompt for sure.
    this.ssh.clear();
    this.ssh.write('\n');
    const line = await this.ssh.waitFor(
      (text) => {
        if (text.finishedLength === 0) return undefined;
        const tail = lastLineOf(text);
        return tail !== null && (loginPrompt.test(tail) || ANY_PROMPT_END.test(tail))
          ? tail.trim()
          : undefined;
      },
      timeoutMs,
      'the prompt',
    );
    this.setPrompt(line);
    this.ssh.clear();
  }

  /**
   * Takes `line` as the current prompt and learns its base again when the device was renamed.
   * A base that is a long enough start of the known one is the same device's shortened
   * configuration prompt: the known (whole) base stays.
   */
  private setPrompt(line: string): void {
    this.prompt = line.trim();
    // Any prompt of the known base (another mode, a shortened name): nothing new to learn.
    if (this.base !== null && this.promptRe.test(this.prompt)) return;
    let base = this.driver.basePrompt(this.prompt);
    if (this.base !== null && isShortened(base, this.base)) return;
    let re = this.driver.promptPattern(shortenablePattern(base));
    if (this.shapeRe === LEARNED_SHAPE || !re.test(this.prompt)) {
      // The platform's shape is a hint, not a condition: a device showing another shape
      // (`name>` on VRP, Comware or EXOS) is recognised by the base learned from what it shows,
      // for the rest of the session (a rename included).
      base = learnedBase(this.prompt);
      re = learnedPromptPattern(base);
      this.shapeRe = LEARNED_SHAPE;
    }
    this.base = base;
    this.promptRe = re;
  }

  /** Whether `tail` is a prompt that ends the output of a command sent with `follow`. */
  private followedPrompt(tail: string, follow: CommandOptions['follow']): boolean {
    if (follow === undefined || !this.shapeRe.test(tail)) return false;
    // A configuration line stays in configuration mode: only such a prompt ends its output.
    return follow === 'exit' || this.driver.config.isConfig(tail);
  }

  /** Enters enable mode and turns paging off, once per session. */
  async prepare(username: string, enableSecret: string, timeoutMs: number): Promise<void> {
    if (this.prepared) return;
    await this.enable(username, enableSecret, timeoutMs);
    for (const cmd of this.driver.pagingOff) {
      // A refused paging command is not fatal: the reader still pages through '--More--'.
      await this.command(cmd, { timeoutMs });
    }
    this.prepared = true;
    this.home = this.prompt;
  }

  /**
   * Whether `prompt` is the session's home: its privileged exec prompt, give or take the
   * numbers a prompt counts with (EXOS `SW1.7 #`) and the unsaved-changes mark (`* `).
   */
  private isHome(prompt: string): boolean {
    if (this.home === null) return false;
    const norm = (p: string): string => p.replace(/^\* /, '').replace(/\d+/g, '0');
    return prompt === this.home || norm(prompt) === norm(this.home);
  }

  /**
   * Brings the session back to its home prompt for the next job: the prompt read after the
   * last command is checked; a configuration prompt is left with the platform's own exit
   * (discarding what is pending) and the prompt read again. False when the session is not
   * back home (another mode, no answer): it must then be closed, never reused.
   */
  async returnHome(timeoutMs: number): Promise<boolean> {
    if (!this.reusable || this.home === null) return false;
    if (this.isHome(this.prompt)) return true;
    if (!this.driver.config.isConfig(this.prompt)) return false;
    try {
      await this.leaveConfig(this.driver.config.abort, timeoutMs);
      await this.command('', { timeoutMs });
    } catch {
      return false;
    }
    return this.reusable && this.isHome(this.prompt);
  }

  /**
   * Enters privileged mode with `en` (the driver's enable by default; autodetect passes one
   * when a probe was refused in user-exec mode), trying each of its forms in order.
   * AUTH_FAILED only when a password prompt was answered and refused; ENABLE_REFUSED, with the
   * device's answers, when the device refused every form without asking for a password.
   */
  async enable(
    username: string,
    secret: string,
    timeoutMs: number,
    en: EnableMode | null = this.driver.enable,
  ): Promise<void> {
    if (en === null || en.isEnabled(this.prompt)) return;
    const forms = [en.command, ...(en.alternatives ?? [])];
    const answers: string[] = [];
    for (const form of forms) {
      const answer = await this.tryEnable(form, en, username, secret, timeoutMs);
      if (answer === null) return;
      answers.push(`"${form}": ${answer === '' ? '(no answer, prompt unchanged)' : answer}`);
    }
    throw new SvcError(
      ErrorCode.ENABLE_REFUSED,
      `the device refused ${forms.length === 1 ? 'the enable command' : `every enable form (${forms.length})`} of platform ${this.driver.platform} without asking for a password, at prompt ${this.prompt}: ${answers.join('; ')}`,
    );
  }

  /**
   * Sends one enable form. Null once privileged; else the device's answer (it refused the form
   * without a password prompt). AUTH_FAILED when a password was asked, answered and refused.
   */
  private async tryEnable(
    form: string,
    en: EnableMode,
    username: string,
    secret: string,
    timeoutMs: number,
  ): Promise<string | null> {
    const ssh = this.ssh;
    ssh.clear();
    this.writeLine(form, 'the enable command');
    // Where the line answered last starts (-1: none yet).
    let userLine = -1;
    let passLine: number | null = null;
    const said = await ssh.waitFor(
      (text) => {
        this.dropStale(text);
        const tail = lastLineOf(text);
        if (tail === null) return undefined;
        const lineAt = text.finishedLength;
        // A prompt with nothing before it is one the device printed before reading `enable`.
        if (this.promptRe.test(tail) && text.hasText) {
          const before = text.value.slice(0, Math.max(0, lineAt - 1));
          this.setPrompt(tail);
          return before;
        }
        if (en.usernamePrompt?.test(tail) === true && userLine !== lineAt) {
          userLine = lineAt;
          this.writeLine(username, 'the username');
        } else if (en.passwordPrompt.test(tail)) {
          if (passLine === null) {
            passLine = lineAt;
            this.writeLine(secret, 'the enable secret');
          } else if (passLine !== lineAt) {
            throw new SvcError(ErrorCode.AUTH_FAILED, 'enable password rejected by the device');
          }
        }
        return undefined;
      },
      timeoutMs,
      'the enable prompt',
    );
    this.ssh.clear();
    if (en.isEnabled(this.prompt)) return null;
    if (passLine !== null) {
      throw new SvcError(ErrorCode.AUTH_FAILED, 'enable password rejected by the device');
    }
    return deviceAnswer(dropEchoLike(said, form));
  }

  /**
   * Sends one command and returns its output: the echo, the trailing prompt and any paging
   * prompts removed, `\n` line endings. With `expect`, the output ends where it matches.
   */
  async command(cmd: string, options: CommandOptions): Promise<string> {
    const ssh = this.ssh;
    const wanted = cmd.trim();
    const expect = options.expect ?? null;
    const confirmations = options.confirmations ?? [];
    let echoSeen = wanted.length === 0;
    // Where the line answered last starts (-1: none yet).
    let answeredLine = -1;
    const scanner = expect === null ? null : new OutputScanner(expect);
    ssh.clear();
    this.writeLine(cmd, 'a command');
    // Each look reads only the current line and what arrived since the last look; the whole
    // text is built once, when the output is complete (linear in the output).
    const output = await this.waitNamingQuestion<string>(
      (text) => {
        if (!echoSeen) {
          this.dropStale(text);
          // The echo starts on the first or second line: a bounded start of the text holds it.
          const end = findEcho(text.prefix(wanted.length + ECHO_WINDOW), wanted);
          if (end >= 0) {
            text.consume(end);
            echoSeen = true;
          }
        }
        const nl = text.finishedLength - 1;
        const tail = lastLineOf(text);
        const atPrompt =
          tail !== null &&
          (this.promptRe.test(tail) || (echoSeen && this.followedPrompt(tail, options.follow)));
        if (!echoSeen) {
          // Typed input may still be echoing; only a prompt after a full line means the device
          // does not echo at all.
          if (!atPrompt || nl < 0 || expect !== null) return undefined;
          // Only blank lines before a prompt: a prompt printed before the device read the
          // command (a late login prompt); its answer is still to come.
          if (!text.hasText) return undefined;
          return dropEchoLike(text.value.slice(0, nl), wanted);
        }
        if (!atPrompt && tail !== null) {
          const pager = matchPager(tail) ?? this.driver.pagers?.find((p) => p.pattern.test(tail));
          if (pager !== undefined) {
            text.dropLastLine();
            ssh.write(pager.answer);
            return undefined;
          }
          const question = confirmations.find((c) => c.pattern.test(tail));
          if (question !== undefined && answeredLine !== text.finishedLength) {
            answeredLine = text.finishedLength;
            ssh.write(question.answer);
            return undefined;
          }
        }
        // A line that starts free-text entry (IOS `banner motd #`): no prompt comes until the
        // delimiter; the next configuration lines are the text.
        const textEntry = this.driver.config.textEntry;
        if (!atPrompt && tail === '' && options.follow === 'config' && textEntry != null) {
          const m = textEntry.exec(text.lastFinishedLine());
          if (m?.[1] !== undefined) {
            this.textEnd = m[1];
            return text.value.slice(0, Math.max(nl, 0));
          }
        }
        if (scanner !== null) {
          const end = scanner.find(text);
          if (end === null) return undefined;
          let out = text.value.slice(0, end);
          const lastNl = out.lastIndexOf('\n');
          if (this.promptRe.test(out.slice(lastNl + 1))) {
            this.setPrompt(out.slice(lastNl + 1));
            out = out.slice(0, Math.max(lastNl, 0));
          } else {
            this.desynced = true;
          }
          return out.replace(/\n$/, '');
        }
        if (!atPrompt) return undefined;
        this.setPrompt(tail);
        return nl < 0
          ? ''
          : stripContextLines(text.value.slice(0, nl), this.driver.contextLines ?? []);
      },
      options.timeoutMs,
      expect !== null
        ? `expect_string /${expect.source}/ after "${wanted}"`
        : `the prompt after "${wanted}"`,
    );
    ssh.clear();
    return output;
  }

  /**
   * `ssh.waitFor`, but a READ_TIMEOUT while the device shows a line that is no prompt (a
   * question nobody answered, such as `[confirm]`) says what the device is waiting at.
   */
  private async waitNamingQuestion<T>(
    test: WaitTest<T>,
    timeoutMs: number,
    what: string,
  ): Promise<T> {
    try {
      return await this.ssh.waitFor<T>(test, timeoutMs, what);
    } catch (err) {
      if (!(err instanceof SvcError) || err.code !== ErrorCode.READ_TIMEOUT) throw err;
      const last = this.ssh.output.lastLine.slice(0, MAX_LINE_CHECKED).trim();
      if (last === '' || this.promptRe.test(last)) throw err;
      throw new SvcError(
        ErrorCode.READ_TIMEOUT,
        `${err.message}; the device is waiting at "${last.slice(0, 200)}" (a question? the job's answers can answer it)`,
      );
    }
  }

  /** Drops the bare prompts and blank lines at the start of the text (see staleLength). */
  private dropStale(text: TerminalText): void {
    if (text.finishedLength === 0) return;
    const stale = this.staleLength(text.prefix(STALE_WINDOW));
    if (stale > 0) text.consume(stale);
  }

  /**
   * How many leading characters of `text` are whole lines that are blank or a bare prompt:
   * prompts the device printed before it read the line just sent (a prompt that arrived after
   * the session took its prompt, a second prompt after login). They belong to no command.
   */
  private staleLength(text: string): number {
    let at = 0;
    for (;;) {
      const nl = text.indexOf('\n', at);
      if (nl < 0) return at;
      const line = text.slice(at, nl);
      const bare = line.trim();
      const context = this.driver.contextLines?.some((p) => p.test(bare)) === true;
      if (bare !== '' && !context && !this.promptRe.test(line)) return at;
      at = nl + 1;
    }
  }

  /**
   * Types one line and presses Enter. The second wall behind the gateway's validation: a line
   * break inside `line` would make the device run a second line nobody asked for, and other
   * control characters edit or interrupt what was typed, so such a line is never written. The
   * error names the character's position, never the text (it may be a secret).
   */
  writeLine(line: string, what: string): void {
    const found = forbiddenCharIn(line);
    if (found !== null) {
      throw new SvcError(
        ErrorCode.COMMAND_ERROR,
        `refused to send ${what}: it holds ${codePointName(found.codePoint)} at position ${found.index} (no line breaks or control characters reach a device)`,
      );
    }
    this.ssh.write(`${line}\n`);
  }

  /**
   * A quick check that the device still answers, at the prompt the session was handed out at
   * (pool reuse): a job never starts in another mode.
   */
  async isAlive(timeoutMs: number): Promise<boolean> {
    if (!this.reusable) return false;
    try {
      await this.command('', { timeoutMs });
      return this.home === null || this.isHome(this.prompt);
    } catch {
      return false;
    }
  }

  /**
   * Runs show commands. A device error in the first lines of an output marks that command
   * rejected; the others still run unless `stopOnError`. Every output the device gave is kept,
   * the rejected ones included, whatever ends the job: a read timeout, a lost session or an
   * abort ends it with the commands after it `not_run` (the failure is returned, not thrown).
   * A command that leaves the session in configuration mode is followed by the platform's exit
   * before the next one: a read command never runs at a configuration prompt.
   */
  async show(
    commands: readonly string[],
    options: {
      timeoutMs: number;
      expect: UserPattern | null;
      stopOnError?: boolean;
      /** The wait of one command (ms) when it differs from `timeoutMs` (`show tech-support`). */
      timeoutFor?: (command: string) => number;
      /** Answers to questions the commands ask (the job's `answers`). */
      answers?: AnswersFor;
    },
  ): Promise<ShowOutcome> {
    const results: Record<string, string> = {};
    const status: CommandStatus[] = [];
    let failure: SvcError | null = null;
    let stopped = false;
    for (const [index, cmd] of commands.entries()) {
      if (failure !== null || stopped) {
        status.push({ command: cmd, status: 'not_run' });
        continue;
      }
      if (this.driver.config.isConfig(this.prompt) && !this.desynced) {
        try {
          await this.leaveConfig(this.driver.config.abort, options.timeoutMs);
        } catch (err) {
          failure = SvcError.from(err);
          status.push({ command: cmd, status: 'not_run' });
          continue;
        }
      }
      let out: string;
      try {
        out = await this.command(cmd, {
          timeoutMs: options.timeoutFor?.(cmd) ?? options.timeoutMs,
          expect: options.expect,
          confirmations: options.answers?.(index) ?? [],
        });
      } catch (err) {
        failure = SvcError.from(err);
        status.push(statusOfFailure(cmd, failure));
        continue;
      }
      record(results, cmd, out);
      const error = this.findError(out, SHOW_ERROR_LINES);
      status.push(
        error === undefined
          ? { command: cmd, status: 'ok' }
          : { command: cmd, status: 'error', error },
      );
      if (error !== undefined && options.stopOnError === true) stopped = true;
    }
    return { results, status, failure };
  }

  /**
   * Enters configuration mode, sends the lines, commits when asked, leaves configuration mode
   * and saves when asked. A rejected line ends the job: the driver leaves configuration mode
   * (discarding what it can) and the lines after it are `not_run`. Every output the device gave
   * is kept whatever ends the job; the failure is returned, not thrown. Refusals before the
   * device is touched (no commit, no save on the platform), and a device that does not enter
   * configuration mode, are thrown.
   */
  async configure(lines: readonly string[], options: ConfigOptions): Promise<ShowOutcome> {
    const { config, commit, save } = this.driver;
    const platform = this.driver.platform;
    if (options.commit && commit === null) {
      throw new SvcError(
        ErrorCode.COMMAND_ERROR,
        `commit is not supported on platform ${platform}`,
      );
    }
    if (options.save && save === 'none') {
      throw new SvcError(
        ErrorCode.COMMAND_ERROR,
        `save_config is not supported on platform ${platform}`,
      );
    }
    const doCommit = options.commit || (options.save && save === 'commit');
    const saveStep = options.save && typeof save === 'object' ? save : null;
    const timeoutMs = options.timeoutMs;
    const results: Record<string, string> = {};
    const status: CommandStatus[] = [];
    // Every step of the job, in order: what is not reached is listed `not_run`.
    const steps = [
      ...lines,
      ...(doCommit && commit !== null ? [commit.command] : []),
      ...(saveStep !== null ? [saveStep.command] : []),
    ];
    let failure: SvcError | null = null;
    /** Sends one step and records how it fared; false when it ended the job. */
    const step = async (name: string, send: () => Promise<string>): Promise<boolean> => {
      let out: string;
      try {
        out = this.driver.cleanConfigOutput(await send());
      } catch (err) {
        failure = SvcError.from(err);
        status.push(statusOfFailure(name, failure));
        return false;
      }
      record(results, name, out);
      const error = this.findError(out, undefined, options.errorPatterns);
      if (error !== undefined) {
        failure = rejected(name, error);
        status.push({ command: name, status: 'error', error });
        return false;
      }
      status.push({ command: name, status: 'ok' });
      return true;
    };
    const finish = (): ShowOutcome => {
      for (const name of steps.slice(status.length))
        status.push({ command: name, status: 'not_run' });
      return { results, status, failure };
    };
    if (config.enter !== null) {
      const out = await this.command(config.enter, { timeoutMs, follow: 'config' });
      const error = this.findError(out);
      if (error !== undefined || !config.isConfig(this.prompt)) {
        throw new SvcError(
          ErrorCode.COMMAND_ERROR,
          `could not enter configuration mode with "${config.enter}": ${error ?? (lastLine(out) || this.prompt)}`,
        );
      }
    }
    let inConfig = true;
    for (const [index, line] of lines.entries()) {
      if (this.textEnd !== null) {
        if (!line.includes(this.textEnd)) {
          if (!(await step(line, () => this.textLine(line, timeoutMs).then(() => '')))) break;
          continue;
        }
        // The line holding the delimiter ends the text; the prompt comes back after it.
        this.textEnd = null;
      }
      const sent = await step(line, () =>
        this.command(line, {
          timeoutMs,
          follow: 'config',
          confirmations: options.answers?.(index) ?? [],
        }),
      );
      if (!sent) break;
    }
    if (failure === null && this.textEnd !== null) {
      failure = new SvcError(
        ErrorCode.COMMAND_ERROR,
        `the text the device reads after a line (a banner) was not ended: no line holds ${JSON.stringify(this.textEnd)}`,
      );
    }
    if (failure === null && doCommit && commit !== null) {
      await step(commit.command, () =>
        this.command(commit.command, {
          timeoutMs: options.commitTimeoutMs ?? timeoutMs,
          confirmations: commit.confirmations,
          follow: 'config',
        }),
      );
    }
    if (failure === null && saveStep?.inConfig === true) {
      await this.saveStep(saveStep, step, options.saveTimeoutMs ?? timeoutMs);
    }
    if (failure !== null) {
      // In free-text entry every line typed would become text; after a timeout or a lost
      // session the state is unknown: the session is dropped. A rejected line is left with the
      // platform's abort, so the device is back at its exec prompt.
      const rejectedLine = failure.code === ErrorCode.COMMAND_ERROR;
      if (this.textEnd !== null || !rejectedLine) this.destroy();
      else if (!this.isClosed) {
        await this.leaveConfig(config.abort, timeoutMs).catch(() => this.destroy());
      }
      return finish();
    }
    try {
      await this.leaveConfig(config.exit, timeoutMs);
      inConfig = false;
    } catch (err) {
      failure = SvcError.from(err);
    }
    if (!inConfig && !this.driver.config.isConfig(this.prompt) && this.atPrivilegedExec()) {
      // A renamed device (`hostname`) is back home at its new name.
      this.home = this.prompt;
    }
    if (failure === null && saveStep !== null && saveStep.inConfig !== true) {
      await this.saveStep(saveStep, step, options.saveTimeoutMs ?? timeoutMs);
    }
    return finish();
  }

  /** Whether the prompt is a privileged one (always, on a platform without enable). */
  private atPrivilegedExec(): boolean {
    const en = this.driver.enable;
    return en === null || en.isEnabled(this.prompt);
  }

  private async saveStep(
    save: SaveStep,
    step: (name: string, send: () => Promise<string>) => Promise<boolean>,
    timeoutMs: number,
  ): Promise<boolean> {
    return step(save.command, () =>
      this.command(save.command, { timeoutMs, confirmations: save.confirmations }),
    );
  }

  /** Types one line of free text (a banner line) and waits for its echo: no prompt comes. */
  private async textLine(line: string, timeoutMs: number): Promise<void> {
    const ssh = this.ssh;
    const wanted = line.trim();
    ssh.clear();
    this.writeLine(line, 'a configuration line');
    await ssh.waitFor(
      (text) =>
        wanted === '' || findEcho(text.prefix(wanted.length + ECHO_WINDOW), wanted) >= 0
          ? text.finishedLength > 0 || undefined
          : undefined,
      timeoutMs,
      `the echo of "${wanted}"`,
    );
    ssh.clear();
  }

  /**
   * Sends the exit (or abort) commands until the prompt is no longer a configuration prompt;
   * still there after some rounds: thrown. The one way every configuration path leaves.
   */
  async leaveConfig(commands: readonly string[], timeoutMs: number): Promise<void> {
    const config = this.driver.config;
    // Nested blocks (FortiOS `config` inside `edit`) need the exit more than once.
    for (let round = 0; round < 8 && config.isConfig(this.prompt); round++) {
      for (const cmd of commands) {
        if (!config.isConfig(this.prompt)) break;
        await this.command(cmd, {
          timeoutMs,
          confirmations: config.exitConfirmations,
          follow: 'exit',
        });
      }
    }
    if (config.isConfig(this.prompt)) {
      throw new SvcError(
        ErrorCode.COMMAND_ERROR,
        `could not leave configuration mode (prompt ${this.prompt})`,
      );
    }
  }

  /** The first line (within `maxLines`, if given) that matches an error pattern. */
  findError(
    output: string,
    maxLines?: number,
    extra: readonly UserPattern[] = [],
  ): string | undefined {
    let lines = output.split('\n');
    if (maxLines !== undefined) lines = lines.filter((l) => l.trim() !== '').slice(0, maxLines);
    const hit = lines.find(
      (l) =>
        this.driver.errorPatterns.some((p) => p.test(l)) || extra.some((p) => p.find(l) !== null),
    );
    return hit?.trim();
  }

  async close(): Promise<void> {
    await this.ssh.close();
  }

  destroy(): void {
    this.ssh.destroy();
  }
}

/**
 * The base of a prompt of no known shape, as the trusted driver library learns it: the line
 * without its last character (the mode mark `>`, `#`, `$`, `%`, `]`), a leading `<`, `[`, `~`,
 * `*` and spaces around it. `R1>` and `[~R1]` give `R1`.
 */
export function learnedBase(prompt: string): string {
  const line = prompt.trim();
  const base = line
    .slice(0, -1)
    .replace(/^(?:\* )?[<[]?[~*]*/, '')
    .trim();
  return base === '' ? line : base;
}

/**
 * Any prompt of a learned base: the base (or its shortened form) after an optional `<`, `[`,
 * `~`, `*`, then anything up to a mode mark at the end (`R1>`, `[R1-GigabitEthernet0/0/1]`,
 * `R1(config)#`).
 */
export function learnedPromptPattern(base: string): RegExp {
  return new RegExp(
    `^(?:\\* )?[<[]?[~*]*${shortenablePattern(base)}(?:[^\\n]{0,200}?)[>#$%\\]]\\s*$`,
  );
}

/** The device's answer as one line for an error text: its lines that say something. */
function deviceAnswer(output: string): string {
  return output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^\^$/.test(l))
    .join(' / ')
    .slice(0, 300);
}

/** True when `shown` is how a configuration prompt shortens the base `known`. */
function isShortened(shown: string, known: string): boolean {
  return (
    shown.length < known.length &&
    shown.length >= Math.min(known.length, MIN_SHOWN_BASE) &&
    known.startsWith(shown)
  );
}

/**
 * The escaped base as a pattern that also matches its shortened forms (every start of it of
 * at least {@link MIN_SHOWN_BASE} characters): `DC1-POD7-LEAF-AC(?:C(?:E(?:S)?)?)?`.
 */
export function shortenablePattern(base: string): string {
  if (base.length <= MIN_SHOWN_BASE) return escapeRegExp(base);
  let rest = '';
  for (let i = base.length - 1; i >= MIN_SHOWN_BASE; i--) {
    rest = `(?:${escapeRegExp(base[i] ?? '')}${rest})?`;
  }
  return escapeRegExp(base.slice(0, MIN_SHOWN_BASE)) + rest;
}

function rejected(cmd: string, deviceMessage: string): SvcError {
  return new SvcError(
    ErrorCode.COMMAND_ERROR,
    `command "${cmd}" rejected by the device: ${deviceMessage}`,
  );
}

function record(results: Record<string, string>, cmd: string, out: string): void {
  const previous = results[cmd];
  results[cmd] = previous === undefined ? out : `${previous}\n${out}`;
}

function lastLine(text: string): string {
  return text.trim().split('\n').pop() ?? '';
}

/**
 * Where the echo of `wanted` ends (just past its newline), or -1 while it is not complete. The
 * echo must start on the first or second line: later occurrences are output, not echo.
 */
export function findEcho(text: string, wanted: string): number {
  const at = text.indexOf(wanted);
  if (at < 0) return -1;
  const before = text.slice(0, at);
  if (before.split('\n').length > 2) return -1;
  const nl = text.indexOf('\n', at + wanted.length);
  return nl < 0 ? -1 : nl + 1;
}

/** Output of a device that did not echo cleanly: drop a first line that is the command. */
export function dropEchoLike(output: string, wanted: string): string {
  const squash = (s: string): string => s.replace(/\s+/g, '');
  const nl = output.indexOf('\n');
  const first = nl < 0 ? output : output.slice(0, nl);
  if (wanted !== '' && squash(first).endsWith(squash(wanted)))
    return nl < 0 ? '' : output.slice(nl + 1);
  return output;
}
