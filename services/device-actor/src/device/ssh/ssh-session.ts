// ssh2 is CommonJS; Node only finds some of its names as ESM named exports, so use the default.
import ssh2, { type Client, type ClientChannel, type ConnectConfig } from 'ssh2';
import type { Duplex } from 'node:stream';
import { SvcError, ErrorCode, type UserPattern } from '@svc/proto';
import type { VerifyHostKey } from './host-key-trust.js';
import { keyboardAnswers, nextAuthStep } from './ssh-auth.js';
import type { SessionTap } from '../transcript.js';

/**
 * The transport half of the device layer: one SSH connection with one interactive shell, and a
 * buffered reader over it that turns the terminal byte stream into the text a person would see.
 * Platform knowledge (prompts, modes, errors) lives in `drivers/`; this file knows none of it.
 */

/** One SSH server on the way: a jump host, or the device itself. */
export interface SshHop {
  /** The host as the job names it (for error texts). */
  host: string;
  /** The resolved address to connect to (the job's checked address); `host` when absent. */
  address?: string;
  port: number;
  username: string;
  /** Empty: no password login (key only). */
  password: string;
  /** Private key (PEM/OpenSSH) for public-key login, tried before the password. */
  privateKey?: string | null;
  passphrase?: string | null;
  /** Host-key check during the handshake (before authentication); none accepts any key. */
  verifyHostKey?: VerifyHostKey;
}

/** SSH algorithm lists in the SSH library's form (a full list, or `{ append: [...] }`). */
export type SshAlgorithms = ConnectConfig['algorithms'];

/** Where and how to connect. Durations in milliseconds. */
export interface SshSessionOptions extends SshHop {
  /** Bounds TCP connect + SSH handshake + authentication, through every jump host. */
  connTimeoutMs: number;
  /** Columns of the pseudo-terminal; wide so devices do not wrap long lines. Default 511. */
  cols?: number;
  /** Rows of the pseudo-terminal. Default 200 (paging is turned off by the driver anyway). */
  rows?: number;
  /** Called once the device's SSH handshake completed: later failures are not "unreachable". */
  onHandshake?: () => void;
  /** Algorithms offered on every hop; absent: the library's defaults. */
  algorithms?: SshAlgorithms;
  /**
   * Jump hosts in order: the first is connected to directly, each next hop (and finally the
   * device) through a `direct-tcpip` channel of the one before (ssh2's `forwardOut` + `sock`).
   */
  jumpHosts?: readonly SshHop[];
  /**
   * Called when jump host `index` logged in and opened the channel to the next hop: a failure
   * after that is no longer that jump host's (the guards charge each failure to its party).
   */
  onJumpPassed?: (index: number) => void;
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
 * newline as ProCurve uses it; `ESC [ n D`, cursor back, erases like n backspaces), applies
 * backspaces, turns `\r\n` (and `\r\r\n`) into `\n`, and
 * treats a lone `\r` as "back to column 0", which devices use to wipe a paging prompt. Input that
 * could be the start of a longer sequence is held back until the next chunk decides it.
 *
 * Reading is linear in the output: every edit a terminal makes (CR, backspace, cursor back)
 * reaches only the current line, so finished lines are kept as pieces (one per chunk) that are
 * joined once, when the whole text is read; the readers look at the current line
 * ({@link lastLine}) and at the text that arrived since their last look ({@link since}).
 * {@link scanned} counts every character processed or handed to a reader.
 */
export class TerminalText {
  /** Finished lines (each ending in `\n`), one piece per chunk; joined on demand. */
  private pieces: string[] = [];
  private doneLength = 0;
  /** Whether a finished line holds anything but white space. */
  private doneHasText = false;
  /** The current, unterminated line. */
  private line = '';
  private pending = '';
  /** Characters processed by {@link push} or handed to readers since creation. */
  scanned = 0;
  /** Chunks pushed since creation. */
  chunks = 0;

  /** The normalised text accumulated so far (joins the pieces once). */
  get value(): string {
    const done = this.joined();
    this.scanned += done.length + this.line.length;
    return done + this.line;
  }

