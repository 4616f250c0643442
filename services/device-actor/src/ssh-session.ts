// ssh2 is CommonJS; Node only finds some of its names as ESM named exports, so use the default.
import ssh2, { type Client, type ClientChannel, type ConnectConfig } from 'ssh2';
import { SvcError, ErrorCode } from '@svc/proto';
import type { VerifyHostKey } from './host-key-trust.js';
import { keyboardAnswers, nextAuthStep } from './ssh-auth.js';

/**
 * The transport half of the device layer: one SSH connection with one interactive shell, and a
 * buffered reader over it that turns the terminal byte stream into the text a person would see.
 * Platform knowledge (prompts, modes, errors) lives in `drivers/`; this file knows none of it.
 */

/** Where and how to connect. Durations in milliseconds. */
export interface SshSessionOptions {
  /** The device as the job names it (for error texts). */
  host: string;
  /** The resolved address to connect to (the job's checked address); `host` when absent. */
  address?: string;
  port: number;
  username: string;
  password: string;
  /** Bounds TCP connect + SSH handshake + authentication. */
  connTimeoutMs: number;
  /** Columns of the pseudo-terminal; wide so devices do not wrap long lines. Default 511. */
  cols?: number;
  /** Rows of the pseudo-terminal. Default 200 (paging is turned off by the driver anyway). */
  rows?: number;
  /** Called once the SSH handshake completed: later failures are not "unreachable". */
  onHandshake?: () => void;
  /** Host-key check during the handshake (before authentication); none accepts any key. */
  verifyHostKey?: VerifyHostKey;
}

/** Matches one complete escape sequence at the current position (sticky). */
const ESCAPE_SEQUENCE =
  // eslint-disable-next-line no-control-regex -- terminal escapes are control characters by definition
  /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[0-9=<>]|[@-Z\\-_])/y;
/** A prefix of an escape sequence that may be completed by the next chunk. */
// eslint-disable-next-line no-control-regex -- as above
const PARTIAL_ESCAPE = /^\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*|[()])?$/;

/**
 * Incremental terminal-to-text conversion. Strips ANSI escapes (`ESC E`, "next line", becomes a
 * newline as ProCurve uses it), applies backspaces, turns `\r\n` (and `\r\r\n`) into `\n`, and
 * treats a lone `\r` as "back to column 0", which devices use to wipe a paging prompt. Input that
 * could be the start of a longer sequence is held back until the next chunk decides it.
 */
export class TerminalText {
  private text = '';
  private pending = '';

  /** The normalised text accumulated so far. */
  get value(): string {
    return this.text;
  }

  push(chunk: string): void {
    const s = this.pending + chunk;
    this.pending = '';
    let out = this.text;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === 0x1b) {
        ESCAPE_SEQUENCE.lastIndex = i;
        const m = ESCAPE_SEQUENCE.exec(s);
        if (m === null) {
          const rest = s.slice(i);
          if (PARTIAL_ESCAPE.test(rest)) {
            this.pending = rest;
            break;
          }
          continue; // a stray ESC: drop it
        }
        if (m[0] === '\x1bE') out += '\n';
        i += m[0].length - 1;
      } else if (c === 0x0d) {
        let j = i;
        while (s.charCodeAt(j) === 0x0d) j++;
        if (j === s.length) {
          this.pending = s.slice(i);
          break;
        }
        if (s.charCodeAt(j) !== 0x0a) out = out.slice(0, out.lastIndexOf('\n') + 1);
        i = j - 1;
      } else if (c === 0x08) {
        if (out.length > 0 && !out.endsWith('\n')) out = out.slice(0, -1);
      } else if (c === 0x0a || c === 0x09) {
        out += s[i];
      } else if (c >= 0x20 && c !== 0x7f) {
        out += s[i];
      }
      // other control characters (NUL, BEL, ...) carry no text
    }
    this.text = out;
  }

  /** Drops the first `n` characters (text already handed out). */
  consume(n: number): void {
    this.text = this.text.slice(n);
  }

  /** Cuts the text back to `length` characters (removes a paging or confirmation prompt). */
  truncate(length: number): void {
    this.text = this.text.slice(0, length);
  }

  clear(): void {
    this.text = '';
    this.pending = '';
  }
}

