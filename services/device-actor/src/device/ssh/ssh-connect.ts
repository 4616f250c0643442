// ssh2 is CommonJS; Node only finds some of its names as ESM named exports, so use the default.
import ssh2, { type Client, type ConnectConfig } from 'ssh2';
import type { Duplex } from 'node:stream';
import { SvcError, ErrorCode } from '@svc/proto';
import type { VerifyHostKey } from './host-key-trust.js';
import { keyboardAnswers, nextAuthStep } from './ssh-auth.js';
import { NegotiationLog, connectError, keyProblem } from './ssh-errors.js';

/**
 * The transport: one SSH connection to one hop (directly, or over a forwarded channel), its
 * handshake with the host-key check, and its authentication.
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

export interface LoginContext {
  /** `host:port` for the device, `jump host host:port` for a bastion (error texts). */
  label: string;
  /** The forwarded channel to run SSH over (a hop behind a jump host). */
  sock: Duplex | undefined;
  algorithms: SshAlgorithms | undefined;
  connTimeoutMs: number;
  onHandshake: (() => void) | undefined;
}

/** Resolves once `client` is logged in to `hop`; rejects with the precise SvcError. */
export function login(client: Client, hop: SshHop, ctx: LoginContext): Promise<void> {
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
