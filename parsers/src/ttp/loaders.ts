// Loaders of `<vars>` and `<lookup>` bodies: the reference loaders that need no Python code
// (python literals, json, yaml, ini, csv). `include=` (reading files) is not supported.
import { parse as parseYaml } from 'yaml';
import { TtpErrorCode, TtpTemplateError } from './errors.js';
import { parsePythonData } from './py-literal.js';
import { isPlainObject, type Dict } from './template.js';

export const LOADERS = ['python', 'json', 'yaml', 'ini', 'csv'] as const;

function invalid(load: string, reason: string): TtpTemplateError {
  return new TtpTemplateError(TtpErrorCode.InvalidTemplate, `${load} loader: ${reason}`);
}

/**
 * Loads a tag body with the named loader (TTP's `load=` attribute, case-insensitive).
 * `key` is the csv loader's key column (default: the first column).
 */
export function loadStruct(text: string, load: string, key?: string): Dict {
  const loader = load.trim().toLowerCase();
  if (!text.trim()) return {};
  switch (loader) {
    case 'python': {
      const parsed = parsePythonData(text);
      if (!isPlainObject(parsed)) throw invalid('python', 'the data is not a dict');
      return parsed;
    }
    case 'json': {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (err) {
        throw invalid('json', err instanceof Error ? err.message : String(err));
      }
      return isPlainObject(parsed) ? parsed : {};
    }
    case 'yaml': {
      let parsed: unknown;
      try {
        // PyYAML's safe_load reads YAML 1.1 (yes/no booleans, sexagesimals, …)
        parsed = parseYaml(text, { schema: 'yaml-1.1' });
      } catch (err) {
        throw invalid('yaml', err instanceof Error ? err.message : String(err));
      }
      return isPlainObject(parsed) ? parsed : {};
    }
    case 'ini':
      return loadIni(text);
    case 'csv':
      return loadCsv(text, key);
    default:
      throw new TtpTemplateError(
        TtpErrorCode.InvalidTemplate,
        `unsupported loader '${load}' (supported: ${LOADERS.join(', ')})`,
      );
  }
}

interface IniOption {
  value: string[];
  indent: number;
}

/**
 * Python's `configparser` as TTP configures it (option names keep their case): sections, `=`
 * or `:` delimiters, `#`/`;` comment lines, indented continuation lines, the DEFAULT section's
 * options inherited by every section, and basic `%(name)s` / `%%` interpolation. The result
 * maps each section (DEFAULT first, dropped when empty) to its options.
 */
function loadIni(text: string): Dict {
  const sections = new Map<string, Map<string, IniOption>>();
  sections.set('DEFAULT', new Map());
  let current: Map<string, IniOption> | undefined;
  let option: IniOption | undefined;
  const lines = text.split(/\r\n|\r|\n/);
  lines.forEach((line, i) => {
    const stripped = line.trim();
    const indent = line.length - line.trimStart().length;
    if (stripped.startsWith('#') || stripped.startsWith(';')) return;
    if (stripped === '') {
      // blank lines may belong to a multi-line value; trailing ones are dropped below
      if (option !== undefined) option.value.push('');
      return;
    }
    if (option !== undefined && indent > option.indent) {
      option.value.push(stripped);
      return;
    }
    option = undefined;
    const header = /^\[(.+)\]$/.exec(stripped);
    if (header !== null) {
      const name = header[1] as string;
      if (name !== 'DEFAULT' && sections.has(name)) {
        throw invalid('ini', `section '${name}' is defined twice (line ${i + 1})`);
      }
      current = sections.get(name) ?? new Map();
      sections.set(name, current);
      return;
    }
    if (current === undefined) {
      throw invalid('ini', `line ${i + 1} stands before any [section]: ${JSON.stringify(line)}`);
    }
    const opt = /^(.*?)\s*[=:]\s*(.*)$/.exec(stripped);
    if (opt === null || (opt[1] as string) === '') {
      throw invalid('ini', `line ${i + 1} is not "name = value": ${JSON.stringify(line)}`);
    }
    const name = opt[1] as string;
    if (current.has(name)) throw invalid('ini', `option '${name}' is set twice (line ${i + 1})`);
    option = { value: [opt[2] as string], indent };
    current.set(name, option);
  });
  const defaults = sections.get('DEFAULT') as Map<string, IniOption>;
  const result: Dict = {};
  for (const [name, options] of sections) {
    const raw = new Map<string, string>();
    for (const [k, o] of defaults) raw.set(k, joinValue(o));
    for (const [k, o] of options) raw.set(k, joinValue(o));
    if (name === 'DEFAULT' && raw.size === 0) continue;
    const section: Dict = {};
    for (const [k, v] of raw) section[k] = interpolate(v, raw, name, k, 0);
    result[name] = section;
  }
  return result;
}

