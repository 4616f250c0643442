import type { TObject, TSchema, Static } from 'typebox';
import { ConfigError, check } from '@svc/proto';

/**
 * A check of settings that a schema cannot say (parsed lists, files that must exist). It runs
 * on the values read so far, even when some variables were bad, so that one start reports every
 * problem: it returns (or throws as a ConfigError) problems, each naming its variable.
 */
export type ConfigCheck<T> = (values: Readonly<Partial<T>>) => readonly string[] | void;

/**
 * Reads a service's settings from environment variables named as the schema's properties.
 * Text is converted by the property's type (integers, numbers, booleans `true`/`false`, string
 * arrays as comma-separated lists, or JSON arrays where the schema says `jsonArray`); unset variables take the schema default. Every bad variable
 * is reported at once. The result is frozen.
 */
export function loadConfig<S extends TObject>(
  schema: S,
  env: Readonly<Record<string, string | undefined>>,
  checks: readonly ConfigCheck<Static<S>>[] = [],
): Readonly<Static<S>> {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [name, prop] of Object.entries<TSchema>(schema.properties)) {
    const raw = env[name];
    const p = prop as TSchema & {
      default?: unknown;
      type?: string;
      items?: { type?: string };
      jsonArray?: boolean;
    };
    if (raw === undefined || raw === '') {
      if (p.default !== undefined) out[name] = structuredClone(p.default);
      continue;
    }
    const value =
      p.jsonArray === true
        ? (jsonList(raw) ?? fromText(raw, p.type, p.items?.type))
        : fromText(raw, p.type, p.items?.type);
    if (value === undefined || value === null)
      problems.push(`${name}: cannot read ${JSON.stringify(raw)} as ${p.type}`);
    else out[name] = value;
  }
  // Checked even after a conversion problem, so that every bad variable is reported at once.
  const result = check<Static<S>>(schema, out, 'env');
  if (!result.ok) {
    for (const i of result.issues) {
      const name = String(i.loc[1]);
      // A variable that could not be read is reported once, not again as missing.
      if (problems.some((p) => p.startsWith(`${name}: cannot read`))) continue;
      problems.push(`${i.loc.slice(1).join('.')}: ${i.msg}`);
    }
  }
  for (const checkValues of checks) {
    try {
      problems.push(...(checkValues(out as Partial<Static<S>>) ?? []));
    } catch (err) {
      if (err instanceof ConfigError) problems.push(...err.problems);
      else problems.push(err instanceof Error ? err.message : String(err));
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(out) as Readonly<Static<S>>;
}

/**
 * A string list written as a JSON array (`["a,b", "c"]`), for lists whose items may hold a
 * comma (schema option `jsonArray`): the list when `raw` is one, undefined (read it as a
 * comma-separated list) when it is not JSON, null (cannot read) for an array of anything else.
 */
function jsonList(raw: string): string[] | null | undefined {
  if (!raw.trim().startsWith('[')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined; // `[a-z]+x` is a comma-separated list whose first item starts with `[`
  }
  if (!Array.isArray(parsed) || !parsed.every((x) => typeof x === 'string')) return null;
  return parsed.filter((x) => x.trim().length > 0);
}

function fromText(raw: string, type?: string, itemType?: string): unknown {
  switch (type ?? 'string') {
    case 'integer': {
      const n = Number(raw);
      return Number.isInteger(n) ? n : undefined;
    }
    case 'number': {
      const n = Number(raw);
      return Number.isFinite(n) ? n : undefined;
    }
    case 'boolean': {
      const v = raw.trim().toLowerCase();
      if (['true', '1', 'yes'].includes(v)) return true;
      if (['false', '0', 'no'].includes(v)) return false;
      return undefined;
    }
    case 'array': {
      const items = raw
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0);
      return itemType === 'string' || itemType === undefined ? items : undefined;
    }
    default:
      return raw;
  }
}
