import ssh2, { type Algorithms, type Connection, type ServerChannel } from 'ssh2';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Server as NetServer, Socket } from 'node:net';
import { generateHostKey, generateRsaHostKey } from './host-key.js';
import {
  loadPlatform,
  repeatedOutput,
  textOf,
  type CatalogEntry,
  type Confirm,
  type PlatformData,
  type Text,
} from './platform-data.js';

/**
 * An SSH network device simulator: an ssh2 `Server` on loopback that behaves like the platform
 * described by `platforms/<platform>.json` (prompts, banner, paging, enable, configuration mode,
 * commit, save, errors, canned command outputs) with faults that tests switch on and off.
 */

/** Faults, settable at start and at run time. A string is a regex matched against a command. */
export interface Faults {
  /** Delay before each command's output (ms). */
  commandLatencyMs?: number;
  /** Output written in chunks of `chunkSize` characters with `delayMs` between them. */
  slowOutput?: { chunkSize: number; delayMs: number } | null;
  /** Typed input echoed one character at a time with this delay (ms). */
  slowEchoMs?: number;
  /** Never answer (true: any command; string: matching commands). */
  hang?: boolean | string;
  /** Answer matching commands only once faults without this one are set. */
  hold?: string;
  /** Close the session on receipt (true: any command; string: matching commands). */
  drop?: boolean | string;
  /** Reject every login. */
  wrongPassword?: boolean;
  /** Stop listening: connections are refused. */
  refuse?: boolean;
  /** Accept the paging-off command but keep paging. */
  ignorePagingOff?: boolean;
}

export interface CommandRecord {
  command: string;
  /** Epoch ms when the device read it. */
  at: number;
}

/** One authentication request the device received, with what the client typed. */
export interface AuthAttempt {
  method: string;
  /** The password sent, or the answers to keyboard-interactive prompts (in prompt order). */
  answers: string[];
}

export interface DeviceStats {
  /** Successful SSH authentications. */
  handshakes: number;
  authFailures: number;
  /** Every authentication request that carried a secret (`none` probes are not listed). */
  authAttempts: AuthAttempt[];
  sessionsOpen: number;
  maxConcurrentSessions: number;
  /** Every command line received, in order (passwords are not commands). */
  commands: CommandRecord[];
  configLines: number;
  saves: number;
  commits: number;
  /** Candidate diffs printed (dry runs). */
  diffs: number;
  /** Candidates discarded with changes in them (`rollback 0`, `abort`). */
  discards: number;
  /** Confirmed commits confirmed in time. */
  confirms: number;
  /** Confirmed commits the device rolled back by itself when their window ended. */
  rollbacks: number;
  /** Every line typed in answer to a question (`[confirm]`, `[yes/no]`), in order. */
  answers: string[];
  /** Every free text entered (a banner), its lines joined with `\n`, delimiter excluded. */
  texts: string[];
}

export interface StartDeviceOptions {
  platform: string;
  hostname?: string;
  /** Default `svc`. */
  username?: string;
  /** Default `svc-demo`. */
  password?: string;
  /** Enable password. Default `svc-enable`. */
  enable?: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (a random free port). */
  port?: number;
  commandLatencyMs?: number;
  faults?: Faults;
  /** Replaces the platform's login banner. */
  banner?: string;
  /**
   * Host key (OpenSSH private key); absent: a key of its own. Devices given the same key are one
   * device to the service (its guards key a device by its pinned host key); a device restarted
   * on the same port must be given the key it had, or the service sees a changed key.
   */
  hostKey?: string;
  /**
   * Sessions counted together with other simulators given the same object: one device reached
   * at several addresses (simulators sharing a `hostKey`) shows how many it holds at once.
   */
  sessionCounter?: SessionCounter;
  /** Login methods offered. Default password and keyboard-interactive. */
  authMethods?: ('password' | 'keyboard-interactive' | 'publickey')[];
  /**
   * Public keys (OpenSSH lines, `ssh-ed25519 AAAA…`) accepted by `publickey` for the user. A
   * device whose `authMethods` is `['publickey']` is a key-only device.
   */
  authorizedKeys?: string[];
  /**
   * Offer only what an old switch offers (kex diffie-hellman-group14-sha1 and group1-sha1,
   * host key ssh-rsa, ciphers aes128-cbc and 3des-cbc, MAC hmac-sha1), with an RSA host key:
   * a client with modern defaults only cannot negotiate with it.
   */
  legacyOnly?: boolean;
  /**
   * Keyboard-interactive prompts in one round; the one that says "password" must be answered
   * with the password, the others may be anything. Default `['Password: ']`.
   */
  keyboardPrompts?: string[];
  /**
   * A chassis context line printed on its own line above every prompt (Junos `{master:0}` on
   * a virtual chassis, `{primary:node0}` on an SRX cluster); in configuration mode it comes
   * before the `[edit]` banner on the same line, as Junos prints `{master:0}[edit]`.
   */
  contextLine?: string;
  /**
   * Catalog commands answered only in privileged mode on this device (some images and the
   * third-party simulators refuse `show version` at the `>` prompt).
   */
  privilegedOnly?: readonly string[];
  /**
   * The password the in-band login of `inbandLogin` platforms accepts; default: the SSH
   * password (a device whose SSH server lets anyone in, as PowerConnect's does, checks here).
   */
  inbandPassword?: string;
  /**
   * Writes the banner line by line and, after a line ending in `#` or `>` (which looks like a
   * prompt while its newline has not arrived), pauses this long before the newline: a slow
   * link splitting the banner where a prompt could be read.
   */
  bannerPauseMs?: number;
  /**
   * A command answered with about `bytes` characters of interface counters (large outputs:
   * `show tech-support`), ending in the line `END-OF-BULK`.
   */
  bulkOutput?: { command: string; bytes: number };
  /**
   * Replaces prompts of the platform (`{hostname}>` on a VRP whose prompt has no brackets,
   * `{hostname}# ` with a trailing space, ...): learning the prompt is tested with these.
   */
  prompts?: Partial<PlatformData['prompts']>;
  /**
   * The enable commands this device accepts (default: the platform's own). Any other form of
   * the platform's (or `enable`) is answered with `unknownText`: an image without that form.
   */
  enableCommands?: readonly string[];
  /** Replaces the platform's answer to an unknown command (`Unknown command`). */
  unknownText?: string;
  /**
   * Scales a confirmed commit's rollback window (default 1): 0.01 makes "1 minute" last 0.6 s,
   * so a test sees the automatic rollback without waiting a minute.
   */
  confirmTimeScale?: number;
}

