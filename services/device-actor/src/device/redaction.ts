import type { DeviceSecrets } from '@svc/proto';

/** What a job's error texts name and must show whole: never masked, whatever a secret is. */
export interface ShownWhole {
  host: string;
  address?: string;
  port: number;
  username?: string;
  commands?: readonly string[];
  /** Further names: jump hosts, their users. */
  more?: readonly string[];
}

const WORD = /[\p{L}\p{N}]/u;
/** Joins two word characters into one token (`127.0.0.1`, `secret_v2`, `admin-1`). */
const JOINER = new Set(['.', '_', '-']);

/** Whether the character at `i` belongs to the token that ends (or starts) beside it. */
function joins(text: string, i: number): boolean {
  const c = text[i];
  if (c === undefined) return false;
  if (WORD.test(c)) return true;
  return JOINER.has(c) && WORD.test(text[i - 1] ?? '') && WORD.test(text[i + 1] ?? '');
}

/** Where `secret` stands in `text` as a whole token (see `redactValues`). */
function tokenSpans(text: string, secret: string): [number, number][] {
  const spans: [number, number][] = [];
  for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + 1)) {
    const end = at + secret.length;
    // A boundary is needed only on a side where the secret itself ends in a word character.
    const leftOk = !WORD.test(secret[0]!) || !joins(text, at - 1);
    const rightOk = !WORD.test(secret[secret.length - 1]!) || !joins(text, end);
    if (leftOk && rightOk) spans.push([at, end]);
  }
  return spans;
}

/** Whether any of `secrets` stands in `text` as a whole token: such a text is no part to show whole. */
export function holdsSecret(
  text: string,
  secrets: readonly (string | null | undefined)[],
): boolean {
  return secrets.some((s) => !!s && tokenSpans(text, s).length > 0);
}

/** The spans of `text` covered by any of `kept` (shown whole). */
function keptSpans(text: string, kept: readonly string[]): [number, number][] {
  const spans: [number, number][] = [];
  for (const k of kept) {
    // As whole tokens too: user `svc` does not shield the `svc` of a password `svc-demo`.
    if (k !== '') spans.push(...tokenSpans(text, k));
  }
  return spans;
}

/**
 * Replaces each secret in `text` by `***` where it stands as a whole token: not where it is a
 * part of a longer word, number or address (password `1` leaves `127.0.0.1` alone, `admin`
 * leaves `administrator`), and never inside `kept` (the host, port, user and commands an error
 * names). Empty secrets are ignored; longer secrets are masked first.
 */
export function redactValues(
  text: string,
  secrets: readonly (string | null | undefined)[],
  kept: readonly string[] = [],
): string {
  const wanted = [...new Set(secrets.filter((s): s is string => !!s))].sort(
    (a, b) => b.length - a.length,
  );
  if (wanted.length === 0) return text;
  const spans = keptSpans(text, kept);
  const masked: [number, number][] = [];
  const free = (from: number, to: number): boolean =>
    !spans.some(([a, b]) => from < b && to > a) && !masked.some(([a, b]) => from < b && to > a);
  for (const s of wanted) {
    for (const [at, end] of tokenSpans(text, s)) if (free(at, end)) masked.push([at, end]);
  }
  if (masked.length === 0) return text;
  masked.sort((a, b) => a[0] - b[0]);
  let out = '';
  let last = 0;
  for (const [a, b] of masked) {
    out += `${text.slice(last, a)}***`;
    last = b;
  }
  return out + text.slice(last);
}

/** The texts of `parts` that error texts show whole. */
export function keptOf(parts: ShownWhole | undefined): string[] {
  if (parts === undefined) return [];
  const out = [
    `${parts.host}:${parts.port}`,
    parts.host,
    ...(parts.address !== undefined ? [`${parts.address}:${parts.port}`, parts.address] : []),
    ...(parts.username !== undefined ? [parts.username] : []),
    ...(parts.commands ?? []),
    ...(parts.more ?? []),
  ];
  return out.filter((s) => s !== '');
}

/** Removes every secret of a job from a text (device echo, library error messages). */
export function redactSecrets(
  text: string,
  secrets: Partial<DeviceSecrets>,
  parts?: ShownWhole,
): string {
  return redactValues(
    text,
    [
      secrets.password,
      secrets.enable,
      secrets.webhook_secret,
      secrets.private_key,
      secrets.passphrase,
      ...(secrets.jump_hosts ?? []).flatMap((j) => [j.password, j.private_key, j.passphrase]),
    ],
    keptOf(parts),
  );
}
