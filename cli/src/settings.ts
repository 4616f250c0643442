import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { localDataDir, localService } from '@svc/proto/local-data';
import { CliError, ExitCode } from './exit-codes.js';

/** Where the CLI's connection settings come from, strongest first: flags, environment, file. */
export interface ConnectionFlags {
  url?: string;
  apiKey?: string;
  username?: string;
  password?: string;
  enable?: string;
  caFile?: string;
  insecure?: boolean;
  adminSecret?: string;
  config?: string;
}

/** The resolved settings of one invocation. Secrets are never printed. */
export interface ConnectionSettings {
  url: string;
  apiKey: string | null;
  /** Device credentials: the Basic credentials without an API key, body fields with one. */
  username: string | null;
  password: string | null;
  enable: string | null;
  /** PEM text of the CA the service's certificate must chain to. */
  ca: string | null;
  insecure: boolean;
  adminSecret: string | null;
  /** Why a setting came from where it did, for `--verbose`; never values of secrets. */
  configFile: string | null;
}

export const DEFAULT_URL = 'https://127.0.0.1:8443';

/** Environment variables read, by setting (docs/cli.md). */
export const ENV = {
  url: 'SVC_URL',
  apiKey: 'SVC_API_KEY',
  username: 'SVC_USERNAME',
  password: 'SVC_PASSWORD',
  enable: 'SVC_ENABLE',
  caFile: 'SVC_CA_FILE',
  insecure: 'SVC_INSECURE',
  adminSecret: 'SVC_ADMIN_SECRET',
  config: 'SVC_CONFIG',
} as const;

/** Keys of `config.json` (snake_case, like the API). */
const FILE_KEYS = {
  url: 'url',
  apiKey: 'api_key',
  username: 'username',
  password: 'password',
  enable: 'enable',
  caFile: 'ca_file',
  insecure: 'insecure',
  adminSecret: 'admin_secret',
} as const;

/** `$XDG_CONFIG_HOME/svc/config.json`, else `~/.config/svc/config.json`. */
export function defaultConfigPath(env: NodeJS.ProcessEnv, home: string): string {
  const base = env['XDG_CONFIG_HOME'] || join(home, '.config');
  return join(base, 'svc', 'config.json');
}

/**
 * Reads the config file. It may hold an API key and passwords, so a file that others can read
 * (any group or other permission bit) is refused, as ssh refuses a private key shared that way.
 * A missing file at the default path is no error; a missing file that was named is.
 */
export function readConfigFile(path: string, named: boolean): Record<string, unknown> | null {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !named) return null;
    throw new CliError(ExitCode.usage, `config file ${path}: ${(err as Error).message}`);
  }
  if ((mode & 0o077) !== 0) {
    throw new CliError(
      ExitCode.usage,
      `config file ${path} is readable by others (mode ${(mode & 0o777).toString(8)}): run chmod 600 ${path}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new CliError(ExitCode.usage, `config file ${path}: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new CliError(ExitCode.usage, `config file ${path}: must be a JSON object`);
  }
  const known = new Set<string>(Object.values(FILE_KEYS));
  for (const key of Object.keys(parsed)) {
    if (!known.has(key)) {
      throw new CliError(
        ExitCode.usage,
        `config file ${path}: unknown key "${key}" (known: ${[...known].join(', ')})`,
      );
    }
  }
  return parsed as Record<string, unknown>;
}

function fileString(file: Record<string, unknown> | null, key: string, path: string) {
  const v = file?.[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new CliError(ExitCode.usage, `${path}: ${key} must be a string`);
  return v;
}

function truthy(v: string | undefined): boolean | undefined {
  if (v === undefined || v === '') return undefined;
  return ['1', 'true', 'yes', 'on'].includes(v.toLowerCase());
}

/** Flags over environment over config file over defaults. */
export function resolveSettings(
  flags: ConnectionFlags,
  env: NodeJS.ProcessEnv,
  home: string,
): ConnectionSettings {
  const named = flags.config ?? env[ENV.config];
  const path = named || defaultConfigPath(env, home);
  const file = readConfigFile(path, Boolean(named));
  const pick = (k: keyof typeof FILE_KEYS & keyof typeof ENV & keyof ConnectionFlags) => {
    const flag = flags[k];
    if (typeof flag === 'string' && flag !== '') return flag;
    const fromEnv = env[ENV[k]];
    if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
    return fileString(file, FILE_KEYS[k], path);
  };
  const caFile = pick('caFile');
  let ca: string | null = null;
  if (caFile) {
    try {
      ca = readFileSync(caFile, 'utf8');
    } catch (err) {
      throw new CliError(ExitCode.usage, `CA file ${caFile}: ${(err as Error).message}`);
    }
  }
  const fileInsecure = file?.[FILE_KEYS.insecure];
  const url = pick('url') ?? DEFAULT_URL;
  try {
    const u = new URL(url);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error('not http(s)');
  } catch {
    throw new CliError(ExitCode.usage, `service URL ${JSON.stringify(url)} is not an http(s) URL`);
  }
  // A service on this machine: what `npm start` keeps in its data dir (docs/cli.md).
  const local = localService(url, localDataDir(env['SVC_DATA_DIR']));
  if (ca === null && local?.ca) ca = local.ca.join('\n');
  return {
    url,
    apiKey: pick('apiKey') ?? null,
    username: pick('username') ?? null,
    password: pick('password') ?? null,
    enable: pick('enable') ?? null,
    ca,
    insecure:
      flags.insecure === true ||
      truthy(env[ENV.insecure]) === true ||
      (fileInsecure === true && truthy(env[ENV.insecure]) !== false),
    adminSecret: pick('adminSecret') ?? local?.adminSecret ?? null,
    configFile: file ? path : null,
  };
}