/** Applies {@link TerminalText} to a whole string at once. */
export function normalizeTerminalText(raw: string): string {
  const t = new TerminalText();
  t.push(raw);
  // A trailing lone CR is pending by design; at end of input it has nothing left to erase.
  return t.value;
}

/** A paging prompt and the key that moves past it. */
export interface Pager {
  pattern: RegExp;
  answer: string;
}

/**
 * Paging prompts seen on the supported platforms, matched against the last (unterminated)
 * line only. Drivers turn paging off at login; these are the fallback when that did not work.
 */
export const PAGERS: readonly Pager[] = [
  // IOS/NX-OS/EOS ` --More-- `, ASA `<--- More --->`, Huawei `  ---- More ----`, FortiOS `--More--`
  { pattern: /^\s*<?-{2,}\s*more\s*-{2,}>?\s*$/i, answer: ' ' },
  // ProCurve / AOS-CX `-- MORE --, next page: Space, next line: Enter, quit: Control-C`
  { pattern: /^\s*-{2,}\s*more\s*-{2,},\s*next page:.*$/i, answer: ' ' },
  // Junos `---(more)---`, `---(more 45%)---`
  { pattern: /^\s*-{2,}\s*\(\s*more(?:\s+\d+%)?\s*\)\s*-{2,}\s*$/i, answer: ' ' },
  // less at the end of its input (PAN-OS): space would not leave it
  { pattern: /^\s*(?:lines\s+\d+-\d+(?:\/\d+)?\s*)?\(END\)\s*$/, answer: 'q' },
  // less in the middle of its input (PAN-OS `lines 1-40 `)
  { pattern: /^\s*lines\s+\d+-\d+(?:\/\d+)?\s*$/, answer: ' ' },
];

/** Returns the pager whose prompt is `line`, if any. */
export function matchPager(line: string): Pager | undefined {
  if (line.length === 0 || line.length > 120) return undefined;
  return PAGERS.find((p) => p.pattern.test(line));
}

/** A condition checked on each arrival of output; returns a value to finish the wait. */
export type WaitTest<T> = (text: string) => T | undefined;

interface Waiter {
  check(): void;
  fail(err: Error): void;
}

/**
 * One SSH connection with one interactive shell. Reads are explicit waits: `waitFor` runs a test
 * on the normalised text whenever output arrives and fails with READ_TIMEOUT when nothing
 * satisfied it in time, SESSION_DROPPED when the device closed the session, or the abort reason.
 */
export class SshSession {
  private readonly term = new TerminalText();
  private waiter: Waiter | null = null;
  private closedError: SvcError | null = null;
  private readonly closedPromise: Promise<void>;

  private constructor(
    private readonly client: Client,
    private readonly channel: ClientChannel,
  ) {
    this.closedPromise = new Promise((resolve) => {
      client.once('close', () => resolve());
    });
    channel.setEncoding('utf8');
    channel.on('data', (chunk: string) => {
      this.term.push(chunk);
      this.waiter?.check();
    });
    channel.stderr.on('data', () => {
      // Devices do not use stderr on a shell; ignore rather than mix it into output.
    });
    const dropped = (): void =>
      this.markClosed(new SvcError(ErrorCode.SESSION_DROPPED, 'the device closed the session'));
    channel.on('close', dropped);
    client.on('close', dropped);
    client.on('error', () => dropped());
  }

