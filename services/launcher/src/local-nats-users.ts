import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The users of the shipped NATS account (deploy/nats/accounts.conf): one per service, and
 * `events` for outside subscribers (read `svc.events.>`, publish nothing).
 */
export const LOCAL_NATS_USERS = ['gateway', 'dispatcher', 'actor', 'reaper', 'events'] as const;
export type LocalNatsUser = (typeof LOCAL_NATS_USERS)[number];

/** The file under SVC_DATA_DIR holding the generated passwords (mode 0600). */
export const NATS_CREDENTIALS_FILE = 'nats-credentials.env';

// services/launcher/dist/src/ → deploy/nats/
const DEPLOY_NATS = fileURLToPath(new URL('../../../../deploy/nats/', import.meta.url));

/** The environment variable through which accounts.conf reads a user's password. */
export function passwordVariable(user: LocalNatsUser): string {
  return `NATS_${user.toUpperCase()}_PASSWORD`;
}

export interface LocalNatsUsers {
  /** Where the passwords are (absolute path). */
  file: string;
  passwords: Record<LocalNatsUser, string>;
}

/**
 * The passwords of the local users: read from the data dir, the missing ones generated and
 * written back, so a subscriber configured once keeps working across restarts.
 */
export async function localNatsUsers(dataDir: string): Promise<LocalNatsUsers> {
  const file = join(dataDir, NATS_CREDENTIALS_FILE);
  const known = existsSync(file) ? parseEnv(await readFile(file, 'utf8')) : {};
  const passwords = Object.fromEntries(
    LOCAL_NATS_USERS.map((u) => {
      const have = known[passwordVariable(u)];
      return [u, have && PASSWORD.test(have) ? have : generatePassword()];
    }),
  ) as Record<LocalNatsUser, string>;
  const text = [
    '# svc: NATS users of the local nats-server that `npm start` runs (generated; keep private).',
    '# The server URL is printed at start ("svc NATS: nats://127.0.0.1:<port>"). Follow job events:',
    '#   nats --server <url> --user events --password "$NATS_EVENTS_PASSWORD" sub "svc.events.>"',
    '# Permissions per user: deploy/nats/permissions.conf. Delete this file to get new passwords.',
    ...LOCAL_NATS_USERS.map((u) => `${passwordVariable(u)}=${passwords[u]}`),
    '',
  ].join('\n');
  await writeFile(file, text, { mode: 0o600 });
  // writeFile's mode applies only to a new file.
  await chmod(file, 0o600);
  return { file, passwords };
}

/**
 * Copies the shipped accounts and permissions next to the local server's config and returns
 * the config line that includes them: the local server enforces exactly what deployments do.
 */
export async function installAccounts(natsDir: string): Promise<string> {
  await mkdir(natsDir, { recursive: true });
  for (const f of ['accounts.conf', 'permissions.conf']) {
    const source = join(DEPLOY_NATS, f);
    if (!existsSync(source)) {
      throw new Error(`${source} is missing: npm start needs the repository's deploy/nats files`);
    }
    await copyFile(source, join(natsDir, f));
  }
  return 'include ./accounts.conf';
}

// nats-server reads an unquoted value that starts with a digit as a number: start with a letter.
const PASSWORD = /^[A-Za-z][A-Za-z0-9]{23,}$/;

function generatePassword(): string {
  return `p${randomBytes(18).toString('hex')}`;
}

function parseEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}
