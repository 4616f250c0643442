// Match variable functions: run on each matched value in template order. Each
// returns the new value and a flag: false invalidates the whole line match,
// an object adds fields (`new_field`), anything else continues.
import { lookupData } from './group-functions.js';
import { IpValue, parseIp, type IpKind } from './ip-value.js';
import { pyReEscape, pyRegexToJs } from './patterns.js';
import { pyStr, type CallSpec } from './py-literal.js';
import type { RunContext } from './run-context.js';
import { isPlainObject, type Dict } from './template.js';

export type MatchFlag = boolean | undefined | { new_field: Dict };

function hasOwn(o: object, k: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, k);
}

function jsRe(pattern: string, flags = ''): RegExp {
  return new RegExp(pyRegexToJs(pattern), flags);
}

function pyGroup(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** Python re.sub with a replacement string (\1 and \g<name> references). */
function pySub(pattern: string, repl: string, data: string, count = 0): string {
  const re = jsRe(pattern, 'g');
  let n = 0;
  return data.replace(re, (...m: unknown[]) => {
    if (count > 0 && n >= count) return m[0] as string;
    n++;
    return repl.replace(
      /\\(\d+)|\\g<(\w+)>|\\n|\\t|\\\\/g,
      (ref: string, num?: string, name?: string) => {
        if (num !== undefined) return pyGroup(m[Number(num)]);
        if (name !== undefined) {
          const groups = m[m.length - 1];
          if (/^\d+$/.test(name)) return pyGroup(m[Number(name)]);
          return isPlainObject(groups) ? pyGroup(groups[name]) : '';
        }
        if (ref === '\\n') return '\n';
        if (ref === '\\t') return '\t';
        return '\\';
      },
    );
  });
}

function toNumber(v: string): number | undefined {
  const s = v.trim();
  if (/^[+-]?\d+$/.test(s)) return parseInt(s, 10);
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s) || /^[+-]?(inf|nan)$/i.test(s))
    return parseFloat(s);
  return undefined;
}

function varOr(ctx: RunContext, name: unknown): unknown {
  if (typeof name === 'string' && hasOwn(ctx.vars, name)) return ctx.vars[name];
  return name;
}

function ipKind(text: string): IpKind {
  return text.includes('/') || text.includes(' ') ? 'interface' : 'address';
}

function toIp(data: string, args: unknown[]): IpValue {
  const version = args.includes('ipv4') ? 4 : args.includes('ipv6') ? 6 : undefined;
  const text = data.replace(' ', '/');
  return parseIp(text, ipKind(data), version);
}

const UPTIME_UNITS: Array<[string, string, number]> = [
  ['years', String.raw`(?<years>\d+)\s*(?:ys?|yrs?.?|years?)`, 31536000],
  ['months', String.raw`(?<months>\d+)\s*(?:mos?.?|mths?.?|months?)`, 2592000],
  ['weeks', String.raw`(?<weeks>[\d.]+)\s*(?:w|wks?|weeks?)`, 604800],
  ['days', String.raw`(?<days>[\d.]+)\s*(?:d|dys?|days?)`, 86400],
  ['hours', String.raw`(?<hours>[\d.]+)\s*(?:h|hrs?|hours?)`, 3600],
  ['mins', String.raw`(?<mins>[\d.]+)\s*(?:m|(?:mins?)|(?:minutes?))`, 60],
  ['secs', String.raw`(?<secs>[\d.]+)\s*(?:s|secs?|seconds?)`, 1],
];
const UPTIME_RE = new RegExp(
  '^\\s*' +
    UPTIME_UNITS.map(([, re], i) =>
      i === UPTIME_UNITS.length - 1 ? `(?:${re})?` : `(?:${re}\\s*(?:[,/]\\s*)?)?`,
    ).join('\\s*') +
    '\\s*$',
  'i',
);

function uptimeparse(data: string, format: unknown): unknown {
  const m = UPTIME_RE.exec(data);
  if (!m || !m[0].trim() || !m.groups) return data;
  const found = Object.entries(m.groups).filter((e): e is [string, string] => e[1] !== undefined);
  if (!found.every(([, v]) => /^\d+$/.test(v))) return data;
  if (format === 'dict') return Object.fromEntries(found);
  let total = 0;
  for (const [k, v] of found)
    total += (UPTIME_UNITS.find((u) => u[0] === k)?.[2] ?? 0) * parseInt(v, 10);
  return total;
}

