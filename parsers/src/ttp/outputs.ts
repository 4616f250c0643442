// Template `<output>` formatters. Only formatters that produce data or text in
// memory are supported (raw, json, table, csv, jinja2 `{{ _data_ }}`); file and
// network returners have no meaning inside the service.
import { TtpErrorCode, TtpTemplateError } from './errors.js';
import { pyRepr, pyStr } from './py-literal.js';
import { isPlainObject, type Dict, type OutputDef } from './template.js';

function traverse(data: unknown, path: string[]): unknown {
  let cur = data;
  for (const p of path) {
    if (!isPlainObject(cur) || !Object.prototype.hasOwnProperty.call(cur, p)) return undefined;
    cur = cur[p];
  }
  return cur;
}

function splitList(v: unknown): string[] {
  if (Array.isArray(v)) return v.map(pyStr);
  if (typeof v === 'string' && v.trim()) return v.split(',').map((s) => s.trim());
  return [];
}

function table(data: unknown, attrs: Dict): unknown[][] {
  const path =
    typeof attrs['path'] === 'string' ? attrs['path'].split('.').map((s) => s.trim()) : [];
  const missing = attrs['missing'] ?? '';
  const key = typeof attrs['key'] === 'string' ? attrs['key'] : '';
  const source: unknown[] = Array.isArray(data)
    ? [...(data as unknown[])]
    : isPlainObject(data)
      ? [data]
      : [];
  const rows: Dict[] = [];
  for (const datum of source) {
    const item = traverse(datum, path);
    if (
      !item ||
      (Array.isArray(item) && item.length === 0) ||
      (isPlainObject(item) && Object.keys(item).length === 0)
    )
      continue;
    if (Array.isArray(item)) {
      for (const i of item) if (isPlainObject(i)) rows.push(i);
    } else if (isPlainObject(item)) {
      if (key) {
        for (const [k, v] of Object.entries(item))
          if (isPlainObject(v)) rows.push({ [key]: k, ...v });
      } else {
        rows.push(item);
      }
    }
  }
  let headers = splitList(attrs['headers']);
  if (headers.length === 0) headers = [...new Set(rows.flatMap((r) => Object.keys(r)))].sort();
  const out: unknown[][] = [headers];
  for (const r of rows) {
    const row: unknown[] = headers.map(() => missing);
    for (const [k, v] of Object.entries(r)) {
      const idx = headers.indexOf(k);
      if (idx !== -1) row[idx] = v;
    }
    out.push(row);
  }
  return out;
}

function csv(data: unknown, attrs: Dict): string {
  const t = table(data, attrs);
  const sep = pyStr(attrs['sep'] ?? ',');
  const q = pyStr(attrs['quote'] ?? '"');
  const joiner = `${q}${sep}${q}`;
  const [head, ...rest] = t;
  let result = q + (head ?? []).map(pyStr).join(joiner) + q;
  for (const row of rest) result += `\n${q}${row.map(pyStr).join(joiner)}${q}`;
  return result;
}

function jinja2(data: unknown, text: string): string {
  // only the `{{ _data_ }}` placeholder is rendered: there is no Jinja2 engine here
  const rendered = text.replace(/\{\{\s*_data_\s*\}\}/g, () => pyRepr(data));
  if (/\{\{|\{%/.test(rendered)) {
    throw new TtpTemplateError(
      TtpErrorCode.InvalidTemplate,
      'jinja2 output supports only the {{ _data_ }} placeholder',
    );
  }
  return rendered;
}

/** Runs one output over results and returns what the `self` returner hands back. */
export function runOutput(out: OutputDef, data: unknown): unknown {
  const attrs = out.attributes;
  const returners = splitList(attrs['returner']);
  let results: unknown = data;
  switch (pyStr(attrs['format'] ?? 'raw')) {
    case 'raw':
      break;
    case 'json':
      results = JSON.stringify(data, null, 4);
      break;
    case 'table':
      results = table(data, attrs);
      break;
    case 'csv':
      results = csv(data, attrs);
      break;
    case 'jinja2':
      results = jinja2(data, out.text);
      break;
    default:
      // TTP warns about unknown formatters and passes results through
      break;
  }
  return returners.includes('self') ? results : data;
}
