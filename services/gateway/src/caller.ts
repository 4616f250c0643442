/** Roles of API keys; Basic callers act as operators. */
export const Role = { admin: 'admin', operator: 'operator', viewer: 'viewer' } as const;
export type Role = (typeof Role)[keyof typeof Role];

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** Who made a request, as established by authentication. */
export interface Caller {
  /** Owner id stored on jobs: `basic:<username>` or `key:<key_id>`. */
  id: string;
  kind: 'basic' | 'key';
  role: Role;
  /** Contexts the caller may use; `*` means all. */
  contexts: readonly string[];
  /** Basic callers only: the credentials that go to the device. */
  basic: { username: string; password: string } | null;
  /** Bearer callers only. */
  keyId: string | null;
}

export function hasRole(caller: Caller, needed: Role): boolean {
  return RANK[caller.role] >= RANK[needed];
}

export function mayUseContext(caller: Caller, context: string): boolean {
  return caller.contexts.includes('*') || caller.contexts.includes(context);
}

/** Whether the caller may see a job owned by `owner` (admins see all). */
export function mayAccessJob(caller: Caller, owner: string): boolean {
  return caller.id === owner || (caller.kind === 'key' && caller.role === 'admin');
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

export function basicCaller(creds: { username: string; password: string }): Caller {
  return {
    id: `basic:${creds.username}`,
    kind: 'basic',
    role: Role.operator,
    contexts: ['*'],
    basic: creds,
    keyId: null,
  };
}
