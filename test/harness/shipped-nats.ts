import { readFile, copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { NatsServerProcess, freePort } from '@svc/launcher';

// test/dist/harness/ → deploy/nats/
const DEPLOY_NATS = fileURLToPath(new URL('../../../deploy/nats/', import.meta.url));

/** The service users of deploy/nats/accounts.conf. */
export const NATS_USERS = ['gateway', 'dispatcher', 'actor', 'reaper', 'events'] as const;
export type NatsUser = (typeof NATS_USERS)[number];

/** The shipped 3-node cluster (deploy/nats/n1..n3.conf with their accounts) on loopback. */
export class ShippedNatsCluster {
  private constructor(
    readonly nodes: NatsServerProcess[],
    readonly passwords: Record<NatsUser, string>,
    private readonly dir: string,
  ) {}

  get url(): string {
    return this.nodes.map((n) => n.url).join(',');
  }

  /** NATS_USER and NATS_PASSWORD of one user, as a service reads them. */
  credentials(user: NatsUser): { NATS_USER: string; NATS_PASSWORD: string } {
    return { NATS_USER: user, NATS_PASSWORD: this.passwords[user] };
  }

  /**
   * Copies the shipped files into a temp dir and changes only what cannot work on one machine:
   * listen addresses and ports (loopback, free ports), route URLs, the store dir and the
   * monitoring port (dropped). Accounts, users and permissions are used as shipped.
   */
  static async start(): Promise<ShippedNatsCluster> {
    const dir = await mkdtemp(join(tmpdir(), 'svc-nats-shipped-'));
    for (const f of ['accounts.conf', 'permissions.conf']) {
      await copyFile(join(DEPLOY_NATS, f), join(dir, f));
    }
    const passwords = Object.fromEntries(
      NATS_USERS.map((u) => [u, `p${randomBytes(18).toString('hex')}`]),
    ) as Record<NatsUser, string>;
    const env = Object.fromEntries(
      NATS_USERS.map((u) => [`NATS_${u.toUpperCase()}_PASSWORD`, passwords[u]]),
    );
    const clientPorts = await Promise.all([1, 2, 3].map(() => freePort()));
    const routePorts = await Promise.all([1, 2, 3].map(() => freePort()));
    const texts = await Promise.all(
      [1, 2, 3].map(async (i) => {
        let text = await readFile(join(DEPLOY_NATS, `n${i}.conf`), 'utf8');
        text = text
          .replace(/^listen: .*$/m, `listen: 127.0.0.1:${clientPorts[i - 1]}`)
          .replace(/^http: .*$/m, '')
          .replace(/\/data\/jetstream/g, join(dir, `store-n${i}`))
          .replace(/^(\s+)listen: 0\.0\.0\.0:6222$/m, `$1listen: 127.0.0.1:${routePorts[i - 1]}`);
        for (let j = 1; j <= 3; j++) {
          text = text.replaceAll(
            `nats-route://n${j}:6222`,
            `nats-route://127.0.0.1:${routePorts[j - 1]}`,
          );
        }
        return text;
      }),
    );
    const nodes = await Promise.all(
      texts.map((configText, i) =>
        NatsServerProcess.start({
          dataDir: dir,
          port: clientPorts[i],
          configText,
          env,
          cluster: {
            name: 'svc',
            serverName: `n${i + 1}`,
            routePort: routePorts[i]!,
            routes: routePorts,
          },
        }),
      ),
    );
    return new ShippedNatsCluster(nodes, passwords, dir);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
    await rm(this.dir, { recursive: true, force: true });
  }
}