export interface SimulatedDevice {
  readonly host: string;
  readonly port: number;
  readonly platform: string;
  readonly hostname: string;
  readonly username: string;
  readonly password: string;
  readonly enable: string;
  readonly stats: DeviceStats;
  /** Current mode of the most recent shell: `user`, `enable` or `config`. */
  readonly lastMode: string | null;
  /**
   * Changes left uncommitted in a candidate that outlives sessions (Junos, PAN-OS): applied
   * by nobody, waiting for someone's commit.
   */
  readonly uncommitted: boolean;
  /**
   * The lines a shared candidate holds that no session committed or discarded (Junos): a
   * session that leaves configuration mode, or is cut, with changes leaves them here, and the
   * next `configure` starts from them.
   */
  readonly candidate: readonly string[];
  /** The configuration lines committed so far (through commit options), in order. */
  readonly running: readonly string[];
  /** Whether a confirmed commit waits for its confirmation. */
  readonly confirmPending: boolean;
  /** Resolves once the device has rolled back a confirmed commit by itself (at once if it did). */
  rolledBack(): Promise<void>;
  /** The host key's public half as an OpenSSH line (`ssh-ed25519 AAAA…`). */
  readonly hostPublicKey: string;
  /** Replaces the faults; resolves once a `refuse` change took effect on the listener. */
  setFaults(faults: Faults): Promise<void>;
  resetStats(): void;
  /** Closes the listener and every client session. */
  stop(): Promise<void>;
}

export const DEFAULT_USERNAME = 'svc';
export const DEFAULT_PASSWORD = 'svc-demo';
export const DEFAULT_ENABLE = 'svc-enable';

/** What a legacy-only device offers (see `StartDeviceOptions.legacyOnly`). */
export const LEGACY_ONLY_ALGORITHMS: Algorithms = {
  kex: ['diffie-hellman-group14-sha1', 'diffie-hellman-group1-sha1'],
  serverHostKey: ['ssh-rsa'],
  cipher: ['aes128-cbc', '3des-cbc'],
  hmac: ['hmac-sha1'],
  compress: ['none'],
};

function emptyStats(): DeviceStats {
  return {
    handshakes: 0,
    authFailures: 0,
    authAttempts: [],
    sessionsOpen: 0,
    maxConcurrentSessions: 0,
    commands: [],
    configLines: 0,
    saves: 0,
    commits: 0,
    diffs: 0,
    discards: 0,
    confirms: 0,
    rollbacks: 0,
    answers: [],
    texts: [],
  };
}

function matches(fault: boolean | string | undefined, line: string): boolean {
  if (fault === undefined || fault === false) return false;
  if (fault === true) return true;
  return new RegExp(fault).test(line);
}

interface DeviceState {
  data: PlatformData;
  hostname: string;
  username: string;
  password: string;
  enable: string;
  banner: string | undefined;
  contextLine: string | undefined;
  privilegedOnly: ReadonlySet<string>;
  bannerPauseMs: number;
  inbandPassword: string;
  bulkOutput: { command: string; bytes: number } | undefined;
  prompts: PlatformData['prompts'];
  enableCommands: readonly string[];
  unknownText: string | undefined;
  faults: Faults;
  stats: DeviceStats;
  lastMode: string | null;
  /** A shared candidate holds uncommitted changes (see `SimulatedDevice.uncommitted`). */
  uncommitted: boolean;
  /** See `SimulatedDevice.candidate`. */
  candidate: string[];
  running: string[];
  /** The confirmed commit waiting for its confirmation, or null. */
  pendingConfirm: {
    previous: string[];
    timer: NodeJS.Timeout;
    session: string | null;
    minutes: number;
  } | null;
  confirmTimeScale: number;
  /** Waiting for the next automatic rollback. */
  rollbackWaiters: (() => void)[];
}

/**
 * Every address and port handed to a device of this process. Each device has its own host key
 * (the service keys its guards by the pinned key), so a port the OS hands out again to another
 * device would show a key other than the one pinned for it: a device never takes such a port
 * unless a test names it (a restart on the same port passes the same `hostKey`).
 */
const handedOut = new Set<string>();

/** The parsed public keys a device accepts; throws on a line that is not a public key. */
function parseAuthorizedKeys(lines: readonly string[]): ssh2.ParsedKey[] {
  return lines.map((line) => {
    const key = ssh2.utils.parseKey(line);
    if (key instanceof Error) throw key;
    return Array.isArray(key) ? (key[0] as ssh2.ParsedKey) : key;
  });
}

/** Sessions open now and the most ever open at once, across the simulators that share it. */
export interface SessionCounter {
  open: number;
  max: number;
}

