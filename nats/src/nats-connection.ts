import { readFileSync } from 'node:fs';
import {
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  type NatsConnection,
  type NodeConnectionOptions,
} from '@nats-io/transport-node';
import type { Logger } from '@svc/telemetry';
import { releaseAnsweredRequestsWithoutError } from './answered-requests.js';

/** How often a wait for NATS is reported again (the first report comes after WAIT_FIRST_MS). */
export const WAIT_REPEAT_SECONDS = 15;
const WAIT_FIRST_MS = 1000;

/** Oldest nats-server the service runs on (Debian bookworm ships 2.9.10). */
export const MIN_SERVER_VERSION = '2.9.0';

/**
 * Connects with endless reconnects (a cluster node may restart at any time) and refuses servers
 * older than MIN_SERVER_VERSION, since older servers silently ignore options the service uses.
 */
export async function connectNats(
  url: string,
  name: string,
  credentials: NatsCredentials = {},
  log?: Logger,
): Promise<NatsConnection> {
  // A first connect that takes long says so, and again until it ends: a silent wait looks like
  // a hang. The URL is logged without the credentials a URL may carry.
  const natsUrl = publicNatsUrl(url);
  const started = Date.now();
  let waited = false;
  const report = () => {
    waited = true;
    log?.warn(
      {
        nats_url: natsUrl,
        waited_seconds: Math.round((Date.now() - started) / 1000),
        repeat_seconds: WAIT_REPEAT_SECONDS,
      },
      `waiting for NATS at ${natsUrl}`,
    );
  };
  let repeat: NodeJS.Timeout | undefined;
  const first = setTimeout(() => {
    report();
    repeat = setInterval(report, WAIT_REPEAT_SECONDS * 1000);
  }, WAIT_FIRST_MS);
  releaseAnsweredRequestsWithoutError();
  let nc: NatsConnection;
  try {
    nc = await connect({
      ...natsAuthOptions(credentials),
      servers: url.split(',').map((s) => s.trim()),
      name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      // Without this the first connect fails at once when the server is still starting.
      waitOnFirstConnect: true,
      timeout: 10_000,
      // Async traces build an Error (with a stack) for every request in case it fails: measured
      // at about 1 ms of CPU per job on an actor host. Errors still carry their message and code.
      noAsyncTraces: true,
    });
  } finally {
    clearTimeout(first);
    clearInterval(repeat);
  }
  if (waited) log?.info({ nats_url: natsUrl }, `connected to NATS at ${natsUrl}`);
  const version = nc.info?.version ?? '0.0.0';
  if (compareVersions(version, MIN_SERVER_VERSION) < 0) {
    await nc.close();
    throw new Error(`nats-server ${version} is older than the required ${MIN_SERVER_VERSION}`);
  }
  return nc;
}

/** The server list of a NATS URL setting without user names, passwords or tokens in it. */
export function publicNatsUrl(url: string): string {
  return url
    .split(',')
    .map((s) => s.trim().replace(/^([a-z]+:\/\/)?[^@/]*@/i, '$1'))
    .join(',');
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/).map((x) => parseInt(x, 10) || 0);
  const pb = b.split(/[.-]/).map((x) => parseInt(x, 10) || 0);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** How a service proves itself to NATS (proto/src/shared-config.ts); empty fields are unset. */
export interface NatsCredentials {
  NATS_CREDS_FILE?: string;
  NATS_NKEY_SEED_FILE?: string;
  NATS_USER?: string;
  NATS_PASSWORD?: string;
  NATS_TOKEN?: string;
  NATS_TLS_CA?: string;
  NATS_TLS_CERT?: string;
  NATS_TLS_KEY?: string;
}

/**
 * The client options for one way of authenticating (a creds file, an nkey seed, a user and
 * password or a token) and for TLS. Errors name the settings, never their values.
 */
export function natsAuthOptions(c: NatsCredentials): Partial<NodeConnectionOptions> {
  const methods = [
    c.NATS_CREDS_FILE && 'NATS_CREDS_FILE',
    c.NATS_NKEY_SEED_FILE && 'NATS_NKEY_SEED_FILE',
    c.NATS_USER && 'NATS_USER',
    c.NATS_TOKEN && 'NATS_TOKEN',
  ].filter(Boolean);
  if (methods.length > 1) {
    throw new Error(`set one NATS authentication method, not ${methods.join(' and ')}`);
  }
  if (c.NATS_PASSWORD && !c.NATS_USER) throw new Error('NATS_PASSWORD is set without NATS_USER');
  if (Boolean(c.NATS_TLS_CERT) !== Boolean(c.NATS_TLS_KEY)) {
    throw new Error('NATS_TLS_CERT and NATS_TLS_KEY go together');
  }
  const options: Partial<NodeConnectionOptions> = {};
  if (c.NATS_CREDS_FILE) {
    options.authenticator = credsAuthenticator(readSetting(c.NATS_CREDS_FILE, 'NATS_CREDS_FILE'));
  } else if (c.NATS_NKEY_SEED_FILE) {
    const seed = new TextDecoder()
      .decode(readSetting(c.NATS_NKEY_SEED_FILE, 'NATS_NKEY_SEED_FILE'))
      .trim();
    options.authenticator = nkeyAuthenticator(new TextEncoder().encode(seed));
  } else if (c.NATS_USER) {
    options.user = c.NATS_USER;
    options.pass = c.NATS_PASSWORD ?? '';
  } else if (c.NATS_TOKEN) {
    options.token = c.NATS_TOKEN;
  }
  if (c.NATS_TLS_CA || c.NATS_TLS_CERT) {
    options.tls = {
      ...(c.NATS_TLS_CA ? { caFile: c.NATS_TLS_CA } : {}),
      ...(c.NATS_TLS_CERT ? { certFile: c.NATS_TLS_CERT, keyFile: c.NATS_TLS_KEY } : {}),
    };
  }
  return options;
}

function readSetting(path: string, setting: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (err) {
    // The path is not a secret; the file's content is.
    throw new Error(`${setting}: cannot read ${path} (${(err as NodeJS.ErrnoException).code})`, {
      cause: err,
    });
  }
}
