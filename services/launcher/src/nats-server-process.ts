import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/** Finds nats-server: NATS_SERVER_BIN, then PATH, then the Debian location. */
export function findNatsServer(env: Readonly<Record<string, string | undefined>>): string | null {
  const explicit = env['NATS_SERVER_BIN'];
  if (explicit) return existsSync(explicit) ? explicit : null;
  const dirs = (env['PATH'] ?? '').split(delimiter).concat(['/usr/sbin', '/usr/local/bin']);
  for (const dir of dirs) {
    const candidate = join(dir, 'nats-server');
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

/**
 * Finds nats-server, installing it from the OS packages when it is missing and this process may
 * (root on a Debian-like system); otherwise says how to get it.
 */
export function ensureNatsServer(
  env: Readonly<Record<string, string | undefined>>,
  log: (line: string) => void,
): string {
  const found = findNatsServer(env);
  if (found) return found;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot && spawnSync('apt-get', ['--version']).status === 0) {
    log('nats-server not found: installing it with apt-get');
    const aptEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env: aptEnv });
    spawnSync('apt-get', ['install', '-y', '-qq', 'nats-server'], {
      stdio: 'inherit',
      env: aptEnv,
    });
    const installed = findNatsServer(env);
    if (installed) return installed;
  }
  throw new Error(
    'nats-server not found on PATH (set NATS_SERVER_BIN, or install it: sudo apt-get install -y nats-server)',
  );
}

let parentDeathWrapper: string | null | undefined;

/**
 * The command that starts a server so that it gets SIGTERM when this process dies however it
 * dies (SIGKILL, the OOM killer: no exit handler runs): util-linux's `setpriv --pdeathsig`, which
 * sets Linux's parent-death signal and then execs the server (the same pid). Null where there is
 * none: then only this process's own exit paths stop the server.
 */
export function parentDeathSignalWrapper(): string | null {
  if (parentDeathWrapper === undefined) {
    const help =
      process.platform === 'linux' ? spawnSync('setpriv', ['--help'], { encoding: 'utf8' }) : null;
    parentDeathWrapper =
      help?.status === 0 && help.stdout.includes('--pdeathsig') ? 'setpriv' : null;
  }
  return parentDeathWrapper;
}

export function natsServerVersion(bin: string): string | null {
  const out = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return out.status === 0 ? out.stdout.trim().replace(/^nats-server:\s*v?/, '') : null;
}

export interface NatsServerOptions {
  /** nats-server binary; found on PATH when absent. */
  bin?: string;
  /** JetStream store and config live here; a temp dir (removed on stop) when absent. */
  dataDir?: string;
  /** Client port; random when absent. */
  port?: number;
  /** Cluster settings when this server is one node of a cluster. */
  cluster?: { name: string; serverName: string; routePort: number; routes: number[] };
  /** Extra config text appended verbatim (leaf nodes, accounts, ...). */
  extraConfig?: string;
  /**
   * Write a `jetstream` block (default true). A leaf node that leaves JetStream to its hub
   * runs without one.
   */
  jetstream?: boolean;
  /**
   * A complete config file (e.g. a shipped deploy/nats file rewritten for loopback) instead of
   * the generated one; needs `port`. Its includes are resolved from `dataDir`.
   */
  configText?: string;
  /** Extra environment of the server process (passwords a config reads as $NAME). */
  env?: Record<string, string>;
  /** Chooses a port this process may bind (`freePort`; a test gives one already taken). */
  choosePort?: () => Promise<number>;
}

/**
 * A port the server was to listen on was taken between its choice and the bind: `route` for a
 * cluster's route port, `client` for the client port. A port chosen as free is free only until
 * something binds it, and the ports chosen are in the range the kernel also gives outgoing
 * connections (a cluster's nodes connect to each other while they start).
 */
export class PortTakenError extends Error {
  constructor(
    readonly which: 'client' | 'route',
    message: string,
  ) {
    super(message);
  }
}

/** Starts tried with newly chosen ports when the chosen one was taken meanwhile. */
const PORT_ATTEMPTS = 5;

/**
 * Go threads running the local server's goroutines, unless GOMAXPROCS is set. This server shares
 * its box with the services (`npm start`, tests, benchmarks): with one thread per core it hands
 * each message between threads, which on 2 cores cost it about a fifth more CPU per job and half
 * more wake-ups, for no throughput (docs/performance.md, "nats-server on one thread").
 */