  /**
   * Connects, authenticates (one attempt: password, or keyboard-interactive when the server does
   * not take password, answered only where a prompt asks for the password) and opens a shell. Failures become SvcErrors with the precise connection code.
   */
  static open(options: SshSessionOptions, signal?: AbortSignal): Promise<SshSession> {
    return new Promise<SshSession>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError(signal));
        return;
      }
      const client = new ssh2.Client();
      let settled = false;
      const finish = (err: SvcError | null, session?: SshSession): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (err !== null) {
          client.removeAllListeners('ready');
          client.on('error', () => undefined); // late errors after we gave up are expected
          client.end();
          client.destroy();
          reject(err);
        } else if (session !== undefined) {
          resolve(session);
        }
      };
      const onAbort = (): void => finish(signal === undefined ? cancelled() : abortError(signal));
      signal?.addEventListener('abort', onAbort, { once: true });
      const timer = setTimeout(() => {
        finish(
          new SvcError(
            ErrorCode.CONNECTION_TIMEOUT,
            `connection timeout: no SSH session with ${options.host}:${options.port} within ${options.connTimeoutMs} ms`,
          ),
        );
      }, options.connTimeoutMs);
      let authFailed = false;
      client.on('connect', () => {
        // Without no-delay every command waits on Nagle + delayed ACK (about 40 ms each).
        client.setNoDelay(true);
      });
      client.on('handshake', () => options.onHandshake?.());
      client.on('keyboard-interactive', (_name, _instr, _lang, prompts, answer) => {
        answer(keyboardAnswers(prompts, options.password));
      });
      let attempted = false;
      // A refused host key ends the handshake; its own error says why, not the library's.
      let hostKeyError: SvcError | null = null;
      const verify = options.verifyHostKey;
      client.on('error', (err: Error & { level?: string; code?: string }) => {
        if (err.level === 'client-authentication') authFailed = true;
        finish(hostKeyError ?? connectError(err, options, authFailed));
      });
      client.on('close', () => {
        finish(
          hostKeyError ??
            new SvcError(
              ErrorCode.SESSION_DROPPED,
              `the device ${options.host}:${options.port} closed the connection during login`,
            ),
        );
      });
      client.on('ready', () => {
        client.shell(
          { term: 'vt100', cols: options.cols ?? 511, rows: options.rows ?? 200 },
          (err, channel) => {
            if (err !== undefined && err !== null) {
              finish(
                new SvcError(
                  ErrorCode.SESSION_DROPPED,
                  `the device refused a shell: ${err.message}`,
                ),
              );
              return;
            }
            finish(null, new SshSession(client, channel));
          },
        );
      });
      const config: ConnectConfig = {
        host: options.address ?? options.host,
        port: options.port,
        username: options.username,
        password: options.password,
        tryKeyboard: true,
        ...(verify
          ? {
              hostVerifier: (key: Buffer, accept: (ok: boolean) => void) => {
                verify(key).then(
                  (refusal) => {
                    hostKeyError = refusal;
                    accept(refusal === null);
                  },
                  (err: unknown) => {
                    hostKeyError = SvcError.from(err);
                    accept(false);
                  },
                );
              },
            }
          : {}),
        authHandler: (methodsLeft) => {
          const step = nextAuthStep(methodsLeft ?? null, attempted);
          if (step === 'password' || step === 'keyboard-interactive') attempted = true;
          return step;
        },
        // Our own timer bounds the whole login; ssh2's would only cover part of it.
        readyTimeout: options.connTimeoutMs + 1000,
        keepaliveInterval: 0,
      };
      try {
        client.connect(config);
      } catch (err) {
        finish(
          new SvcError(
            ErrorCode.HOST_UNREACHABLE,
            `cannot connect to ${options.host}: ${String(err)}`,
          ),
        );
      }
    });
  }

  /** The normalised text received and not consumed yet. */
  get text(): string {
    return this.term.value;
  }

  get isClosed(): boolean {
    return this.closedError !== null;
  }

  write(data: string): void {
    if (this.closedError !== null) throw this.closedError;
    this.channel.write(data);
  }

  /** Forgets any unread output (stale text before a new command). */
  clear(): void {
    this.term.clear();
  }

  consume(n: number): void {
    this.term.consume(n);
  }

  truncate(length: number): void {
    this.term.truncate(length);
  }

  /**
   * Waits until `test` returns a value. The test runs at once and then on every arrival of
   * output; it may write (answer a pager) and consume text. `what` names the wait in errors.
   */
  waitFor<T>(test: WaitTest<T>, timeoutMs: number, what: string): Promise<T> {
    if (this.closedError !== null) return Promise.reject(this.closedError);
    if (this.waiter !== null)
      return Promise.reject(new SvcError(ErrorCode.INTERNAL, 'concurrent reads on one session'));
    return new Promise<T>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiter = null;
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new SvcError(
            ErrorCode.READ_TIMEOUT,
            `read timeout: ${what} not seen within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      this.waiter = {
        check: () => {
          let result: T | undefined;
          try {
            result = test(this.term.value);
          } catch (err) {
            done();
            reject(err instanceof Error ? err : new Error(String(err)));
            return;
          }
          if (result !== undefined) {
            done();
            resolve(result);
          }
        },
        fail: (err) => {
          done();
          reject(err);
        },
      };
      this.waiter.check();
    });
  }

  /**
   * Makes an abort of `signal` close the session at once and fail any read with the reason
   * (a SvcError from the caller, e.g. CANCELLED or JOB_TIMEOUT). Returns the unbinding function.
   */
  bindSignal(signal: AbortSignal): () => void {
    const onAbort = (): void => {
      this.markClosed(abortError(signal));
      this.destroy();
    };
    if (signal.aborted) {
      onAbort();
      return () => undefined;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    return () => signal.removeEventListener('abort', onAbort);
  }

  /** Closes the connection and waits (briefly) for the socket to go. */
  async close(): Promise<void> {
    this.markClosed(new SvcError(ErrorCode.SESSION_DROPPED, 'the session was closed'));
    try {
      this.channel.end();
    } catch {
      // already gone
    }
    this.client.end();
    const timer = setTimeout(() => this.client.destroy(), 1000);
    await this.closedPromise;
    clearTimeout(timer);
  }

  /** Drops the connection without a goodbye. */
  destroy(): void {
    this.markClosed(new SvcError(ErrorCode.SESSION_DROPPED, 'the session was closed'));
    this.client.destroy();
  }

  private markClosed(err: SvcError): void {
    if (this.closedError !== null) return;
    this.closedError = err;
    this.waiter?.fail(err);
  }
}

function cancelled(): SvcError {
  return new SvcError(ErrorCode.CANCELLED, 'the job was cancelled');
}

/** The error an aborted signal stands for: its SvcError reason, or CANCELLED. */
export function abortError(signal: AbortSignal): SvcError {
  const reason: unknown = signal.reason;
  return reason instanceof SvcError ? reason : cancelled();
}

const UNREACHABLE_CODES = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EAI_NONAME',
  'EAI_FAIL',
]);

function connectError(
  err: Error & { level?: string; code?: string },
  options: SshSessionOptions,
  authFailed: boolean,
): SvcError {
  const where = `${options.host}:${options.port}`;
  if (authFailed || err.level === 'client-authentication') {
    return new SvcError(
      ErrorCode.AUTH_FAILED,
      `authentication failed for user ${options.username} on ${where}`,
    );
  }
  if (err.code === 'ECONNREFUSED') {
    return new SvcError(ErrorCode.CONNECTION_REFUSED, `connection refused by ${where}`, {
      cause: err,
    });
  }
  if (err.code !== undefined && UNREACHABLE_CODES.has(err.code)) {
    return new SvcError(ErrorCode.HOST_UNREACHABLE, `host unreachable: ${where} (${err.code})`, {
      cause: err,
    });
  }
  if (err.code === 'ETIMEDOUT' || err.level === 'client-timeout') {
    return new SvcError(ErrorCode.CONNECTION_TIMEOUT, `connection timeout to ${where}`, {
      cause: err,
    });
  }
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE') {
    return new SvcError(
      ErrorCode.SESSION_DROPPED,
      `the device ${where} reset the connection during login`,
      { cause: err },
    );
  }
  return new SvcError(
    ErrorCode.CONNECTION_TIMEOUT,
    `no SSH session with ${where}: ${err.message}`,
    { cause: err },
  );
}
