import { createHmac } from 'node:crypto';

/** Roles of API keys; Basic callers act as operators. */
export const Role = { admin: 'admin', operator: 'operator', viewer: 'viewer' } as const;
export type Role = (typeof Role)[keyof typeof Role];

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** Who made a request, as established by authentication. */
export interface Caller {
  /**
   * Owner id stored on jobs: `basic:<HMAC of user name and password>` or `key:<key_id>`.
   * Never a user name or a secret in clear.
   */
  id: string;
  kind: 'basic' | 'key';
  role: Role;
  /** Contexts the caller may use; `*` means all. */
  contexts: readonly string[];
  /** Basic callers only: the credentials that go to the device. */
  basic: { username: string; password: string } | null;
  /** Bearer callers only. */
  keyId: string | null;
  /** Bearer callers only: the key's expiry (ISO 8601), as its token says. */
  expiresAt?: string;
}

export function hasRole(caller: Caller, needed: Role): boolean {
  return RANK[caller.role] >= RANK[needed];
}

export function mayUseContext(caller: Caller, context: string): boolean {
  return caller.contexts.includes('*') || caller.contexts.includes(context);
}

/**
 * Whether the caller may see (and, with the operator role, cancel) a job owned by `owner` in
 * `context`: its own jobs, and admin keys the jobs of their own contexts.
 */
export function mayAccessJob(caller: Caller, owner: string, context: string | undefined): boolean {
  if (caller.id === owner) return true;
  return (
    caller.kind === 'key' &&
    caller.role === Role.admin &&
    context !== undefined &&
    mayUseContext(caller, context)
  );
}

/** Decodes `Authorization: Basic …`; null when absent or malformed. */
export function parseBasic(
  header: string | undefined,
): { username: string; password: string } | null {
  if (!header) return null;
  const m = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!m?.[1]) return null;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon <= 0) return null;
  return { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

export function parseBearer(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1] ?? null;
}

/**
 * Resolves a Bearer token to a caller; the API-key module provides the real one.
 * Returns null for an unknown, expired, revoked or forged token.
 */
export type BearerResolver = (token: string) => Promise<Caller | null>;

/**
 * A Basic caller is its whole credential: the owner id is a keyed hash (HMAC-SHA256 under the
 * server's owner secret) of user name and password, so another password is another caller and
 * the id reveals neither.
 */
export function basicOwnerId(
  creds: { username: string; password: string },
  ownerKey: Uint8Array,
): string {
  // Length-prefixed: no other (user name, password) pair yields the same input.
  const mac = createHmac('sha256', ownerKey)
    .update(`${Buffer.byteLength(creds.username, 'utf8')}:${creds.username}`, 'utf8')
    .update(creds.password, 'utf8')
    .digest('base64url');
  return `basic:${mac}`;
}

export function basicCaller(
  creds: { username: string; password: string },
  ownerKey: Uint8Array,
): Caller {
  return {
    id: basicOwnerId(creds, ownerKey),
    kind: 'basic',
    role: Role.operator,
    contexts: ['*'],
    basic: creds,
    keyId: null,
  };
}
