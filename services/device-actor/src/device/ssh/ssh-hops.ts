// ssh2 is CommonJS; Node only finds some of its names as ESM named exports, so use the default.
import ssh2, { type Client } from 'ssh2';
import type { Duplex } from 'node:stream';
import { SvcError, ErrorCode } from '@svc/proto';
import { untilStopped } from '../abort.js';
import { login, type SshHop } from './ssh-connect.js';
import type { SshSessionOptions } from './ssh-session.js';

/**
 * Multi-hop login: the first jump host is connected to directly, each next hop (and finally the
 * device) through a `direct-tcpip` channel of the one before (ssh2's `forwardOut` + `sock`).
 */

/**
 * Logs in to every hop in turn, each bounded by `stop`, and returns the device's connection.
 * Each connection is pushed to `clients` as it is made, so the caller closes them all when any
 * later step fails.
 */
export async function loginThroughHops(
  options: SshSessionOptions,
  clients: Client[],
  stop: AbortSignal,
): Promise<Client> {
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
      stop,
    );
    const next = hops[i + 1];
    if (next !== undefined) {
      sock = await untilStopped(forward(client, label, next), stop);
      options.onJumpPassed?.(i);
    }
  }
  return clients[clients.length - 1]!;
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
