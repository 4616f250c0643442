// What `npm start` keeps on this machine and where (its data dir), in one place for every reader:
// the launcher and gateway write it; the `svc` CLI, svc-mcp and the device actors read it.
// Node built-ins only: the CLI imports this module alone (`@svc/proto/local-data`), not the
// NATS side of proto.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { rootCertificates } from 'node:tls';

/** SVC_DATA_DIR's default, relative to the working directory. */
export const DEFAULT_DATA_DIR = '.svc-data';

/** The admin secret file in the data dir (`SVC_ADMIN_SECRET=…`, mode 0600). */
export const ADMIN_SECRET_FILE = 'admin.env';

/** The gateway's self-signed certificate (and its key) in the data dir. */
export const TLS_DIR = 'tls';
export const TLS_CERT_FILE = 'cert.pem';

/**
 * Community template collections as `svc templates install` lays them out under the data dir:
 * `templates/ntc-templates` holds ntc-templates' `index` and `*.textfsm` files,
 * `templates/ttp_templates` the ttp_templates library root (`ttp://platform/…` resolves there).
 */
export const COMMUNITY_TEMPLATES_DIR = 'templates';
export const TEXTFSM_COLLECTION = 'ntc-templates';
export const TTP_COLLECTION = 'ttp_templates';

/** The data dir, absolute: the SVC_DATA_DIR value given, else `.svc-data` in the working dir. */
export function localDataDir(setting: string | undefined): string {
  return resolve(setting || DEFAULT_DATA_DIR);
}

/** Where the installed community collections are, under a data dir. */
export function communityTemplateDirs(dataDir: string): { textfsm: string; ttp: string } {
  const root = join(dataDir, COMMUNITY_TEMPLATES_DIR);
  return { textfsm: join(root, TEXTFSM_COLLECTION), ttp: join(root, TTP_COLLECTION) };
}

/** The secret in an admin.env text, or null. */
export function adminSecretOf(text: string): string | null {
  return /^SVC_ADMIN_SECRET=(\S+)$/m.exec(text)?.[1] ?? null;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

export interface LocalService {
  /**
   * The system CAs plus the gateway's self-signed certificate (HTTPS only), or null when the
   * file is absent. That certificate names only localhost and the loopback addresses, so it
   * vouches for nothing else.
   */
  ca: string[] | null;
  /** The admin secret `npm start` generated, or null when admin.env is absent. */
  adminSecret: string | null;
}

/**
 * For a service on this machine (a loopback URL), what `npm start` keeps in its data dir; null
 * for any other URL, each part null when its file is absent.
 */
export function localService(url: string, dataDir: string): LocalService | null {
  const u = new URL(url);
  if (!LOOPBACK_HOSTS.has(u.hostname)) return null;
  const read = (...parts: string[]) => {
    try {
      return readFileSync(join(dataDir, ...parts), 'utf8');
    } catch {
      return null;
    }
  };
  const cert = u.protocol === 'https:' ? read(TLS_DIR, TLS_CERT_FILE) : null;
  const adminEnv = read(ADMIN_SECRET_FILE);
  return {
    ca: cert ? [...rootCertificates, cert] : null,
    adminSecret: adminEnv ? adminSecretOf(adminEnv) : null,
  };
}
