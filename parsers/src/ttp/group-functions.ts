// Group functions: run on a finished group item before it is saved. Each
// returns the (possibly new) item and a flag; false drops the item.
import { parseIp } from './ip-value.js';
import { pyStr, type CallSpec } from './py-literal.js';
import type { ResultsBuilder } from './results.js';
import type { RunContext } from './run-context.js';
import { isPlainObject, type Dict } from './template.js';

export type GroupFlag = boolean | undefined;

function hasOwn(o: object, k: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, k);
}

function pyEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a === 'object' && typeof b === 'object')
    return JSON.stringify(a) === JSON.stringify(b);
  return false;
}

function toNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v !== 'string') return undefined;
  const s = v.trim();
  if (/^[+-]?\d+$/.test(s)) return parseInt(s, 10);
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return parseFloat(s);
  return undefined;
}

/** The table a `lookup` reads: a `<lookup>` (`name=`), a template's or a group's results. */
export function lookupData(
  ctx: RunContext,
  kwargs: Record<string, unknown>,
): { data: unknown; path: string[] } | null {
  if (typeof kwargs['name'] === 'string') {
    return { data: ctx.lookups, path: kwargs['name'].split('.').map((s) => s.trim()) };
  }
  if (typeof kwargs['template'] === 'string') {
    const path = kwargs['template'].split('.').map((s) => s.trim());
    for (const t of ctx.templates) {
      if (t.name === path[0]) {
        const data = Array.isArray(t.results) ? (t.results[0] as unknown) : t.results;
        return { data, path: path.slice(1) };
      }
    }
    return { data: {}, path: path.slice(1) };
  }
  if (typeof kwargs['group'] === 'string') {
    const path = kwargs['group'].split('.').map((s) => s.trim());
    const head = path[0] as string;
    let data: unknown = {};
    if (isPlainObject(ctx.mainResults) && hasOwn(ctx.mainResults, head))
      data = ctx.mainResults[head];
    else if (Array.isArray(ctx.template.results)) {
      for (const r of ctx.template.results) {
        if (isPlainObject(r) && hasOwn(r, head)) {
          data = r[head];
          break;
        }
      }
    }
    return { data, path: path.slice(1) };
  }
  return null;
}

/**
 * TTP calls group functions as Python functions, `fn(data, *args, **kwargs)`: a
 * parameter may be given by position or by name. Names of each function's
 * parameters in order; `*` collects the rest of the positional arguments.
 */
const PARAMS: Record<string, string[]> = {
  equal: ['key', 'value'],
  contains_val: ['key', 'value'],
  exclude_val: ['key', 'value'],
  record: ['source', 'target'],
  set: ['source', 'target', 'default'],
  to_ip: ['ip_key', 'mask_key'],
  items2dict: ['key_name', 'value_name'],
  itemize: ['key', 'path'],
  lookup: ['key', 'name', 'template', 'group', 'add_field', 'replace', 'update'],
  sformat: ['string', 'add_field'],
};

function bindArgs(fn: CallSpec): Record<string, unknown> {
  const bound: Record<string, unknown> = {};
  (PARAMS[fn.name] ?? []).forEach((name, i) => {
    if (i < fn.args.length) bound[name] = fn.args[i];
  });
  for (const [k, v] of Object.entries(fn.kwargs)) if (!hasOwn(bound, k)) bound[k] = v;
  return bound;
}

/** Python's `value in container`: a substring of a string, an item of a list, or equality. */
function containsValue(container: unknown, value: unknown): boolean {
  if (typeof container === 'string' && typeof value === 'string') return container.includes(value);
  if (Array.isArray(container)) return container.some((i) => pyEqual(i, value));
  if (isPlainObject(container) && typeof value === 'string') return hasOwn(container, value);
  return pyEqual(container, value);
}

/** `str.format(**values)` for `{name}` fields; undefined when a field has no value. */
function formatNamed(template: string, values: Dict): string | undefined {
  let missing = false;
  const out = template.replace(/\{(\w*)\}/g, (_m, name: string) => {
    if (!hasOwn(values, name)) {
      missing = true;
      return '';
    }
    return pyStr(values[name]);
  });
  return missing ? undefined : out;
}

