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

export function runGroupFunction(
  fn: CallSpec,
  data: Dict,
  ctx: RunContext,
  builder: ResultsBuilder,
): [Dict, GroupFlag] {
  const args = fn.args;
  const kw = fn.kwargs;
  const keys = args.map((a) => pyStr(a));
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
      const [k, v] = [keys[0] ?? '', args[1]];
      return [data, hasOwn(data, k) && pyEqual(data[k], v)];
    }
    case 'contains_val': {
      const [k, v] = [keys[0] ?? '', args[1]];
      if (!hasOwn(data, k)) return [data, false];
      const cur = data[k];
      const ok =
        typeof cur === 'string' && typeof v === 'string' ? cur.includes(v) : pyEqual(cur, v);
      return [data, ok];
    }
    case 'exclude_val': {
      const [k, v] = [keys[0] ?? '', args[1]];
      if (!hasOwn(data, k)) return [data, true];
      const cur = data[k];
      const hit =
        typeof cur === 'string' && typeof v === 'string' ? cur.includes(v) : pyEqual(cur, v);
      return [data, !hit];
    }
    case 'del':
      for (const k of keys) delete data[k];
      return [data, undefined];
    case 'void':
      return [data, false];
    case 'record': {
      const source = keys[0] ?? '';
      const target = typeof kw['target'] === 'string' ? kw['target'] : (keys[1] ?? source);
      if (hasOwn(data, source)) {
        ctx.vars[target] = data[source];
        ctx.globalVars[target] = data[source];
      }
      return [data, undefined];
    }
    case 'set': {
      const source = keys[0] ?? '';
      const target = typeof kw['target'] === 'string' ? kw['target'] : (keys[1] ?? source);
      let value: unknown = source;
      if (hasOwn(ctx.vars, source)) value = ctx.vars[source];
      else if (hasOwn(ctx.globalVars, source)) value = ctx.globalVars[source];
      else if (hasOwn(kw, 'default')) value = kw['default'];
      else if (args.length > 2) value = args[2];
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
      const [ipKey, maskKey] = [keys[0] ?? '', keys[1]];
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
      const out: Dict = {};
      for (const [key, value] of Object.entries(data)) {
        const parts = key.split('.');
        let ref: Dict = out;
        while (parts.length > 1) {
          const p = parts.shift() as string;
          const nxt = ref[p];
          if (isPlainObject(nxt)) ref = nxt;
          else {
            const fresh: Dict = {};
            ref[p] = fresh;
            ref = fresh;
          }
        }
        ref[parts[0] as string] = value;
      }
      return [out, true];
    }
    case 'items2dict': {
      const keyName = keys[0] ?? '';
      const valueName = keys[1] ?? '';
      if (!hasOwn(data, keyName) || !hasOwn(data, valueName)) return [data, undefined];
      const k = pyStr(data[keyName]);
      const v = data[valueName];
      delete data[keyName];
      delete data[valueName];
      data[k] = v;
      return [data, undefined];
    }
    case 'itemize': {
      const key = keys[0] ?? '';
      const path = typeof kw['path'] === 'string' ? kw['path'] : (keys[1] ?? '');
      if (!hasOwn(data, key)) return [data, false];
      Object.assign(builder.dynPathCache, data);
      if (!path) {
        const resPath = builder.record.PATH;
        const last = resPath[resPath.length - 1] ?? '';
        if (last.endsWith('**') || !last.endsWith('*'))
          resPath[resPath.length - 1] = last.replace(/\*+$/, '') + '*';
        // itemize turns the item into its single value
        return [data[key] as Dict, undefined];
      }
      const p = path.split('.').map((s) => s.trim());
      const last = p[p.length - 1] ?? '';
      if (last.endsWith('**') || !last.endsWith('*'))
        p[p.length - 1] = last.replace(/\*+$/, '') + '*';
      const processed = builder.formPath(p);
      if (processed !== false) builder.saveCurElements(data[key], processed);
      return [data, undefined];
    }
    case 'lookup': {
      const key = keys[0] ?? '';
      const source = lookupData(ctx, kw);
      if (!source) return [data, undefined];
      let table: unknown = source.data;
      for (const p of source.path) table = isPlainObject(table) && hasOwn(table, p) ? table[p] : {};
      if (!isPlainObject(table) || !hasOwn(data, key)) return [data, undefined];
      const lookupKey = pyStr(data[key]);
      if (!hasOwn(table, lookupKey)) return [data, undefined];
      const found = table[lookupKey];
      const addField = kw['add_field'];
      if (typeof addField === 'string' && addField) data[addField] = found;
      else if (kw['update'] === true && isPlainObject(found))
        Object.assign(data, structuredClone(found));
      else if (kw['replace'] !== false) data[key] = found;
      return [data, undefined];
    }
    case 'sformat': {
      const template = pyStr(args[0] ?? '');
      const addField = typeof kw['add_field'] === 'string' ? kw['add_field'] : '';
      const formatted = template.replace(/\{(\w+)\}/g, (m, name: string) =>
        hasOwn(data, name) ? pyStr(data[name]) : m,
      );
      if (addField) data[addField] = formatted;
      return [data, undefined];
    }
    default:
      // unknown group functions are skipped, as TTP logs and skips them
      return [data, undefined];
  }
}