  /** Length of {@link value}, without building it. */
  get length(): number {
    return this.doneLength + this.line.length;
  }

  /** Length of the finished lines: the position just past the last `\n` (0 when none). */
  get finishedLength(): number {
    return this.doneLength;
  }

  /** The current, unterminated line (what a prompt or a question is). */
  get lastLine(): string {
    this.scanned += this.line.length;
    return this.line;
  }

  /** The last finished line without its `\n` ('' when none). */
  lastFinishedLine(): string {
    const piece = this.pieces[this.pieces.length - 1];
    if (piece === undefined) return '';
    // Pieces start at a line start: the line is inside the last piece.
    const out = piece.slice(piece.lastIndexOf('\n', piece.length - 2) + 1, piece.length - 1);
    this.scanned += out.length;
    return out;
  }

  /** Whether some finished line holds anything but white space. */
  get hasText(): boolean {
    return this.doneHasText;
  }

  /** The text from position `from` to the end, built from the last pieces only. */
  since(from: number): string {
    const start = Math.max(0, from);
    let out: string;
    let at = this.doneLength;
    if (start < at) {
      const parts: string[] = [];
      for (let i = this.pieces.length - 1; i >= 0 && at > start; i--) {
        const piece = this.pieces[i] ?? '';
        at -= piece.length;
        parts.push(at < start ? piece.slice(start - at) : piece);
      }
      out = parts.reverse().join('') + this.line;
    } else {
      out = this.line.slice(start - at);
    }
    this.scanned += out.length;
    return out;
  }

  /** The first `n` characters at most, built from the first pieces only. */
  prefix(n: number): string {
    const parts: string[] = [];
    let got = 0;
    for (const piece of this.pieces) {
      if (got >= n) break;
      parts.push(piece.length <= n - got ? piece : piece.slice(0, n - got));
      got += piece.length;
    }
    if (got < n) parts.push(this.line.slice(0, n - got));
    const out = parts.join('');
    this.scanned += out.length;
    return out;
  }

  push(chunk: string): void {
    const s = this.pending + chunk;
    this.pending = '';
    this.scanned += s.length;
    this.chunks++;
    let line = this.line;
    const finished: string[] = [];
    // Start of a run of printable characters not yet added to `line` (-1: none).
    let run = -1;
    let i = 0;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if ((c >= 0x20 && c !== 0x7f) || c === 0x09) {
        if (run < 0) run = i;
        continue;
      }
      if (run >= 0) {
        line += s.slice(run, i);
        run = -1;
      }
      if (c === 0x0a) {
        finished.push(line + '\n');
        line = '';
      } else if (c === 0x1b) {
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
        if (m[0] === '\x1bE') {
          finished.push(line + '\n');
          line = '';
        }
        const back = m[0].endsWith('D') ? /^.\[(\d*)D$/.exec(m[0]) : null;
        if (back !== null) {
          // Cursor back n columns: what follows overwrites, so it erases like n backspaces
          // (Huawei and Comware wipe `---- More ----` with ESC[16D, spaces, ESC[16D).
          line = line.slice(0, Math.max(0, line.length - Number(back[1] || '1')));
        }
        i += m[0].length - 1;
      } else if (c === 0x0d) {
        let j = i;
        while (s.charCodeAt(j) === 0x0d) j++;
        if (j === s.length) {
          this.pending = s.slice(i);
          break;
        }
        if (s.charCodeAt(j) !== 0x0a) line = '';
        i = j - 1;
      } else if (c === 0x08) {
        if (line.length > 0) line = line.slice(0, -1);
      }
      // other control characters (NUL, BEL, ...) carry no text
    }
    if (run >= 0) line += s.slice(run, i);
    if (finished.length > 0) {
      const piece = finished.join('');
      this.pieces.push(piece);
      this.doneLength += piece.length;
      if (!this.doneHasText && /\S/.test(piece)) this.doneHasText = true;
    }
    this.line = line;
  }