function macEui(data: string): string {
  const hex = data.replace(/[^0-9a-fA-F]/g, '').toLowerCase();
  if (hex.length !== 12) return data;
  return (hex.match(/../g) ?? []).join(':');
}

function unrange(data: string, rangechar: string, joinchar: string): string {
  const out: string[] = [];
  for (const item of data.split(joinchar)) {
    const parts = item.split(rangechar);
    if (
      parts.length === 2 &&
      /^\s*\d+\s*$/.test(parts[0] ?? '') &&
      /^\s*\d+\s*$/.test(parts[1] ?? '')
    ) {
      const a = parseInt(parts[0] as string, 10);
      const b = parseInt(parts[1] as string, 10);
      for (let i = a; i <= b; i++) out.push(String(i));
    } else {
      out.push(item);
    }
  }
  return out.join(joinchar);
}

/** Python `str.format` with positional `{}`/`{0}` placeholders. */
function pyFormat(fmt: string, value: unknown): string {
  return fmt.replace(/\{(\d*)\}/g, () => pyStr(value));
}

/** Python str methods that templates call as functions (`| upper`, `| split(",")`). */
function stringBuiltin(
  name: string,
  data: string,
  args: unknown[],
): { value: unknown } | undefined {
  const a0 = args[0];
  const s0 = typeof a0 === 'string' ? a0 : undefined;
  const stripChars = (chars: string | undefined, left: boolean, right: boolean): string => {
    if (chars === undefined) {
      let r = data;
      if (left) r = r.replace(/^\s+/, '');
      if (right) r = r.replace(/\s+$/, '');
      return r;
    }
    let start = 0;
    let end = data.length;
    if (left) while (start < end && chars.includes(data[start] as string)) start++;
    if (right) while (end > start && chars.includes(data[end - 1] as string)) end--;
    return data.slice(start, end);
  };
  switch (name) {
    case 'upper':
      return { value: data.toUpperCase() };
    case 'lower':
      return { value: data.toLowerCase() };
    case 'title':
      return {
        value: data
          .toLowerCase()
          .replace(/(^|[^a-zA-Z])([a-z])/g, (_m, p: string, c: string) => p + c.toUpperCase()),
      };
    case 'capitalize':
      return { value: data.charAt(0).toUpperCase() + data.slice(1).toLowerCase() };
    case 'swapcase':
      return {
        value: [...data]
          .map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()))
          .join(''),
      };
    case 'strip':
      return { value: stripChars(s0, true, true) };
    case 'lstrip':
      return { value: stripChars(s0, true, false) };
    case 'rstrip':
      return { value: stripChars(s0, false, true) };
    case 'split': {
      if (s0 === undefined) return { value: data.split(/\s+/).filter((x) => x !== '') };
      const max = typeof args[1] === 'number' ? args[1] : -1;
      const parts = data.split(s0);
      if (max >= 0 && parts.length > max + 1)
        return { value: [...parts.slice(0, max), parts.slice(max).join(s0)] };
      return { value: parts };
    }
    case 'replace':
      return { value: data.split(pyStr(a0 ?? '')).join(pyStr(args[1] ?? '')) };
    case 'startswith':
      return { value: data.startsWith(pyStr(a0 ?? '')) };
    case 'endswith':
      return { value: data.endsWith(pyStr(a0 ?? '')) };
    case 'isalpha':
      return { value: /^[a-zA-Z]+$/.test(data) };
    case 'isalnum':
      return { value: /^[a-zA-Z0-9]+$/.test(data) };
    case 'isspace':
      return { value: /^\s+$/.test(data) };
    case 'islower':
      return { value: data === data.toLowerCase() && /[a-z]/.test(data) };
    case 'isupper':
      return { value: data === data.toUpperCase() && /[A-Z]/.test(data) };
    case 'zfill':
      return { value: data.padStart(Number(a0 ?? 0), '0') };
    case 'center':
      return { value: data };
    case 'count':
      return { value: data.split(pyStr(a0 ?? '')).length - 1 };
    default:
      return undefined;
  }
}

