// A TCP relay between one service and a real nats-server that can drop the service's publishes
// to chosen subjects: what a message sent while its receiver's NATS node dies looks like to the
// sender (it went out; nothing arrives), on demand. Everything else passes unchanged, both ways.
import { createConnection, createServer, type Server, type Socket } from 'node:net';

const CRLF = Buffer.from('\r\n');

export class NatsPublishFilter {
  #drop: ((subject: string) => boolean) | null = null;
  #dropped = 0;
  readonly #sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  /** Listens on a free loopback port, relaying to the server at `upstream` (`nats://host:port`). */
  static async start(upstream: string): Promise<NatsPublishFilter> {
    const target = new URL(upstream);
    let filter: NatsPublishFilter | null = null;
    const server = createServer((client) => filter!.#relay(client, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    filter = new NatsPublishFilter(server, `nats://127.0.0.1:${port}`);
    return filter;
  }

  /** From now on publishes (PUB, HPUB) to a subject `matches` says yes to are dropped; null: none. */
  drop(matches: ((subject: string) => boolean) | null): void {
    this.#drop = matches;
  }

  /** Publishes dropped so far. */
  get dropped(): number {
    return this.#dropped;
  }

  async stop(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #relay(client: Socket, target: URL): void {
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) });
    this.#sockets.add(client).add(upstream);
    for (const s of [client, upstream]) {
      s.setNoDelay(true);
      s.on('error', () => undefined);
      s.on('close', () => {
        client.destroy();
        upstream.destroy();
        this.#sockets.delete(s);
      });
    }
    upstream.pipe(client);
    // The client's side is read operation by operation (the protocol is line based: an op line,
    // and for PUB/HPUB a payload of the size it names) so that a publish can be left out whole.
    let pending: Buffer = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      const out: Buffer[] = [];
      for (;;) {
        const eol = pending.indexOf(CRLF);
        if (eol < 0) break;
        const line = pending.subarray(0, eol).toString('latin1');
        const op = line.slice(0, 4).toUpperCase();
        let size = eol + 2;
        let subject: string | null = null;
        if (op === 'PUB ' || op === 'HPUB') {
          const args = line.split(' ').filter((a) => a.length > 0);
          subject = args[1] ?? null;
          // PUB <subject> [reply] <bytes>; HPUB <subject> [reply] <header bytes> <total bytes>
          size += Number(args.at(-1)) + 2;
        }
        if (pending.length < size) break;
        const whole = pending.subarray(0, size);
        pending = pending.subarray(size);
        if (subject !== null && this.#drop?.(subject)) this.#dropped++;
        else out.push(whole);
      }
      if (out.length > 0) upstream.write(Buffer.concat(out));
    });
  }
}