  /** Drops the first `n` characters (text already handed out, e.g. a command's echo). */
  consume(n: number): void {
    if (n <= 0) return;
    if (n >= this.doneLength) {
      this.line = this.line.slice(n - this.doneLength);
      this.reset();
      return;
    }
    let left = n;
    while (left > 0) {
      const piece = this.pieces[0] ?? '';
      if (piece.length <= left) {
        this.pieces.shift();
        left -= piece.length;
      } else {
        this.pieces[0] = piece.slice(left);
        left = 0;
      }
    }
    this.doneLength -= n;
    this.doneHasText = this.pieces.some((p) => /\S/.test(p));
  }

  /** Removes the current, unterminated line (a paging or confirmation prompt). */
  dropLastLine(): void {
    this.line = '';
  }

  clear(): void {
    this.line = '';
    this.pending = '';
    this.reset();
  }

  private reset(): void {
    this.pieces = [];
    this.doneLength = 0;
    this.doneHasText = false;
  }

  private joined(): string {
    if (this.pieces.length > 1) this.pieces = [this.pieces.join('')];
    return this.pieces[0] ?? '';
  }
}

/**
 * Finds a user pattern (expect_string) in streaming output in linear time: each look searches
 * only what arrived since the last one, plus {@link EXPECT_OVERLAP} characters before it, so a
 * match split across chunks is still seen. A match longer than the overlap that straddles two
 * looks is not. The window starts one character early, so `\b` keeps its sense and a pattern
 * anchored with `^` (start of output) rarely matches a window's start by accident.
 */
export class OutputScanner {
  private searchedTo = 0;

  constructor(private readonly pattern: UserPattern) {}

  /** The end (a position in `text.value`) of the first match, or null. */
  find(text: TerminalText): number | null {
    const from = Math.max(0, this.searchedTo - EXPECT_OVERLAP - 1);
    this.searchedTo = text.length;
    const window = text.since(from);
    const m = this.pattern.find(window);
    return m === null ? null : from + m.end;
  }

  /** Forget what was searched (the text was consumed or cleared). */
  reset(): void {
    this.searchedTo = 0;
  }
}