export function runGroupFunction(
  fn: CallSpec,
  data: unknown,
  ctx: RunContext,
  builder: ResultsBuilder,
): [unknown, GroupFlag] {
  const args = fn.args;
  const kw = fn.kwargs;
  const keys = args.map((a) => pyStr(a));
  const p = bindArgs(fn);
  // an item already turned into a plain value (itemize) passes through untouched
  if (!isPlainObject(data)) return [data, undefined];
  switch (fn.name) {
    case 'contains':
      return [data, keys.some((k) => hasOwn(data, k))];
    case 'containsall':
      return [data, keys.every((k) => hasOwn(data, k))];
    case 'exclude':
      return [data, !keys.some((k) => hasOwn(data, k))];
    case 'excludeall':
      return [data, !keys.every((k) => hasOwn(data, k))];
    case 'equal': {
      const k = pyStr(p['key'] ?? '');
      return [data, hasOwn(data, k) && pyEqual(data[k], p['value'])];
    }
    case 'contains_val': {
      const k = pyStr(p['key'] ?? '');
      if (!hasOwn(data, k)) return [data, false];
      let v = p['value'];
      if (typeof v === 'string' && hasOwn(ctx.vars, v)) v = ctx.vars[v];
      return [data, containsValue(data[k], v)];
    }
    case 'exclude_val': {
      const k = pyStr(p['key'] ?? '');
      if (!hasOwn(data, k)) return [data, true];
      return [data, !containsValue(data[k], p['value'])];
    }
    case 'del':
      for (const k of keys) delete data[k];
      return [data, undefined];
    case 'void':
      return [data, false];
    case 'record': {
      const source = pyStr(p['source'] ?? '');
      const target = typeof p['target'] === 'string' ? p['target'] : source;
      if (hasOwn(data, source)) {
        ctx.vars[target] = data[source];
        ctx.globalVars[target] = data[source];
      }
      return [data, undefined];
    }
    case 'set': {
      const source = pyStr(p['source'] ?? '');
      const target = typeof p['target'] === 'string' ? p['target'] : source;
      let value: unknown = source;
      if (hasOwn(ctx.vars, source)) value = ctx.vars[source];
      else if (hasOwn(ctx.globalVars, source)) value = ctx.globalVars[source];
      else if (hasOwn(p, 'default')) value = p['default'];
      data[target] = value;
      return [data, undefined];
    }
    case 'to_int': {
      const intlist = kw['intlist'] === true;
      const targetKeys = keys.length ? keys : Object.keys(data);
      for (const k of targetKeys) {
        if (!hasOwn(data, k)) continue;
        const n = toNumber(data[k]);
        if (n !== undefined) data[k] = n;
        const cur = data[k];
        if (intlist && Array.isArray(cur))
          data[k] = (cur as unknown[]).map((i) => toNumber(i) ?? i);
      }
      return [data, undefined];
    }
    case 'to_ip': {
      const ipKey = pyStr(p['ip_key'] ?? '');
      const maskKey = p['mask_key'] === undefined ? undefined : pyStr(p['mask_key']);
      if (!hasOwn(data, ipKey)) return [data, undefined];
      try {
        const ipText = pyStr(data[ipKey]);
        const full =
          maskKey !== undefined && hasOwn(data, maskKey)
            ? `${ipText}/${pyStr(data[maskKey])}`
            : ipText;
        data[ipKey] = parseIp(full.replace(' ', '/'), full.includes('/') ? 'interface' : 'address');
      } catch {
        // TTP leaves unparsable values as they are
      }
      return [data, undefined];
    }
    case 'expand': {
      // dotted keys become nested objects: {"a.b": 1} -> {a: {b: 1}}
      const out: Dict = {};
      for (const [key, value] of Object.entries(data)) {
        const parts = key.split('.');
        let ref: unknown = out;
        while (parts.length > 1) {
          const part = parts.shift() as string;
          if (!isPlainObject(ref)) break;
          if (!hasOwn(ref, part)) ref[part] = {};
          ref = ref[part];
        }
        if (isPlainObject(ref)) ref[parts[parts.length - 1] as string] = value;
      }
      return [out, true];
    }
    case 'items2dict': {
      const keyName = pyStr(p['key_name'] ?? '');
      const valueName = pyStr(p['value_name'] ?? '');
      // an item without both keys is dropped
      if (!hasOwn(data, keyName) || !hasOwn(data, valueName)) return [data, false];
      const k = pyStr(data[keyName]);
      const v = data[valueName];
      delete data[keyName];
      delete data[valueName];
      data[k] = v;
      return [data, undefined];
    }
    case 'itemize': {
      const key = pyStr(p['key'] ?? '');
      const path = typeof p['path'] === 'string' ? p['path'] : '';
      // an item without the key is dropped
      if (!hasOwn(data, key)) return [data, false];
      // later items may resolve {{ var }} in their paths from this one
      Object.assign(builder.dynPathCache, data);
      if (!path) {
        // the group's own path becomes a list of the key's values
        const resPath = builder.record.PATH;
        const last = resPath[resPath.length - 1] ?? '';
        if (last.endsWith('**') || !last.endsWith('*'))
          resPath[resPath.length - 1] = last.replace(/\*+$/, '') + '*';
        return [data[key], undefined];
      }
      const items = path.split('.').map((s) => s.trim());
      const last = items[items.length - 1] ?? '';
      if (last.endsWith('**') || !last.endsWith('*'))
        items[items.length - 1] = last.replace(/\*+$/, '') + '*';
      const processed = builder.formPath(items);
      if (processed !== false) builder.saveCurElements(data[key], processed);
      return [data, undefined];
    }
    case 'lookup': {
      const key = pyStr(p['key'] ?? '');
      const source = lookupData(ctx, p);
      if (!source) return [data, undefined];
      let table: unknown = source.data;
      for (const part of source.path)
        table = isPlainObject(table) && hasOwn(table, part) ? table[part] : {};
      if (!isPlainObject(table) || !hasOwn(data, key)) return [data, undefined];
      const lookupKey = pyStr(data[key]);
      if (!hasOwn(table, lookupKey)) return [data, undefined];
      const found = table[lookupKey];
      const addField = p['add_field'];
      if (typeof addField === 'string' && addField) data[addField] = found;
      else if (p['update'] === true && isPlainObject(found))
        Object.assign(data, structuredClone(found));
      else if (p['replace'] !== false) data[key] = found;
      return [data, undefined];
    }
    case 'sformat': {
      const template = pyStr(p['string'] ?? '');
      const addField = pyStr(p['add_field'] ?? '');
      // Python's str.format over the item, then over vars and the item together
      const formatted =
        formatNamed(template, data) ??
        formatNamed(template, { ...ctx.globalVars, ...ctx.vars, ...data });
      if (formatted !== undefined) data[addField] = formatted;
      return [data, true];
    }
    default:
      // unknown group functions are skipped, as TTP logs and skips them
      return [data, undefined];
  }
}
