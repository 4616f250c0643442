import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { TSchema } from 'typebox';
import { DEVICE_TEXT_PATTERN, deviceTextMessage, forbiddenCharIn } from './device-input.js';
import type { ValidationIssue } from './messages/http.js';

// ajv-formats is CommonJS with a default export; under NodeNext its default import is the module.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/**
 * An Ajv with the project's options: all errors, standard formats, no coercion, no defaults
 * filled in, verbose errors (`toIssues` reads the failing value and its schema). The gateway's
 * route validators are built with it too, so a body is judged as `check` judges it.
 */
export function createAjv(): Ajv {
  const instance = new Ajv({ strict: false, allErrors: true, coerceTypes: false, verbose: true });
  addFormats(instance);
  return instance;
}

/** The one Ajv instance of a process for proto's schemas (see `createAjv`). */
export const ajv = createAjv();

const compiled = new WeakMap<TSchema, ValidateFunction>();

/** Compiles a schema once and caches the validator. */
export function validatorFor(schema: TSchema): ValidateFunction {
  let fn = compiled.get(schema);
  if (!fn) {
    const id = (schema as { $id?: unknown }).$id;
    // A schema nested in one compiled earlier (JobEnvelope in HeldEnvelope) is known by its id.
    const known = typeof id === 'string' ? ajv.getSchema(id) : undefined;
    fn = known?.schema === schema ? known : ajv.compile(schema);
    compiled.set(schema, fn);
  }
  return fn;
}

/**
 * Messages read from NATS are checked by a relaxed copy of their schema: the fields this release
 * knows must have their shape, fields it does not know are kept as they are. A writer of a later
 * release (rolling upgrades) adds fields; refusing them would drop its jobs, and stripping them
 * would lose them at the next compare-and-set. What a later field changes about running a job is
 * announced in the envelope's `requires`, which this release checks (actor-capabilities.ts).
 */
const ajvRead = createAjv();
const readers = new WeakMap<TSchema, ValidateFunction>();

/** A deep copy without `additionalProperties: false` and without `$id` (compiled once each). */
function relaxed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(relaxed);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === '$id' || (k === 'additionalProperties' && v === false)) continue;
    out[k] = relaxed(v);
  }
  return out;
}

/** The validator for a message read from NATS (see `ajvRead`). */
export function readerFor(schema: TSchema): ValidateFunction {
  let fn = readers.get(schema);
  if (!fn) {
    fn = ajvRead.compile(relaxed(schema) as object);
    readers.set(schema, fn);
  }
  return fn;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; issues: ValidationIssue[] };

/** Validates a value; `where` prefixes each location (`body`, `query`, `path`). */
export function check<T>(schema: TSchema, value: unknown, where: string): Checked<T> {
  const fn = validatorFor(schema);
  if (fn(value)) return { ok: true, value: value as T };
  return { ok: false, issues: toIssues(fn.errors ?? [], where) };
}

const JSON_TYPE_NAMES: Record<string, string> = {
  string: 'string_type',
  integer: 'int_type',
  number: 'float_type',
  boolean: 'bool_type',
  array: 'list_type',
  object: 'dict_type',
  null: 'none_type',
};

/** Ajv errors → the specification's `{loc, msg, type}` list, one entry per field. */
export function toIssues(errors: readonly ErrorObject[], where: string): ValidationIssue[] {
  const byLoc = new Map<string, ValidationIssue>();
  for (const e of errors) {
    const path = e.instancePath
      .split('/')
      .slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
    if (e.keyword === 'required') path.push(String(e.params['missingProperty']));
    if (e.keyword === 'additionalProperties') path.push(String(e.params['additionalProperty']));
    const loc = [where, ...path];
    const key = JSON.stringify(loc);
    const issue = issueFor(e, loc);
    const seen = byLoc.get(key);
    // A union (string | null) reports one error per branch; keep the most telling one.
    if (!seen || (seen.type === 'none_type' && issue.type !== 'none_type')) byLoc.set(key, issue);
    else if (e.keyword !== 'type' && e.keyword !== 'anyOf' && seen.type !== issue.type) {
      byLoc.set(key, issue);
    }
  }
  const all = [...byLoc.values()].filter((i) => i.type !== 'union');
  // `null` is an accepted alternative of many fields; its mismatch only matters alone.
  return all.filter(
    (i) =>
      i.type !== 'none_type' ||
      !all.some((o) => o !== i && o.type !== 'none_type' && startsWith(o.loc, i.loc)),
  );
}

function startsWith(loc: readonly (string | number)[], prefix: readonly (string | number)[]) {
  return prefix.every((p, n) => loc[n] === p);
}

function issueFor(e: ErrorObject, loc: (string | number)[]): ValidationIssue {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return { loc, msg: 'field required', type: 'missing' };
    case 'type': {
      const t = String(p['type']).split(',')[0] ?? 'value';
      return { loc, msg: `value is not a valid ${t}`, type: JSON_TYPE_NAMES[t] ?? 'type_error' };
    }
    case 'minimum':
      return {
        loc,
        msg: `ensure this value is greater than or equal to ${String(p['limit'])}`,
        type: 'greater_than_equal',
      };
    case 'maximum':
      return {
        loc,
        msg: `ensure this value is less than or equal to ${String(p['limit'])}`,
        type: 'less_than_equal',
      };
    case 'minItems':
      return {
        loc,
        msg: `ensure this list has at least ${String(p['limit'])} item(s)`,
        type: 'too_short',
      };
    case 'maxItems':
    case 'maxProperties':
      return {
        loc,
        msg: `ensure this value has at most ${String(p['limit'])} items`,
        type: 'too_long',
      };
    case 'minLength':
      return {
        loc,
        msg: `ensure this value has at least ${String(p['limit'])} characters`,
        type: 'string_too_short',
      };
    case 'maxLength':
      return {
        loc,
        msg: `ensure this value has at most ${String(p['limit'])} characters`,
        type: 'string_too_long',
      };
    case 'pattern': {
      const found = typeof e.data === 'string' ? forbiddenCharIn(e.data) : null;
      if (p['pattern'] === DEVICE_TEXT_PATTERN && found !== null) {
        // The message names the character and its position, never the value (it may be a secret).
        return { loc, msg: deviceTextMessage(found), type: 'control_character' };
      }
      return {
        loc,
        msg: `string does not match pattern ${String(p['pattern'])}`,
        type: 'string_pattern_mismatch',
      };
    }
    case 'additionalProperties':
      return { loc, msg: 'extra fields not permitted', type: 'extra_forbidden' };
    case 'enum':
      return {
        loc,
        msg: `value is not one of ${JSON.stringify(p['allowedValues'])}`,
        type: 'enum',
      };
    case 'const':
      return {
        loc,
        msg: `value must be ${JSON.stringify(p['allowedValue'])}`,
        type: 'literal_error',
      };
    case 'format':
      return { loc, msg: `value is not a valid ${String(p['format'])}`, type: 'value_error' };
    case 'anyOf':
      return { loc, msg: e.message ?? 'invalid value', type: 'union' };
    default:
      return { loc, msg: e.message ?? 'invalid value', type: 'value_error' };
  }
}