/** Characters searched again before new output (a match split across chunks). */
export const EXPECT_OVERLAP = 8192;

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
export type WaitTest<T> = (output: TerminalText) => T | undefined;

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
  /** Sees every character sent and received (the job's transcript); null when none is kept. */
  tap: SessionTap | null = null;
  private waiter: Waiter | null = null;
  private closedError: SvcError | null = null;
  private readonly closedPromise: Promise<void>;

  private constructor(
    private readonly client: Client,
    private readonly channel: ClientChannel,
    /** The jump hosts' connections, first hop first; closed after the device's. */
    private readonly jumps: readonly Client[] = [],
  ) {
    this.closedPromise = new Promise((resolve) => {
      client.once('close', () => resolve());
    });
    channel.setEncoding('utf8');
    channel.on('data', (chunk: string) => {
      this.tap?.received(chunk);
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
    for (const jump of jumps) {
      jump.on('error', () => dropped());
      jump.on('close', dropped);
    }
  }

  /**
   * Connects (through the jump hosts, if any), authenticates on each hop (public key first when
   * one is given, then one password attempt: password, or keyboard-interactive when the server
   * does not take password, answered only where a prompt asks for the password) and opens a
   * shell. Failures become SvcErrors with the precise code, naming the hop that failed.
   */
  static async open(options: SshSessionOptions, signal?: AbortSignal): Promise<SshSession> {
    if (signal?.aborted) throw abortError(signal);
    const clients: Client[] = [];
    const stop = new AbortController();
    const timer = setTimeout(() => {
      stop.abort(
        new SvcError(
          ErrorCode.CONNECTION_TIMEOUT,
          `connection timeout: no SSH session with ${options.host}:${options.port} within ${options.connTimeoutMs} ms`,
        ),
      );
    }, options.connTimeoutMs);
    const onAbort = (): void => stop.abort(signal === undefined ? cancelled() : abortError(signal));
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const jumps = options.jumpHosts ?? [];
      const hops: readonly SshHop[] = [...jumps, options];
      let sock: Duplex | undefined;
      for (const [i, hop] of hops.entries()) {
        const isDevice = i === hops.length - 1;
        const label = isDevice ? `${hop.host}:${hop.port}` : `jump host ${hop.host}:${hop.port}`;
        const client = new ssh2.Client();
        clients.push(client);
        await untilStopped(
          login(client, hop, {
            label,
            sock,
            algorithms: options.algorithms,
            connTimeoutMs: options.connTimeoutMs,
            onHandshake: isDevice ? options.onHandshake : undefined,
          }),
          stop.signal,
        );
        const next = hops[i + 1];
        if (next !== undefined) {
          sock = await untilStopped(forward(client, label, next), stop.signal);
          options.onJumpPassed?.(i);
        }
      }
      const device = clients[clients.length - 1]!;
      const channel = await untilStopped(
        openShell(device, options.cols ?? 511, options.rows ?? 200),
        stop.signal,
      );
      return new SshSession(device, channel, clients.slice(0, -1));
    } catch (err) {
      for (const client of clients.reverse()) {
        client.removeAllListeners('ready');
        client.on('error', () => undefined); // late errors after we gave up are expected
        client.end();
        client.destroy();
      }
      throw err instanceof SvcError ? err : SvcError.from(err);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** The text received and not consumed yet, as the readers see it (linear reads). */
  get output(): TerminalText {
    return this.term;
  }

  get isClosed(): boolean {
    return this.closedError !== null;
  }

  write(data: string): void {
    if (this.closedError !== null) throw this.closedError;
    this.tap?.sent(data);
    this.channel.write(data);
  }

  /** Forgets any unread output (stale text before a new command). */
  clear(): void {
    this.term.clear();
  }

  consume(n: number): void {
    this.term.consume(n);
  }

  /** Removes the current, unterminated line (a paging prompt that was answered). */
  dropLastLine(): void {
    this.term.dropLastLine();
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
            result = test(this.term);
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

  /** Closes the connection (then the jump hosts') and waits (briefly) for the socket to go. */
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
    for (const jump of [...this.jumps].reverse()) jump.end();
  }

  /** Drops the connection without a goodbye. */
  destroy(): void {
    this.markClosed(new SvcError(ErrorCode.SESSION_DROPPED, 'the session was closed'));
    this.client.destroy();
    for (const jump of this.jumps) jump.destroy();
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

interface LoginContext {
  /** `host:port` for the device, `jump host host:port` for a bastion (error texts). */
  label: string;
  /** The forwarded channel to run SSH over (a hop behind a jump host). */
  sock: Duplex | undefined;
  algorithms: SshAlgorithms | undefined;
  connTimeoutMs: number;
  onHandshake: (() => void) | undefined;
}

/** Resolves once `client` is logged in to `hop`; rejects with the precise SvcError. */
function login(client: Client, hop: SshHop, ctx: LoginContext): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const finish = (err: SvcError | null): void => {
      if (settled) return;
      settled = true;
      if (err === null) resolve();
      else reject(err);
    };
    const key = hop.privateKey ?? null;
    if (key !== null) {
      // Read before connecting: a key that cannot be used is the job's fault, not the device's.
      const parsed = ssh2.utils.parseKey(key, hop.passphrase ?? undefined);
      if (parsed instanceof Error) {
        finish(
          new SvcError(
            ErrorCode.SSH_KEY_INVALID,
            `the private key for user ${hop.username} on ${ctx.label} cannot be read: ${keyProblem(parsed, hop.passphrase)}`,
          ),
        );
        return;
      }
    }
    // Needed only until the handshake ends (null after): ssh2 keeps the debug callback (and so
    // this scope) for the connection's life, and the offer lines are a few KiB per session.
    let offers: NegotiationLog | null = new NegotiationLog();
    let authFailed = false;
    // A refused host key ends the handshake; its own error says why, not the library's.
    let hostKeyError: SvcError | null = null;
    client.on('connect', () => {
      // Without no-delay every command waits on Nagle + delayed ACK (about 40 ms each). A hop
      // over a forwarded channel has no socket of its own; its jump host's socket has it set.
      client.setNoDelay(true);
    });
    client.on('handshake', () => {
      offers = null;
      ctx.onHandshake?.();
    });
    client.on('keyboard-interactive', (_name, _instr, _lang, prompts, answer) => {
      answer(keyboardAnswers(prompts, hop.password));
    });
    client.on('error', (err: Error & { level?: string; code?: string }) => {
      if (err.level === 'client-authentication') authFailed = true;
      finish(
        hostKeyError ??
          offers?.failure(err, ctx.label) ??
          connectError(err, ctx.label, hop.username, authFailed),
      );
    });
    client.on('close', () => {
      finish(
        hostKeyError ??
          new SvcError(
            ErrorCode.SESSION_DROPPED,
            ctx.label.startsWith('jump host')
              ? `the ${ctx.label} closed the connection during login`
              : `the device ${ctx.label} closed the connection during login`,
          ),
      );
    });
    client.on('ready', () => finish(null));
    const verify = hop.verifyHostKey;
    const tried = { key: false, password: false };
    const config: ConnectConfig = {
      ...(ctx.sock !== undefined
        ? { sock: ctx.sock }
        : { host: hop.address ?? hop.host, port: hop.port }),
      username: hop.username,
      tryKeyboard: true,
      ...(ctx.algorithms !== undefined ? { algorithms: ctx.algorithms } : {}),
      ...(verify
        ? {
            hostVerifier: (hostKey: Buffer, accept: (ok: boolean) => void) => {
              verify(hostKey).then(
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
        const step = nextAuthStep(methodsLeft ?? null, tried.password, {
          hasPassword: hop.password !== '',
          hasKey: key !== null,
          keyTried: tried.key,
        });
        if (step === 'publickey') {
          tried.key = true;
          return {
            type: 'publickey',
            username: hop.username,
            key: key!,
            ...(hop.passphrase != null ? { passphrase: hop.passphrase } : {}),
          };
        }
        if (step === 'password') {
          tried.password = true;
          return { type: 'password', username: hop.username, password: hop.password };
        }
        if (step === 'keyboard-interactive') tried.password = true;
        return step;
      },
      // Only the handshake lines: what each side offered, for SSH_NEGOTIATION_FAILED.
      debug: (line: string) => {
        offers?.record(line);
      },
      // Our own timer bounds the whole login; ssh2's would only cover part of it.
      readyTimeout: ctx.connTimeoutMs + 1000,
      keepaliveInterval: 0,
    };
    try {
      client.connect(config);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      finish(
        /^Unsupported algorithm/.test(message)
          ? new SvcError(
              ErrorCode.SSH_NEGOTIATION_FAILED,
              `SSH negotiation with ${ctx.label} not started: ${message} (not supported by the service)`,
            )
          : new SvcError(ErrorCode.HOST_UNREACHABLE, `cannot connect to ${ctx.label}: ${message}`),
      );
    }
  });
}

/** Why a private key could not be read, without any of its text. */
function keyProblem(err: Error, passphrase: string | null | undefined): string {
  if (/passphrase/i.test(err.message)) {
    return passphrase ? 'wrong passphrase' : 'the key is encrypted and no passphrase was given';
  }
  return /unsupported/i.test(err.message)
    ? 'unsupported key format (PEM or OpenSSH RSA, ECDSA or Ed25519 keys are read)'
    : 'malformed key';
}

/** Opens a `direct-tcpip` channel from a logged-in jump host to the next hop. */
function forward(client: Client, label: string, next: SshHop): Promise<Duplex> {
  const target = next.address ?? next.host;
  return new Promise<Duplex>((resolve, reject) => {
    client.forwardOut('127.0.0.1', 0, target, next.port, (err, stream) => {
      if (err !== undefined && err !== null) {
        const why = err.message.replace(/^\(SSH\) /, '');
        reject(
          new SvcError(
            /refused/i.test(why) ? ErrorCode.CONNECTION_REFUSED : ErrorCode.HOST_UNREACHABLE,
            `the ${label} could not reach ${next.host}:${next.port}: ${why}`,
          ),
        );
        return;
      }
      resolve(stream);
    });
  });
}

function openShell(client: Client, cols: number, rows: number): Promise<ClientChannel> {
  return new Promise<ClientChannel>((resolve, reject) => {
    client.shell({ term: 'vt100', cols, rows }, (err, channel) => {
      if (err !== undefined && err !== null) {
        reject(
          new SvcError(ErrorCode.SESSION_DROPPED, `the device refused a shell: ${err.message}`),
        );
        return;
      }
      resolve(channel);
    });
  });
}

/** `work`, unless `signal` aborts first (then its SvcError reason). */
function untilStopped<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(abortError(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

/** What the SSH library logs of one side's offer, and the kind its failure names. */
const OFFER_LINE =
  /^Handshake: \((local|remote)\) (KEX method|Host key format|C->S cipher|S->C cipher|C->S MAC|S->C MAC): (.*)$/;
const FAILURE_KIND: readonly [RegExp, string, string][] = [
  [/key exchange/i, 'KEX method', 'key exchange (kex)'],
  [/host key/i, 'Host key format', 'host key (serverHostKey)'],
  [/C->S cipher/, 'C->S cipher', 'cipher'],
  [/S->C cipher/, 'S->C cipher', 'cipher'],
  [/C->S MAC/, 'C->S MAC', 'MAC (hmac)'],
  [/S->C MAC/, 'S->C MAC', 'MAC (hmac)'],
];
/** Markers in the kex list that are not algorithms (extension and strict-kex signals). */
const NOT_ALGORITHMS = /^(?:ext-info-[cs]|kex-strict-[cs]-v00@openssh\.com)$/;

/**
 * The lists each side offered during one handshake, read from the SSH library's debug lines,
 * so that a failed negotiation says what the service and the device had to choose from.
 */
class NegotiationLog {
  private readonly offers = new Map<string, string[]>();

  record(line: string): void {
    const m = OFFER_LINE.exec(line);
    if (m === null) return;
    const names = m[3]!.split(',').filter((a) => a !== '' && !NOT_ALGORITHMS.test(a));
    this.offers.set(`${m[1]!} ${m[2]!}`, names);
  }

  /** SSH_NEGOTIATION_FAILED for a handshake that found no common algorithm, else null. */
  failure(err: Error & { level?: string }, label: string): SvcError | null {
    if (err.level !== 'handshake' || !/no matching/i.test(err.message)) return null;
    const kind = FAILURE_KIND.find(([p]) => p.test(err.message));
    const ours = kind ? this.offers.get(`local ${kind[1]}`) : undefined;
    const theirs = kind ? this.offers.get(`remote ${kind[1]}`) : undefined;
    const side = label.startsWith('jump host') ? `the ${label}` : `the device ${label}`;
    const what = kind?.[2] ?? 'algorithm';
    const list = (names: string[] | undefined) => (names ? names.join(', ') : 'unknown');
    return new SvcError(
      ErrorCode.SSH_NEGOTIATION_FAILED,
      `SSH negotiation with ${side} failed: no common ${what} algorithm; the service offered: ${list(ours)}; ${side} offered: ${list(theirs)}. Old devices need ssh.profile "legacy" (or SSH_PROFILE) or ssh.algorithms.`,
    );
  }
}

function connectError(
  err: Error & { level?: string; code?: string },
  where: string,
  username: string,
  authFailed: boolean,
): SvcError {
  if (authFailed || err.level === 'client-authentication') {
    return new SvcError(
      ErrorCode.AUTH_FAILED,
      `authentication failed for user ${username} on ${where}`,
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
      `${where.startsWith('jump host') ? 'the' : 'the device'} ${where} reset the connection during login`,
      { cause: err },
    );
  }
  if (err.level === 'handshake') {
    // A protocol failure is not a slow network: retrying the same job meets it again.
    return new SvcError(
      ErrorCode.SSH_NEGOTIATION_FAILED,
      `SSH handshake with ${where} failed: ${err.message}`,
      { cause: err },
    );
  }
  return new SvcError(
    ErrorCode.CONNECTION_TIMEOUT,
    `no SSH session with ${where}: ${err.message}`,
    { cause: err },
  );
}