function walkTable(data: unknown, path: readonly string[]): unknown {
  let table = data;
  for (const p of path) table = isPlainObject(table) && hasOwn(table, p) ? table[p] : {};
  return table;
}

/** A `<lookup>` table by its dotted name (`locations.cities`). */
function namedTable(ctx: RunContext, name: unknown): unknown {
  if (typeof name !== 'string') return undefined;
  return walkTable(
    ctx.lookups,
    name.split('.').map((s) => s.trim()),
  );
}

/** The match becomes the found value, or the value goes to a new field (`add_field`). */
function foundValue(data: unknown, found: unknown, addField: unknown): [unknown, MatchFlag] {
  if (addField === undefined || addField === false) return [found, undefined];
  return [data, { new_field: { [pyStr(addField)]: found } }];
}

/**
 * Python's `fnmatch` on POSIX (case-sensitive): `*`, `?`, `[seq]`, `[!seq]`; a `[` without
 * its `]` is literal; the whole value must match.
 */
export function fnmatch(name: string, pattern: string): boolean {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '*') re += '[\\s\\S]*';
    else if (c === '?') re += '[\\s\\S]';
    else if (c === '[') {
      let j = i + 1;
      if (pattern[j] === '!') j++;
      if (pattern[j] === ']') j++;
      while (j < pattern.length && pattern[j] !== ']') j++;
      if (j >= pattern.length) {
        re += '\\[';
        continue;
      }
      let body = pattern.slice(i + 1, j);
      const negate = body.startsWith('!');
      if (negate) body = body.slice(1);
      const escaped = [...body].map((ch) => (ch === '-' ? '-' : escapeClassChar(ch))).join('');
      re += `[${negate ? '^' : ''}${escaped}]`;
      i = j;
    } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^(?:${re})$`, 'u').test(name);
}

function escapeClassChar(ch: string): string {
  return /[\]\\^[]/.test(ch) ? `\\${ch}` : ch;
}

export function runMatchFunction(
  fn: CallSpec,
  data: unknown,
  ctx: RunContext,
): [unknown, MatchFlag] {
  const args = fn.args;
  const kw = fn.kwargs;
  const str = typeof data === 'string' ? data : pyStr(data);
  switch (fn.name) {
    case 'set': {
      if (str.trimEnd() === kw['match_line']) {
        const value = args[0];
        if (typeof value === 'string') {
          if (hasOwn(ctx.vars, value)) return [ctx.vars[value], undefined];
          if (hasOwn(ctx.globalVars, value)) return [ctx.globalVars[value], undefined];
        }
        return [value, undefined];
      }
      return [data, false];
    }
    case 'let': {
      // like TTP, a falsy second argument means "replace the value with the first"
      const value = args[1];
      if (value === undefined || value === null || value === '' || value === false || value === 0) {
        return [args[0], undefined];
      }
      return [data, { new_field: { [pyStr(args[0])]: value } }];
    }
    case 'copy':
      return [data, { new_field: { [pyStr(args[0])]: data } }];
    case 'record': {
      const name = pyStr(args[0]);
      ctx.vars[name] = data;
      ctx.globalVars[name] = data;
      return [data, undefined];
    }
    case 'joinmatches':
      return [data, undefined];
    case 'void':
      return [data, false];
    case 'to_list':
      return [[data], undefined];
    case 'to_str':
      return [pyStr(data), undefined];
    case 'to_int': {
      if (typeof data !== 'string') return [data, undefined];
      return [toNumber(data) ?? data, undefined];
    }
    case 'to_float': {
      if (typeof data !== 'string') return [data, undefined];
      const n = toNumber(data);
      return [n === undefined ? data : n, undefined];
    }
    case 'to_ip':
      return [toIp(str, args), undefined];
    case 'to_net': {
      const version = args.includes('ipv4') ? 4 : args.includes('ipv6') ? 6 : undefined;
      return [parseIp(str, 'network', version), undefined];
    }
    case 'is_ip':
      try {
        toIp(str, args);
        return [data, true];
      } catch {
        return [data, false];
      }
    case 'to_cidr': {
      const bits = str
        .split('.')
        .reduce((n, o) => n + (parseInt(o, 10) >>> 0).toString(2).split('1').length - 1, 0);
      return [bits, undefined];
    }
    case 'mac_eui':
      return [macEui(str), undefined];
    case 'contains':
      return [data, args.some((p) => str.includes(pyStr(p)))];
    case 'exclude':
      return [data, !str.includes(pyStr(args[0]))];
    case 'equal':
      return [data, data === args[0] || str === pyStr(args[0])];
    case 'notequal':
      return [data, !(data === args[0] || str === pyStr(args[0]))];
    case 'startswith_re':
      return [data, jsRe('^' + pyStr(args[0])).test(str)];
    case 'endswith_re':
      return [data, jsRe(pyStr(args[0]) + '$').test(str)];
    case 'contains_re':
      return [data, jsRe(pyStr(args[0])).test(str)];
    case 'exclude_re':
      return [data, !jsRe(pyStr(args[0])).test(str)];
    case 'notstartswith_re':
      return [data, !jsRe('^' + pyStr(args[0])).test(str)];
    case 'notendswith_re':
      return [data, !jsRe(pyStr(args[0]) + '$').test(str)];
    case 'isdigit':
      return [data, /^\d+$/.test(str.trim())];
    case 'notdigit':
      return [data, !/^\d+$/.test(str.trim())];
    case 'greaterthan':
    case 'lessthan': {
      const v = pyStr(args[0]).trim();
      if (!/^\d+$/.test(str.trim()) || !/^\d+$/.test(v)) return [data, false];
      const a = parseInt(str, 10);
      const b = parseInt(v, 10);
      return [data, fn.name === 'greaterthan' ? a > b : a < b];
    }
    case 'sformat':
      return [pyFormat(pyStr(args[0]), data), undefined];
    case 'append':
    case 'prepend': {
      const value = varOr(
        ctx,
        hasOwn(ctx.globalVars, pyStr(args[0])) ? ctx.globalVars[pyStr(args[0])] : args[0],
      );
      if (typeof data === 'string') {
        const v = pyStr(value);
        return [fn.name === 'append' ? data + v : v + data, undefined];
      }
      if (Array.isArray(data)) {
        if (fn.name === 'append') data.push(value);
        else data.unshift(value);
      }
      return [data, undefined];
    }
    case 'join':
      return [Array.isArray(data) ? data.map(pyStr).join(pyStr(args[0])) : data, undefined];
    case 'replaceall':
    case 'resuball': {
      const useRe = fn.name === 'resuball';
      const list = [...args];
      let repl = '';
      if (list.length > 1) repl = pyStr(list.shift());
      let out = str;
      const sub = (old: string, nw: string, escape: boolean): void => {
        if (useRe) out = pySub(escape ? pyReEscape(old) : old, nw, out);
        else out = out.split(old).join(nw);
      };
      for (const oldValue of list) {
        const key = pyStr(oldValue);
        if (hasOwn(ctx.vars, key)) {
          const v = ctx.vars[key];
          if (Array.isArray(v)) {
            for (const o of v) if (typeof o === 'string') sub(o, repl, false);
          } else if (isPlainObject(v)) {
            for (const [nw, o] of Object.entries(v)) {
              if (Array.isArray(o)) {
                for (const i of o as unknown[]) if (typeof i === 'string') sub(i, nw, false);
              } else if (typeof o === 'string') sub(o, nw, false);
            }
          } else if (typeof v === 'string' && useRe) {
            sub(v, repl, true);
          }
        } else {
          sub(key, repl, false);
        }
      }
      return [out, undefined];
    }
    case 'resub': {
      const old = pyStr(kw['old'] ?? args[0]);
      const nw = pyStr(kw['new'] ?? args[1] ?? '');
      const count = Number(kw['count'] ?? args[2] ?? 1);
      if (hasOwn(ctx.vars, old))
        return [pySub(pyReEscape(pyStr(ctx.vars[old])), nw, str, count), undefined];
      return [pySub(old, nw, str, count), undefined];
    }
    case 'truncate': {
      const n = Number(args[0]);
      const parts = str.split(' ');
      return [parts.length >= n ? parts.slice(0, n).join(' ') : str, undefined];
    }
    case 'unrange':
      return [
        unrange(
          str,
          pyStr(kw['rangechar'] ?? args[0] ?? '-'),
          pyStr(kw['joinchar'] ?? args[1] ?? ','),
        ),
        undefined,
      ];
    case 'item': {
      const index = Number(args[0] ?? 0);
      if (typeof data !== 'string' && !Array.isArray(data)) return [data, undefined];
      const len = data.length;
      if (len === 0) return [data, undefined];
      let i = index < 0 ? len + index : index;
      // out-of-range indexes clamp to the nearest end instead of failing
      i = Math.min(Math.max(i, 0), len - 1);
      return [typeof data === 'string' ? data.charAt(i) : data[i], undefined];
    }
    case 'uptimeparse':
      return [uptimeparse(str, kw['format'] ?? args[0] ?? 'seconds'), undefined];
    case 'count': {
      const varName = pyStr(kw['var'] ?? args[0] ?? 'count');
      const globName = kw['globvar'] === undefined ? undefined : pyStr(kw['globvar']);
      const cur = ctx.vars[varName];
      ctx.vars[varName] = (typeof cur === 'number' ? cur : 0) + 1;
      if (globName) {
        const g = ctx.globalVars[globName];
        ctx.globalVars[globName] = (typeof g === 'number' ? g : 0) + 1;
      }
      return [data, undefined];
    }
    case 'lookup': {
      // TTP's signature: lookup(name=None, template=None, group=None, add_field=False)
      const source = lookupData(ctx, {
        name: kw['name'] ?? args[0],
        template: kw['template'] ?? args[1],
        group: kw['group'] ?? args[2],
      });
      if (source === null) return [data, undefined];
      const table = walkTable(source.data, source.path);
      if (!isPlainObject(table) || !hasOwn(table, str)) return [data, undefined];
      return foundValue(data, table[str], kw['add_field'] ?? args[3]);
    }
    case 'rlookup': {
      // the value of the first key (in table order) that occurs in the match
      const table = namedTable(ctx, kw['name'] ?? args[0]);
      if (!isPlainObject(table)) return [data, undefined];
      const key = Object.keys(table).find((k) => str.includes(k));
      const found = key === undefined ? undefined : table[key];
      if (found === undefined || found === null) return [data, undefined];
      return foundValue(data, found, kw['add_field'] ?? args[1]);
    }
    case 'gpvlookup': {
      // table: key -> list of glob patterns; the result lists the keys whose patterns match
      const table = namedTable(ctx, kw['name'] ?? args[0]);
      if (!isPlainObject(table)) return [data, undefined];
      const multimatch = (kw['multimatch'] ?? args[3]) === true;
      const found: string[] = [];
      for (const [key, patterns] of Object.entries(table)) {
        const list = Array.isArray(patterns) ? patterns : [];
        if (multimatch) {
          for (const p of list) if (fnmatch(str, pyStr(p))) found.push(key);
        } else if (list.some((p) => fnmatch(str, pyStr(p)))) {
          found.push(key);
          break;
        }
      }
      const record = kw['record'] ?? args[2];
      if (record !== undefined && record !== false) {
        ctx.vars[pyStr(record)] = found;
        ctx.globalVars[pyStr(record)] = found;
      }
      if (found.length === 0) return [data, undefined];
      return foundValue(data, found, kw['add_field'] ?? args[1]);
    }
    default: {
      if (data instanceof IpValue) {
        const attr = data.attribute(fn.name);
        if (attr !== undefined) return [attr, undefined];
        return [data, undefined];
      }
      if (typeof data === 'string') {
        const r = stringBuiltin(fn.name, data, args);
        if (r) {
          if (r.value === true) return [data, true];
          if (r.value === false) return [data, false];
          return [r.value, undefined];
        }
      }
      // unknown functions are skipped, as TTP logs and skips them
      return [data, undefined];
    }
  }
}
