import { connect, type Socket } from 'node:net';
import ssh2, { type Connection } from 'ssh2';
import { generateHostKey } from './host-key.js';

/**
 * A jump host (bastion) on loopback: an ssh2 `Server` that authenticates its own users and
 * forwards `direct-tcpip` channels to the address and port the client names, as `ssh -J` uses
 * an OpenSSH bastion. It offers no shell. Chains work: a bastion may forward to another one.
 */

export interface StartJumpHostOptions {
  /** Default `jump`. */
  username?: string;
  /** Default `jump-pass`. */
  password?: string;
  /** Public keys (OpenSSH lines) accepted by `publickey`. */
  authorizedKeys?: string[];
  /** Login methods offered. Default password and publickey. */
  authMethods?: ('password' | 'publickey')[];
  /** Default 127.0.0.1 (any loopback address works on Linux, e.g. 127.0.0.2). */
  host?: string;
  /** Default 0 (a random free port). */
  port?: number;
  /** Host key (OpenSSH private key); absent: a fresh one. */
  hostKey?: string;
  /** Refuse every forwarding request (a bastion that allows logins but no `-J`). */
  refuseForwarding?: boolean;
}

export interface JumpHostStats {
  handshakes: number;
  authFailures: number;
  /** Every authentication request that carried a credential, by method. */
  authAttempts: { method: string; username: string }[];
  /** Every forwarding asked for, in order. */
  forwards: { host: string; port: number }[];
}

export interface JumpHost {
  readonly host: string;
  readonly port: number;
  readonly username: string;
  readonly password: string;
  /** The host key's public half as an OpenSSH line. */
  readonly hostPublicKey: string;
  readonly stats: JumpHostStats;
  stop(): Promise<void>;
}

export async function startJumpHost(options: StartJumpHostOptions = {}): Promise<JumpHost> {
  const username = options.username ?? 'jump';
  const password = options.password ?? 'jump-pass';
  const methods = options.authMethods ?? ['password', 'publickey'];
  const host = options.host ?? '127.0.0.1';
  const hostKey = options.hostKey ?? generateHostKey();
  const parsedHostKey = ssh2.utils.parseKey(hostKey);
  if (parsedHostKey instanceof Error) throw parsedHostKey;
  const authorized = (options.authorizedKeys ?? []).map((line) => {
    const key = ssh2.utils.parseKey(line);
    if (key instanceof Error) throw key;
    return Array.isArray(key) ? (key[0] as ssh2.ParsedKey) : key;
  });
  const stats: JumpHostStats = { handshakes: 0, authFailures: 0, authAttempts: [], forwards: [] };
  const clients = new Set<Connection>();
  const sockets = new Set<Socket>();

  const server = new ssh2.Server({ hostKeys: [hostKey] }, (conn) => {
    clients.add(conn);
    (conn as unknown as { setNoDelay(noDelay: boolean): void }).setNoDelay(true);
    conn.on('error', () => undefined);
    conn.on('close', () => clients.delete(conn));
    conn.on('authentication', (ctx) => {
      const decide = (ok: boolean): void => {
        if (ok && ctx.username === username) ctx.accept();
        else {
          stats.authFailures++;
          ctx.reject(methods);
        }
      };
      if (ctx.method === 'password' && methods.includes('password')) {
        stats.authAttempts.push({ method: ctx.method, username: ctx.username });
        decide(ctx.password === password);
      } else if (ctx.method === 'publickey' && methods.includes('publickey')) {
        const known = authorized.find((k) => k.getPublicSSH().equals(ctx.key.data));
        if (known === undefined) ctx.reject(methods);
        else if (ctx.signature === undefined || ctx.blob === undefined) ctx.accept();
        else {
          stats.authAttempts.push({ method: ctx.method, username: ctx.username });
          decide(known.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true);
        }
      } else {
        ctx.reject(methods);
      }
    });
    conn.on('ready', () => {
      stats.handshakes++;
      conn.on('tcpip', (accept, reject, info) => {
        stats.forwards.push({ host: info.destIP, port: info.destPort });
        if (options.refuseForwarding === true) {
          reject?.();
          return;
        }
        const sock = connect(info.destPort, info.destIP);
        sockets.add(sock);
        sock.once('close', () => sockets.delete(sock));
        sock.once('error', () => reject?.());
        sock.once('connect', () => {
          sock.setNoDelay(true);
          const channel = accept();
          channel.on('error', () => sock.destroy());
          sock.on('error', () => channel.close());
          channel.pipe(sock).pipe(channel);
        });
      });
      conn.on('session', (_accept, reject) => reject());
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = address !== null && typeof address === 'object' ? address.port : 0;
  return {
    host,
    port,
    username,
    password,
    hostPublicKey: `${parsedHostKey.type} ${parsedHostKey.getPublicSSH().toString('base64')}`,
    stats,
    async stop() {
      for (const s of sockets) s.destroy();
      for (const c of clients) c.end();
      await new Promise<void>((r) => server.close(() => r()));
      for (const c of clients) (c as unknown as { _sock?: { destroy(): void } })._sock?.destroy();
    },
  };
}