export async function startDevice(options: StartDeviceOptions): Promise<SimulatedDevice> {
  const data = loadPlatform(options.platform);
  const state: DeviceState = {
    data,
    hostname: options.hostname ?? data.defaultHostname,
    username: options.username ?? DEFAULT_USERNAME,
    password: options.password ?? DEFAULT_PASSWORD,
    enable: options.enable ?? DEFAULT_ENABLE,
    banner: options.banner,
    contextLine: options.contextLine,
    privilegedOnly: new Set(options.privilegedOnly ?? []),
    bannerPauseMs: options.bannerPauseMs ?? 0,
    inbandPassword: options.inbandPassword ?? options.password ?? DEFAULT_PASSWORD,
    bulkOutput: options.bulkOutput,
    prompts: { ...data.prompts, ...options.prompts },
    enableCommands: options.enableCommands ?? (data.enable === null ? [] : [data.enable.command]),
    unknownText: options.unknownText,
    faults: { ...options.faults },
    stats: emptyStats(),
    lastMode: null,
    uncommitted: false,
    candidate: [],
    running: [],
    pendingConfirm: null,
    confirmTimeScale: options.confirmTimeScale ?? 1,
    rollbackWaiters: [],
  };
  if (options.commandLatencyMs !== undefined)
    state.faults.commandLatencyMs = options.commandLatencyMs;
  const host = options.host ?? '127.0.0.1';
  const clients = new Set<Connection>();
  // Its own key unless the test gives one: one key is one device to the service's guards.
  const hostKey =
    options.hostKey ?? (options.legacyOnly === true ? generateRsaHostKey() : generateHostKey());
  const authorized = parseAuthorizedKeys(options.authorizedKeys ?? []);
  const parsedKey = ssh2.utils.parseKey(hostKey);
  if (parsedKey instanceof Error) throw parsedKey;
  const hostPublicKey = `${parsedKey.type} ${parsedKey.getPublicSSH().toString('base64')}`;
  const server = new ssh2.Server(
    {
      hostKeys: [hostKey],
      ...(options.legacyOnly === true ? { algorithms: LEGACY_ONLY_ALGORITHMS } : {}),
    },
    (conn) => {
      clients.add(conn);
      // Nagle + delayed ACK would add ~40 ms per command (small writes wait for the peer's ACK).
      // The server-side client object has setNoDelay at runtime; @types/ssh2 only declares it on
      // the Client class.
      (conn as unknown as { setNoDelay(noDelay: boolean): void }).setNoDelay(true);
      let ready = false;
      conn.on('error', () => undefined); // clients vanish mid-handshake in failure tests
      conn.on('close', () => {
        clients.delete(conn);
        if (ready) state.stats.sessionsOpen--;
        if (ready && options.sessionCounter) options.sessionCounter.open--;
      });
      conn.on('authentication', (ctx) => {
        const methods = options.authMethods ?? ['password', 'keyboard-interactive'];
        const accept = (ok: boolean): void => {
          if (ok && ctx.username === state.username && state.faults.wrongPassword !== true) {
            ctx.accept();
          } else {
            state.stats.authFailures++;
            ctx.reject(methods);
          }
        };
        if (ctx.method === 'publickey' && methods.includes('publickey')) {
          const offered = ctx.key.data;
          const known = authorized.find((k) => k.getPublicSSH().equals(offered));
          if (known === undefined) {
            ctx.reject(methods);
            return;
          }
          // Without a signature the client only asks whether this key would do.
          if (ctx.signature === undefined || ctx.blob === undefined) {
            ctx.accept();
            return;
          }
          state.stats.authAttempts.push({ method: ctx.method, answers: [] });
          accept(known.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true);
        } else if (ctx.method === 'password' && methods.includes('password')) {
          state.stats.authAttempts.push({ method: ctx.method, answers: [ctx.password] });
          accept(ctx.password === state.password);
        } else if (ctx.method === 'keyboard-interactive' && methods.includes(ctx.method)) {
          const prompts = options.keyboardPrompts ?? ['Password: '];
          ctx.prompt(
            prompts.map((prompt) => ({ prompt, echo: false })),
            (answers) => {
              state.stats.authAttempts.push({ method: ctx.method, answers: [...answers] });
              const at = prompts.findIndex((p) => /password/i.test(p));
              accept(at >= 0 && answers[at] === state.password);
            },
          );
        } else {
          ctx.reject(methods);
        }
      });
      conn.on('ready', () => {
        ready = true;
        state.stats.handshakes++;
        state.stats.sessionsOpen++;
        state.stats.maxConcurrentSessions = Math.max(
          state.stats.maxConcurrentSessions,
          state.stats.sessionsOpen,
        );
        const counter = options.sessionCounter;
        if (counter) counter.max = Math.max(counter.max, ++counter.open);
        conn.on('session', (acceptSession) => {
          const session = acceptSession();
          session.on('pty', (acceptPty) => acceptPty());
          session.on('window-change', (acceptWc) => acceptWc?.());
          session.on('env', (acceptEnv) => acceptEnv?.());
          session.on('shell', (acceptShell) => {
            const stream = acceptShell();
            const shell = new Shell(state, stream, conn);
            shell.run().catch(() => stream.close());
          });
        });
      });
    },
  );
  // ssh2 names a connection only once the client sent its identification line: a socket that
  // never sent one would keep server.close() waiting for ever, so stop() cuts raw sockets too.
  const sockets = new Set<Socket>();
  (server as unknown as { _srv: NetServer })._srv.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  let port = options.port ?? 0;
  const listen = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      server.once('error', onError);
      server.listen(port, host, () => {
        server.off('error', onError);
        resolve();
      });
    });
  let listening = state.faults.refuse !== true;
  // A port another device of this process had is given back and another asked for (the OS
  // starts its search for a free port at a random place).
  for (let attempt = 0; ; attempt++) {
    await listen();
    const address = server.address();
    if (address !== null && typeof address === 'object') port = address.port;
    if ((options.port ?? 0) !== 0 || !handedOut.has(`${host}:${port}`) || attempt >= 50) break;
    await new Promise<void>((r) => server.close(() => r()));
    port = 0;
  }
  handedOut.add(`${host}:${port}`);
  // Reserve a port by listening once, then close: connections are refused until lifted.
  if (!listening) await new Promise<void>((r) => server.close(() => r()));
  let pending: Promise<void> = Promise.resolve();

  const device: SimulatedDevice = {
    host,
    port,
    platform: options.platform,
    // A `hostname` line renames the device: tests read the name it has now.
    get hostname() {
      return state.hostname;
    },
    username: state.username,
    password: state.password,
    enable: state.enable,
    get stats() {
      return state.stats;
    },
    get lastMode() {
      return state.lastMode;
    },
    get uncommitted() {
      return state.uncommitted;
    },
    get candidate() {
      return state.candidate;
    },
    get running() {
      return state.running;
    },
    get confirmPending() {
      return state.pendingConfirm !== null;
    },
    rolledBack() {
      if (state.stats.rollbacks > 0) return Promise.resolve();
      return new Promise<void>((r) => state.rollbackWaiters.push(r));
    },
    hostPublicKey,
    setFaults(faults: Faults) {
      state.faults = { ...faults };
      const refuse = faults.refuse === true;
      if (refuse && listening) {
        listening = false;
        pending = pending.then(() => new Promise<void>((r) => server.close(() => r())));
      } else if (!refuse && !listening) {
        listening = true;
        pending = pending.then(listen);
      }
      return pending;
    },
    resetStats() {
      const open = state.stats.sessionsOpen;
      state.stats = emptyStats();
      state.stats.sessionsOpen = open;
    },
    async stop() {
      if (state.pendingConfirm !== null) clearTimeout(state.pendingConfirm.timer);
      await pending.catch(() => undefined);
      for (const c of clients) c.end();
      const closed = new Promise<void>((r) => {
        if (!listening) {
          r();
          return;
        }
        listening = false;
        server.close(() => r());
      });
      // end() asks politely; anything still open after a moment is cut, so that the server's
      // close (which waits for every connection) always ends.
      await sleep(10);
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
  return device;
}

type Mode = 'user' | 'enable' | 'config';

interface Frame {
  name: string;
  kind: 'config' | 'edit';
}

/** One interactive shell on the simulated device. */
class Shell {
  private inbox = '';
  private notify: (() => void) | null = null;
  private closed = false;
  private skipLf = false;
  private mode: Mode;
  private stack: Frame[] = [];
  private paging: boolean;
  private pendingChanges = false;
  /** Configuration lines typed since the last commit or discard (the candidate's diff). */
  private changes: string[] = [];
  /** The configuration session this session is in (EOS), or null. */
  private session: string | null = null;
  /** SmartAX asks `{ <cr>||<K> }:` before each output until `undo smart`. */
  private questions: boolean;
  /** Commands run in this shell (EXOS prompts count them). */
  private counter = 1;

  constructor(
    private readonly dev: DeviceState,
    private readonly stream: ServerChannel,
    private readonly conn: Connection,
  ) {
    this.mode = dev.data.loginMode;
    this.paging = dev.data.paging !== null;
    this.questions = dev.data.commandQuestion !== undefined;
    stream.on('data', (d: Buffer) => {
      this.inbox += d.toString('utf8');
      this.wake();
    });
    stream.on('close', () => {
      this.closed = true;
      // A session cut in configuration mode leaves its changes in a shared candidate (Junos).
      if (this.mode === 'config') this.keepSharedCandidate();
      this.wake();
    });
  }

  private get data(): PlatformData {
    return this.dev.data;
  }

  private wake(): void {
    const n = this.notify;
    this.notify = null;
    n?.();
  }

  private write(text: string): void {
    if (!this.closed) this.stream.write(text);
  }

  private fill(text: string, groups: readonly string[] = []): string {
    return text
      .replaceAll('{hostname}', this.dev.hostname)
      .replaceAll('{username}', this.dev.username)
      .replace(/\$(\d)/g, (_m, d: string) => groups[Number(d)] ?? '');
  }

  private async nextChar(): Promise<string | null> {
    while (this.inbox.length === 0) {
      if (this.closed) return null;
      await new Promise<void>((r) => (this.notify = r));
    }
    const c = this.inbox[0] ?? '';
    this.inbox = this.inbox.slice(1);
    return c;
  }

  private async echo(text: string): Promise<void> {
    const ms = this.dev.faults.slowEchoMs ?? 0;
    if (ms > 0) await sleep(ms);
    this.write(text);
  }

  /** Reads one line; echoes it unless it is a password. */
  private async readLine(echo: boolean): Promise<string | null> {
    let line = '';
    for (;;) {
      const c = await this.nextChar();
      if (c === null) return null;
      if (this.skipLf && c === '\n') {
        this.skipLf = false;
        continue;
      }
      this.skipLf = false;
      if (c === '\r' || c === '\n') {
        this.skipLf = c === '\r';
        if (echo) await this.echo('\r\n');
        else this.write('\r\n');
        return line;
      }
      if (c === '\x7f' || c === '\b') {
        if (line.length > 0) {
          line = line.slice(0, -1);
          if (echo) this.write('\b \b');
        }
        continue;
      }
      line += c;
      if (echo) await this.echo(c);
    }
  }

  private prompt(): string {
    const p = this.dev.prompts;
    let text: string;
    if (this.mode === 'config') {
      const top = this.stack[this.stack.length - 1];
      const session = this.data.config?.session;
      text =
        top !== undefined && p.sub !== undefined
          ? p.sub.replace('{sub}', top.name)
          : this.session !== null && session !== undefined
            ? session.prompt.replace('{sub}', this.session)
            : (p.config ?? p.enable);
    } else {
      text = this.mode === 'user' ? p.user : p.enable;
    }
    let out = this.fillPrompt(text).replaceAll('{counter}', String(this.counter));
    const ctx = this.dev.contextLine ?? '';
    const prefix = this.mode === 'config' ? this.data.config?.promptPrefix : undefined;
    if (prefix !== undefined) {
      // The banner starts with its own line break: the context goes right after it.
      const at = prefix.startsWith('\r\n') ? 2 : 0;
      out = `${prefix.slice(0, at)}${ctx}${prefix.slice(at)}\r\n${out}`;
    } else if (ctx !== '') {
      out = `\r\n${ctx}\r\n${out}`;
    }
    return this.data.ansi === true ? `\x1b[24;1H\x1b[2K${out}\x1b[?25h` : out;
  }

  /** A prompt template filled in; configuration prompts shorten a long name as the device does. */
  private fillPrompt(template: string): string {
    const cut = this.mode === 'config' ? this.data.config?.promptTruncate : undefined;
    if (cut === undefined) return this.fill(template);
    const name = this.dev.hostname.slice(0, cut.hostname ?? Infinity);
    const at = template.indexOf('{hostname}');
    if (at < 0) return this.fill(template);
    const base = this.fill(template.slice(0, at)) + name;
    const rest = this.fill(template.slice(at + '{hostname}'.length));
    return base.slice(0, cut.base ?? Infinity) + rest;
  }

  /** Writes command output (lines end in CRLF), paging and slowing it as configured. */
  private async output(text: string): Promise<void> {
    if (text === '') return;
    const lines = text.split('\n');
    const pg = this.data.paging;
    if (pg !== null && this.paging && lines.length > pg.lines) {
      for (let i = 0; i < lines.length; i += pg.lines) {
        await this.send(lines.slice(i, i + pg.lines).join('\r\n') + '\r\n');
        if (i + pg.lines >= lines.length) break;
        this.write(
          pg.prompt.replace('{from}', String(i + 1)).replace('{to}', String(i + pg.lines)),
        );
        const key = await this.nextChar();
        if (key === null) return;
        this.write(pg.erase);
        if (key === 'q' || key === '\x03') return;
      }
      return;
    }
    await this.send(lines.join('\r\n') + '\r\n');
  }

  private async send(text: string): Promise<void> {
    const slow = this.dev.faults.slowOutput;
    if (slow === null || slow === undefined) {
      this.write(text);
      return;
    }
    for (let i = 0; i < text.length; i += slow.chunkSize) {
      this.write(text.slice(i, i + slow.chunkSize));
      await sleep(slow.delayMs);
    }
  }

  async run(): Promise<void> {
    const banner = this.dev.banner ?? textOf(this.data.banner);
    if (banner !== '' && this.dev.bannerPauseMs > 0) {
      for (const line of this.fill(banner).split('\n')) {
        this.write(line);
        if (/[#>]\s*$/.test(line)) await sleep(this.dev.bannerPauseMs);
        this.write('\r\n');
      }
    } else if (banner !== '') {
      this.write(this.fill(banner).split('\n').join('\r\n') + '\r\n');
    }
    if (!(await this.inbandLogin())) return;
    if (this.data.pressAnyKey === true) {
      this.write(this.data.pressAnyKeyPrompt ?? 'Press any key to continue');
      if ((await this.nextChar()) === null) return;
      this.write('\r\x1b[2K');
    }
    for (;;) {
      this.dev.lastMode = this.mode;
      this.write(this.prompt());
      const line = await this.readLine(true);
      if (line === null) return;
      const keepGoing = await this.handle(line.trim());
      if (!keepGoing) return;
    }
  }

  /** The in-band login of `inbandLogin` platforms; false when the session ended. */
  private async inbandLogin(): Promise<boolean> {
    const login = this.data.inbandLogin;
    if (login === undefined) return true;
    for (let attempt = 0; attempt < 3; attempt++) {
      this.write(login.usernamePrompt);
      const user = await this.readLine(true);
      if (user === null) return false;
      this.write(login.passwordPrompt);
      const password = await this.readLine(false);
      if (password === null) return false;
      if (user.trim() === this.dev.username && password === this.dev.inbandPassword) return true;
      this.dev.stats.authFailures++;
      this.write(`${textOf(login.failure)}\r\n`);
    }
    this.close();
    return false;
  }

  private close(): void {
    this.closed = true;
    this.stream.close();
    this.conn.end();
  }

  /** Runs one command; false when the session ends. */
  private async handle(cmd: string): Promise<boolean> {
    if (cmd === '') return true;
    this.counter++;
    const faults = this.dev.faults;
    this.dev.stats.commands.push({ command: cmd, at: Date.now() });
    if (matches(faults.drop, cmd)) {
      this.close();
      return false;
    }
    if (matches(faults.hang, cmd)) {
      while (!this.closed) await new Promise<void>((r) => (this.notify = r));
      return false;
    }
    while (!this.closed && matches(this.dev.faults.hold, cmd)) await sleep(20);
    const latency = faults.commandLatencyMs ?? 0;
    if (latency > 0) await sleep(latency);
    const pg = this.data.paging;
    if (pg !== null && pg.off.includes(cmd)) {
      if (faults.ignorePagingOff !== true) this.paging = false;
      await this.output(this.fill(textOf(pg.offOutput)));
      return true;
    }
    const question = this.data.commandQuestion;
    if (question?.off.includes(cmd) === true) {
      this.questions = false;
      return true;
    }
    if (this.data.silent?.includes(cmd) === true) return true;
    if (this.mode === 'config') return this.handleConfig(cmd);
    return this.handleExec(cmd);
  }

  private async handleExec(cmd: string): Promise<boolean> {
    const d = this.data;
    if (['exit', 'quit', 'logout'].includes(cmd) && d.config?.up?.includes(cmd) !== true) {
      this.close();
      return false;
    }
    if (d.enable !== null && this.dev.enableCommands.includes(cmd)) {
      if (this.mode === 'enable') return true;
      if (d.enable.usernamePrompt !== undefined) {
        this.write(d.enable.usernamePrompt);
        if ((await this.readLine(true)) === null) return false;
      }
      if (d.enable.passwordPrompt === '') {
        this.mode = 'enable';
        return true;
      }
      this.write(d.enable.passwordPrompt);
      const secret = await this.readLine(false);
      if (secret === null) return false;
      if (secret === this.dev.enable) this.mode = 'enable';
      else await this.output(textOf(d.enable.failure));
      return true;
    }
    const cfg = d.config;
    if (cfg !== null && cfg.style === 'mode' && cmd === cfg.enter) {
      if (this.mode === 'user' && d.enable !== null) return this.unknown(cmd);
      this.mode = 'config';
      this.stack = [];
      if (cfg.candidate === 'shared') {
        // The shared candidate: what earlier sessions left in it is this session's too.
        this.changes = [...this.dev.candidate];
        this.pendingChanges = this.changes.length > 0;
      }
      await this.output(this.fill(textOf(cfg.enterOutput)));
      return true;
    }
    const sessionEnter =
      cfg?.session === undefined ? null : new RegExp(cfg.session.enter).exec(cmd);
    if (cfg !== null && sessionEnter !== null && this.mode === 'enable') {
      this.mode = 'config';
      this.stack = [];
      this.session = sessionEnter[1] ?? 'session';
      this.changes = [];
      return true;
    }
    if (cfg !== null && cfg.style === 'blocks' && this.pushSubmode(cmd)) {
      this.mode = 'config';
      return true;
    }
    if (d.save !== null && d.save.commands.includes(cmd) && this.mode === 'enable') {
      for (const c of d.save.confirms ?? []) {
        this.write(c.prompt);
        if ((await this.readLine(true)) === null) return false;
      }
      this.dev.stats.saves++;
      await this.output(this.fill(textOf(d.save.output)));
      return true;
    }
    const probe = d.confirmedCommit?.pending;
    if (probe !== undefined && cmd === probe.command) {
      const waiting = this.dev.pendingConfirm;
      await this.output(
        this.fill(textOf(waiting === null ? probe.idle : probe.waiting))
          .replaceAll('{session}', waiting?.session ?? '')
          .replaceAll('{timer}', String(waiting?.minutes ?? '')),
      );
      return true;
    }
    const bulk = this.dev.bulkOutput;
    if (bulk !== undefined && cmd === bulk.command) {
      await this.output(bulkText(bulk.bytes));
      return true;
    }
    const hit = this.entry(cmd);
    if (hit === undefined) return this.unknown(cmd);
    if (this.questions && this.data.commandQuestion !== undefined) {
      this.write(this.data.commandQuestion.prompt);
      if ((await this.readLine(true)) === null) return false;
    }
    const go = await this.ask(hit.entry.confirm ?? []);
    if (go === null) return false;
    if (go) await this.output(this.outputOf(hit));
    return true;
  }

  /** Catalog output for `cmd`, honouring privileged-only entries. */
  private lookup(cmd: string): string | undefined {
    const e = this.entry(cmd);
    return e === undefined ? undefined : this.outputOf(e);
  }

  /** The output of a catalog hit: placeholders filled, a `repeatTo` output grown to size. */
  private outputOf(hit: { entry: CatalogEntry; groups: string[] }): string {
    const text = this.fill(textOf(hit.entry.output), hit.groups);
    return hit.entry.repeatTo === undefined
      ? text
      : repeatedOutput(text, Number(this.fill(hit.entry.repeatTo, hit.groups)));
  }

  private entry(cmd: string): { entry: CatalogEntry; groups: string[] } | undefined {
    for (const e of this.data.commands) {
      const groups = matchEntry(e, cmd);
      if (groups === null) continue;
      const privileged = e.privileged === true || this.dev.privilegedOnly.has(cmd);
      if (privileged && this.mode === 'user') return undefined;
      return { entry: e, groups };
    }
    return undefined;
  }

  /**
   * Asks each question and reads its answer. False when an answer cancelled the command (its
   * `cancelled` text printed), null when the session ended.
   */
  private async ask(questions: readonly Confirm[]): Promise<boolean | null> {
    for (const q of questions) {
      this.write(this.fill(q.prompt));
      const answer = await this.readLine(true);
      if (answer === null) return null;
      this.dev.stats.answers.push(answer);
      if (!new RegExp(q.accept ?? '^(?:[yY].*)?$').test(answer.trim())) {
        await this.output(this.fill(textOf(q.cancelled)));
        return false;
      }
    }
    return true;
  }

  private async unknown(
    cmd: string,
    template: Text = this.dev.unknownText ?? this.data.errors.unknown,
  ): Promise<boolean> {
    const promptLen = this.fill(
      this.mode === 'user' ? this.dev.prompts.user : this.dev.prompts.enable,
    ).length;
    const caret = `${' '.repeat(promptLen + Math.max(0, cmd.length - 1))}^`;
    const text = textOf(template)
      .replaceAll('{caret}', caret)
      .replaceAll('{cmd0}', cmd.split(/\s+/)[0] ?? cmd)
      .replaceAll('{cmd}', cmd);
    await this.output(text);
    return true;
  }

  /**
   * The commit forms of `PlatformData.confirmedCommit`; false when `cmd` is none of them. A
   * commit confirms a pending confirmed commit (EOS: only in that commit's session).
   */
  private async confirmedCommit(
    cmd: string,
    cc: NonNullable<PlatformData['confirmedCommit']>,
  ): Promise<boolean> {
    const dev = this.dev;
    const pendingHere =
      dev.pendingConfirm !== null &&
      (dev.pendingConfirm.session === null || dev.pendingConfirm.session === this.session);
    const confirm = (): void => {
      if (!pendingHere || dev.pendingConfirm === null) return;
      clearTimeout(dev.pendingConfirm.timer);
      dev.pendingConfirm = null;
      dev.stats.confirms++;
    };
    if (cc.check !== undefined && cmd === cc.check) {
      if (await this.refuseCommit()) return true;
      confirm();
      await this.output(this.fill(textOf(cc.checkOutput ?? '')));
      return true;
    }
    const m = new RegExp(cc.commit).exec(cmd);
    if (m === null) return false;
    if (await this.refuseCommit()) return true;
    const timer = m.groups?.['timer'];
    if (
      this.changes.length === 0 &&
      !this.pendingChanges &&
      !pendingHere &&
      cc.nothing !== undefined
    ) {
      await this.output(this.fill(textOf(cc.nothing)));
      return true;
    }
    confirm();
    const previous = [...dev.running];
    dev.running.push(...this.changes);
    dev.stats.commits++;
    this.changes = [];
    this.pendingChanges = false;
    dev.uncommitted = false;
    dev.candidate = [];
    let text = textOf(cc.output);
    if (timer !== undefined) {
      const minutes =
        cc.unit === 'minutes'
          ? Number(timer)
          : cc.unit === 'seconds'
            ? Number(timer) / 60
            : timer.split(':').reduce((acc, n, i) => acc + Number(n) * [60, 1, 1 / 60][i]!, 0);
      const ms = minutes * 60_000 * dev.confirmTimeScale;
      const session = this.session;
      dev.pendingConfirm = {
        previous,
        session,
        minutes,
        timer: setTimeout(() => {
          dev.running = previous;
          dev.pendingConfirm = null;
          dev.stats.rollbacks++;
          for (const w of dev.rollbackWaiters.splice(0)) w();
        }, ms),
      };
      text = textOf(cc.confirmedOutput).replaceAll('{timer}', timer);
    }
    if (cc.leaves === true) {
      this.session = null;
      this.leaveConfig();
    }
    await this.output(this.fill(text));
    return true;
  }

  /** Prints the refusal of `commitRefused` when the candidate holds its line; true then. */
  private async refuseCommit(): Promise<boolean> {
    const refused = this.data.commitRefused;
    if (refused === undefined) return false;
    const line = new RegExp(refused.line);
    if (!this.changes.some((c) => line.test(c))) return false;
    await this.output(this.fill(textOf(refused.output)));
    return true;
  }

  /** A shared candidate keeps this session's uncommitted changes (see `SimulatedDevice.candidate`). */
  private keepSharedCandidate(): void {
    if (this.data.config?.candidate !== 'shared' || !this.pendingChanges) return;
    this.dev.candidate = [...this.changes];
    this.dev.uncommitted = true;
  }

  private pushSubmode(cmd: string): boolean {
    for (const s of this.data.config?.submodes ?? []) {
      const m = new RegExp(s.regex).exec(cmd);
      if (m !== null) {
        // Cisco-like submodes are one level deep: `interface B` inside `interface A` switches.
        if (this.data.config?.style === 'mode') this.stack = [];
        this.stack.push({ name: m[1] ?? '', kind: s.kind ?? 'config' });
        this.pendingChanges = true;
        return true;
      }
    }
    return false;
  }

  private leaveConfig(): void {
    this.mode = 'enable';
    this.stack = [];
  }

  private async handleConfig(cmd: string): Promise<boolean> {
    const d = this.data;
    const cfg = d.config;
    if (cfg === null) return this.handleExec(cmd);
    const blocks = cfg.style === 'blocks';
    if (d.confirmedCommit !== undefined && (await this.confirmedCommit(cmd, d.confirmedCommit))) {
      return true;
    }
    if (d.commit !== null && cmd === d.commit.command) {
      if (await this.refuseCommit()) return true;
      this.dev.stats.commits++;
      this.pendingChanges = false;
      this.dev.uncommitted = false;
      this.dev.candidate = [];
      this.changes = [];
      await this.output(this.fill(textOf(d.commit.output)));
      return true;
    }
    if (d.save?.inConfig === true && d.save.commands.includes(cmd)) {
      for (const c of d.save.confirms ?? []) {
        this.write(c.prompt);
        if ((await this.readLine(true)) === null) return false;
      }
      this.dev.stats.saves++;
      await this.output(this.fill(textOf(d.save.output)));
      return true;
    }
    if (cfg.candidateDiff !== undefined && cmd === cfg.candidateDiff.command) {
      this.dev.stats.diffs++;
      const diff = cfg.candidateDiff;
      const body = this.changes.map((line) => diff.added.replaceAll('{line}', line));
      const text = [textOf(diff.header), ...body, textOf(diff.footer)]
        .filter((l) => l !== '')
        .map((l) => l.replaceAll('{session}', this.session ?? ''));
      await this.output(this.changes.length === 0 ? '' : text.join('\n'));
      return true;
    }
    if (cfg.rollback?.includes(cmd) === true) {
      if (this.changes.length > 0 || this.dev.uncommitted) this.dev.stats.discards++;
      this.changes = [];
      this.pendingChanges = false;
      this.dev.uncommitted = false;
      this.dev.candidate = [];
      await this.output(textOf(cfg.rollbackOutput));
      return true;
    }
    if (cfg.abort?.includes(cmd) === true) {
      if (this.changes.length > 0) this.dev.stats.discards++;
      this.changes = [];
      this.session = null;
      this.pendingChanges = false;
      if (blocks) this.popBlock();
      else this.leaveConfig();
      return true;
    }
    if (cfg.exit.includes(cmd)) {
      if (blocks) {
        this.popBlock();
        return true;
      }
      if (d.commit !== null && this.pendingChanges && cfg.uncommittedPrompt !== undefined) {
        this.write(cfg.uncommittedPrompt);
        const answer = await this.readLine(true);
        if (answer === null) return false;
        const shared = cfg.candidate === 'shared';
        if (/^y/i.test(answer.trim())) {
          if (!shared) this.dev.stats.commits++;
        } else if (!/^n/i.test(answer.trim()) || shared) {
          return true; // cancel (Junos: "no" stays too): stay in configuration mode
        }
        if (!shared) this.pendingChanges = false;
      }
      // A shared candidate keeps what was not committed after the session leaves.
      this.keepSharedCandidate();
      this.pendingChanges = false;
      this.changes = [];
      this.session = null;
      this.leaveConfig();
      return true;
    }
    if (cfg.up?.includes(cmd) === true) {
      if (blocks) {
        // FortiOS `next`: leave the `edit` entry, stay in its `config` block.
        const top = this.stack[this.stack.length - 1];
        if (top?.kind === 'edit') this.stack.pop();
      } else if (this.stack.length > 0) {
        this.stack.pop();
      } else {
        this.leaveConfig();
      }
      return true;
    }
    if (cfg.execPrefix !== undefined && cmd.startsWith(`${cfg.execPrefix} `)) {
      const inner = cmd.slice(cfg.execPrefix.length + 1).trim();
      const hit = this.lookup(inner);
      if (hit === undefined) return this.unknown(cmd);
      await this.output(hit);
      return true;
    }
    const rejectRe = new RegExp(d.configReject ?? '^bogus\\b');
    if (rejectRe.test(cmd)) return this.unknown(cmd, d.errors.configRejected ?? d.errors.unknown);
    const entry = cfg.textEntry === undefined ? null : new RegExp(cfg.textEntry.regex).exec(cmd);
    if (entry !== null && cfg.textEntry !== undefined) {
      const end = entry[1] ?? '';
      this.write(`${this.fill(cfg.textEntry.prompt, [...entry])}\r\n`);
      const text: string[] = [];
      for (;;) {
        const line = await this.readLine(true);
        if (line === null) return false;
        const at = line.indexOf(end);
        if (at >= 0) {
          if (at > 0) text.push(line.slice(0, at));
          break;
        }
        text.push(line);
      }
      this.dev.stats.texts.push(text.join('\n'));
      this.dev.stats.configLines++;
      return true;
    }
    const question = cfg.questions?.find((q) => new RegExp(q.regex).test(cmd));
    if (question !== undefined) {
      const go = await this.ask([question]);
      if (go === null) return false;
      if (!go) return true;
      await this.output(this.fill(textOf(question.output)));
    }
    const warning = cfg.warnings?.find((w) => new RegExp(w.regex).test(cmd));
    if (warning !== undefined) await this.output(textOf(warning.output));
    this.dev.stats.configLines++;
    this.pendingChanges = true;
    this.changes.push(cmd);
    const rename =
      cfg.hostnameCommand === undefined || this.session !== null
        ? null
        : new RegExp(cfg.hostnameCommand).exec(cmd);
    if (rename?.[1] !== undefined) this.dev.hostname = rename[1];
    this.pushSubmode(cmd);
    return true;
  }

  /** FortiOS `end`/`abort`: leave the innermost `config` block (and any `edit` inside it). */
  private popBlock(): void {
    while (this.stack.length > 0) {
      const f = this.stack.pop();
      if (f?.kind === 'config') break;
    }
    if (this.stack.length === 0) this.mode = 'enable';
  }
}

/** About `bytes` characters of counter lines (CRLF counted as two), then `END-OF-BULK`. */
export function bulkText(bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let n = 0; size < bytes; n++) {
    const line = `GigabitEthernet0/${n % 48} ${String(n).padStart(9, '0')} packets input, ${n * 64} bytes, 0 no buffer`;
    lines.push(line);
    size += line.length + 2;
  }
  lines.push('END-OF-BULK');
  return lines.join('\n');
}

function matchEntry(e: CatalogEntry, cmd: string): string[] | null {
  if (e.command !== undefined) return e.command === cmd ? [cmd] : null;
  if (e.regex !== undefined) {
    const m = new RegExp(e.regex).exec(cmd);
    return m === null ? null : Array.from(m, (g) => g ?? '');
  }
  return null;
}

export type { CatalogEntry, PlatformData };