const LOCAL_SERVER_GOMAXPROCS = '1';

/** A running nats-server child process. */
export class NatsServerProcess {
  #child: ChildProcess;
  #exited: Promise<void>;

  private constructor(
    child: ChildProcess,
    readonly url: string,
    readonly port: number,
    readonly dataDir: string,
    readonly storeDir: string,
    private readonly ownsDir: boolean,
    readonly options: NatsServerOptions,
  ) {
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /**
   * Starts a server and waits until it listens. A client port it chose itself and found taken
   * is chosen again (`PortTakenError`); a port the caller gave is not.
   */
  static async start(options: NatsServerOptions = {}): Promise<NatsServerProcess> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await NatsServerProcess.#startOnce(options);
      } catch (err) {
        const chosenHere = options.port === undefined && options.configText === undefined;
        const again = err instanceof PortTakenError && err.which === 'client' && chosenHere;
        if (!again || attempt >= PORT_ATTEMPTS) throw err;
      }
    }
  }

  static async #startOnce(options: NatsServerOptions): Promise<NatsServerProcess> {
    const bin = options.bin ?? findNatsServer(process.env);
    if (!bin) throw new Error('nats-server not found on PATH (set NATS_SERVER_BIN)');
    if (options.dataDir !== undefined)
      return NatsServerProcess.#startIn(bin, options.dataDir, false, options);
    // A failed start leaves nothing behind: the folder it made for itself goes with it.
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-nats-'));
    try {
      return await NatsServerProcess.#startIn(bin, dataDir, true, options);
    } catch (err) {
      await rm(dataDir, { recursive: true, force: true });
      throw err;
    }
  }

  static async #startIn(
    bin: string,
    dataDir: string,
    ownsDir: boolean,
    options: NatsServerOptions,
  ): Promise<NatsServerProcess> {
    const name = options.cluster?.serverName ?? 'svc';
    const storeDir = join(dataDir, `jetstream-${name}`);
    const portsDir = join(dataDir, `ports-${name}`);
    await mkdir(storeDir, { recursive: true });
    await rm(portsDir, { recursive: true, force: true });
    await mkdir(portsDir, { recursive: true });
    const port = options.port ?? (await (options.choosePort ?? freePort)());
    const lines = options.configText
      ? [options.configText, `ports_file_dir: ${JSON.stringify(portsDir)}`]
      : [
          `server_name: ${JSON.stringify(name)}`,
          `host: 127.0.0.1`,
          `port: ${port}`,
          `ports_file_dir: ${JSON.stringify(portsDir)}`,
        ];
    if (!options.configText && options.jetstream !== false) {
      lines.push(
        `jetstream { store_dir: ${JSON.stringify(storeDir)}, max_memory_store: 268435456, max_file_store: 4294967296 }`,
      );
    }
    if (!options.configText && options.cluster) {
      const c = options.cluster;
      lines.push(
        `cluster { name: ${JSON.stringify(c.name)}, listen: "127.0.0.1:${c.routePort}", routes: [${c.routes
          .map((p) => `"nats-route://127.0.0.1:${p}"`)
          .join(', ')}] }`,
      );
    }
    // Server logs are kept only on request (diagnosing a cluster test): they outlive the data dir.
    const logDir = process.env['SVC_NATS_LOG_DIR'];
    const logFile = logDir ? join(logDir, `${name}-${port}.log`) : null;
    if (logFile) lines.push(`log_file: ${JSON.stringify(logFile)}`);
    if (options.extraConfig) lines.push(options.extraConfig);
    const configFile = join(dataDir, `${name}.conf`);
    await writeFile(configFile, lines.join('\n') + '\n');
    // A server left running by a killed starter would hold its port and, for `npm start`,
    // share SVC_DATA_DIR's JetStream store with the next one.
    const wrapper = parentDeathSignalWrapper();
    const [command, args] = wrapper
      ? [wrapper, ['--pdeathsig', 'SIGTERM', '--', bin, '-c', configFile]]
      : [bin, ['-c', configFile]];
    const child = spawn(command, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { GOMAXPROCS: LOCAL_SERVER_GOMAXPROCS, ...process.env, ...options.env },
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      if (stderr.length < 8192) stderr += d.toString();
    });
    const server = new NatsServerProcess(
      child,
      `nats://127.0.0.1:${port}`,
      port,
      dataDir,
      storeDir,
      ownsDir,
      options,
    );
    // The server writes nats-server_<pid>.ports once it listens; an early exit is a failure.
    try {
      await NatsServerProcess.#listening(child, portsDir, logFile, () => stderr);
    } catch (err) {
      // Gone before its folder is: a server killed at its deadline may still be writing there.
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await server.#exited;
      throw err;
    }
    return server;
  }

  /** Resolves once the server listens; throws when it exits first or takes longer than 10 s. */
  static async #listening(
    child: ChildProcess,
    portsDir: string,
    logFile: string | null,
    stderr: () => string,
  ): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null) {
        const message = `nats-server exited at start (code ${child.exitCode}): ${stderr().trim()}`;
        // With a log file the server says why there, not on stderr.
        const said = logFile ? await readFile(logFile, 'utf8').catch(() => stderr()) : stderr();
        const taken = /Error listening on (router )?port: .*address already in use/.exec(said);
        if (taken) throw new PortTakenError(taken[1] ? 'route' : 'client', message);
        throw new Error(message);
      }
      const files = await readdir(portsDir).catch(() => [] as string[]);
      if (files.some((f) => f.endsWith('.ports'))) return;
      if (Date.now() > deadline) {
        throw new Error(`nats-server did not start within 10 s: ${stderr().trim()}`);
      }
      await sleep(25);
    }
  }

  /** SIGTERM, then SIGKILL after the deadline; removes a temp data dir. */
  async stop(deadlineMs = 5000): Promise<void> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) {
      this.#child.kill('SIGTERM');
      const timer = setTimeout(() => this.#child.kill('SIGKILL'), deadlineMs);
      await this.#exited;
      clearTimeout(timer);
    }
    if (this.ownsDir) await rm(this.dataDir, { recursive: true, force: true });
  }

  /**
   * Sends SIGTERM without waiting: for a parent that is exiting and cannot wait any more (its
   * `exit` event), so that the server does not outlive it.
   */
  terminateNow(): void {
    if (this.#child.exitCode === null && this.#child.signalCode === null) {
      this.#child.kill('SIGTERM');
    }
  }

  /** Kills the process at once, as a crash would; keeps the data dir. */
  async kill(): Promise<void> {
    this.#child.kill('SIGKILL');
    await this.#exited;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/** A 3-node JetStream cluster on loopback. */
export class NatsCluster {
  private constructor(
    readonly nodes: NatsServerProcess[],
    private readonly dataDir: string,
  ) {}

  get url(): string {
    return this.nodes.map((n) => n.url).join(',');
  }

  /**
   * Starts `size` nodes routed to each other. A route port taken before its node bound it (a
   * node's connection to another may be given it by the kernel) starts the cluster again on
   * newly chosen ports.
   */
  static async start(
    size = 3,
    options: Pick<NatsServerOptions, 'choosePort'> = {},
  ): Promise<NatsCluster> {
    const choose = options.choosePort ?? freePort;
    for (let attempt = 1; ; attempt++) {
      const dataDir = await mkdtemp(join(tmpdir(), 'svc-nats-cluster-'));
      const routes = await Promise.all(Array.from({ length: size }, () => choose()));
      const started = await Promise.allSettled(
        routes.map((routePort, i) =>
          NatsServerProcess.start({
            dataDir,
            choosePort: options.choosePort,
            cluster: { name: 'svc', serverName: `n${i + 1}`, routePort, routes },
          }),
        ),
      );
      const nodes = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      if (nodes.length === size) return new NatsCluster(nodes, dataDir);
      await Promise.all(nodes.map((n) => n.stop()));
      await rm(dataDir, { recursive: true, force: true });
      const failed = started.find((r) => r.status === 'rejected')!.reason as unknown;
      const again = failed instanceof PortTakenError && failed.which === 'route';
      if (!again || attempt >= PORT_ATTEMPTS) throw failed;
    }
  }

  /** Restarts a stopped or killed node with its old data. */
  async restart(index: number): Promise<void> {
    const old = this.nodes[index];
    if (!old) throw new Error(`no node ${index}`);
    this.nodes[index] = await NatsServerProcess.start({ ...old.options, port: old.port });
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
    await rm(this.dataDir, { recursive: true, force: true });
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export async function readAllFiles(dir: string): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(await readFile(join(entry.parentPath, entry.name)));
  }
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
