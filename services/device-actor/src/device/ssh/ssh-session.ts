import type { Client, ClientChannel } from 'ssh2';
import { SvcError, ErrorCode } from '@svc/proto';
import { abortError, cancelled, untilStopped } from '../abort.js';
import type { SessionTap } from '../transcript.js';
import type { SshAlgorithms, SshHop } from './ssh-connect.js';
import { loginThroughHops } from './ssh-hops.js';
import { TerminalText } from './terminal-text.js';

/**
 * One SSH session of the device layer: the device's connection with one interactive shell, and
 * explicit waits on its output. Beside it: `ssh-hops.ts` (jump hosts) and `ssh-connect.ts` (one
 * hop's transport and login) open it, `ssh-errors.ts` names their failures, `terminal-text.ts`
 * turns the byte stream into the text a person would see, `pager.ts` knows paging prompts.
 * Platform knowledge (prompts, modes, errors) lives in `drivers/`; these files know none of it.
 */

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
  /**
   * Called once the session is open (logged in, shell open) with a promise of its connection's
   * close: its device's claim is kept while it lasts (warm in a pool included).
   */
  onOpen?: (closed: Promise<void>) => void;
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
    const dropped = (): void => this.markClosed('the device closed the session');
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
      const device = await loginThroughHops(options, clients, stop.signal);
      const channel = await untilStopped(
        openShell(device, options.cols ?? 511, options.rows ?? 200),
        stop.signal,
      );
      const session = new SshSession(device, channel, clients.slice(0, -1));
      options.onOpen?.(session.closedPromise);
      return session;
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
    this.markClosed('the session was closed');
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
    this.markClosed('the session was closed');
    this.client.destroy();
    for (const jump of this.jumps) jump.destroy();
  }

  /**
   * The first close says why the session is gone (a message of SESSION_DROPPED, or the abort's
   * own error); the later ones (a close is told by the call, the channel and the connection)
   * build no error: one with its stack per session is enough.
   */
  private markClosed(why: string | SvcError): void {
    if (this.closedError !== null) return;
    const err = typeof why === 'string' ? new SvcError(ErrorCode.SESSION_DROPPED, why) : why;
    this.closedError = err;
    this.waiter?.fail(err);
  }
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