function joinValue(o: IniOption): string {
  const lines = [...o.value];
  while (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines.join('\n');
}

const MAX_INTERPOLATION_DEPTH = 10;

/** configparser's BasicInterpolation: `%(name)s` takes another option's value, `%%` is `%`. */
function interpolate(
  value: string,
  options: ReadonlyMap<string, string>,
  section: string,
  option: string,
  depth: number,
): string {
  if (depth > MAX_INTERPOLATION_DEPTH) {
    throw invalid('ini', `interpolation in [${section}] ${option} nests too deep`);
  }
  let out = '';
  let rest = value;
  for (;;) {
    const at = rest.indexOf('%');
    if (at < 0) return out + rest;
    out += rest.slice(0, at);
    rest = rest.slice(at);
    if (rest.startsWith('%%')) {
      out += '%';
      rest = rest.slice(2);
      continue;
    }
    const ref = /^%\(([^)]+)\)s/.exec(rest);
    if (ref === null) {
      throw invalid('ini', `'%' in [${section}] ${option} must be followed by '%' or '(name)s'`);
    }
    const target = options.get(ref[1] as string);
    if (target === undefined) {
      throw invalid('ini', `[${section}] ${option} refers to missing option '${ref[1]}'`);
    }
    out += interpolate(target, options, section, option, depth + 1);
    rest = rest.slice(ref[0].length);
  }
}

/**
 * Python's `csv.reader` (excel dialect) over the body's lines, first row the headers; each row
 * becomes `{key column value: {other columns}}`. A key absent from the headers gives `{}`.
 */
function loadCsv(text: string, key: string | undefined): Dict {
  const data: Dict = {};
  let headers: string[] | undefined;
  let keyName = key;
  for (const row of csvRows(text)) {
    if (row.length === 0) continue;
    if (headers === undefined) {
      headers = row;
      if (!keyName) keyName = row[0];
      else if (!row.includes(keyName)) return data;
      continue;
    }
    if (row.length > headers.length) {
      throw invalid('csv', `a row has more fields than the headers: ${JSON.stringify(row)}`);
    }
    const item: Dict = {};
    row.forEach((cell, index) => {
      item[headers?.[index] as string] = cell;
    });
    const k = item[keyName as string];
    if (typeof k !== 'string') continue;
    delete item[keyName as string];
    data[k] = item;
  }
  return data;
}

/** Rows of the excel dialect: `,` separated, `"` quoted fields with `""` for a quote. */
function csvRows(text: string): string[][] {
  const rows: string[][] = [];
  const lines = text.split(/\r\n|\r|\n/);
  // Python's splitlines() drops the line after a final newline
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let inQuotes = false;
  for (const line of lines) {
    if (!inQuotes) {
      if (line === '') {
        rows.push([]);
        continue;
      }
      row = [];
      field = '';
      quoted = false;
    } else {
      field += '\n';
    }
    for (let i = 0; i < line.length; i++) {
      const c = line[i] as string;
      if (inQuotes) {
        if (c === '"' && line[i + 1] === '"') {
          field += '"';
          i++;
        } else if (c === '"') inQuotes = false;
        else field += c;
      } else if (c === ',') {
        row.push(field);
        field = '';
        quoted = false;
      } else if (c === '"' && field === '' && !quoted) {
        inQuotes = true;
        quoted = true;
      } else field += c;
    }
    if (inQuotes) continue;
    row.push(field);
    rows.push(row);
  }
  if (inQuotes) rows.push([...row, field]);
  return rows;
}
