/**
 * CliTable's view of TextFSM results, which is what ntc-templates (and so the service and
 * `svc-parse`) return: templates merged on Key values, every cell passed through `str()`.
 */
import { readFileSync } from 'node:fs';
import { TemplateError } from '../errors.js';
import {
  rowsToRecords,
  textFsmFor,
  type FieldValue,
  type ListItem,
  type TextFsmRecord,
} from './engine.js';

/**
 * CliTable's TextTable stores every cell through `str()`: List items become strings too, so an
 * unmatched item reads `'None'` and a nested-group item reads as a Python dict literal.
 */
function cliTableCell(cell: FieldValue): FieldValue {
  return typeof cell === 'string' ? cell : cell.map(pythonStr);
}

function pythonStr(item: ListItem): string {
  if (item === null) return 'None';
  if (typeof item === 'string') return item;
  const fields = Object.entries(item).map(
    ([k, v]) => `${pythonRepr(k)}: ${v === null ? 'None' : pythonRepr(v)}`,
  );
  return `{${fields.join(', ')}}`;
}

/** Python's `repr()` of a str. */
export function pythonRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0) as number;
    if (ch === '\\' || ch === quote) out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && /[\p{C}\p{Z}]/u.test(ch)) {
      const h = cp.toString(16);
      out +=
        cp < 0x100
          ? `\\x${h.padStart(2, '0')}`
          : cp < 0x10000
            ? `\\u${h.padStart(4, '0')}`
            : `\\U${h.padStart(8, '0')}`;
    } else out += ch;
  }
  return out + quote;
}

/** The result of one or more templates merged on Key values, as CliTable builds it. */
export interface MergedTable {
  header: string[];
  rows: FieldValue[][];
}

/**
 * Parses `input` with each template and merges the tables as CliTable does: columns the
 * first table lacks are added (default `''`), and each row takes them from the first row of
 * the later table whose Key fields are equal (row order when there are no Keys).
 */
export function parseMerged(templateTexts: readonly string[], input: string): MergedTable {
  const [first, ...rest] = templateTexts;
  if (first === undefined) throw new TemplateError('No template given.');
  const fsm = textFsmFor(first);
  let keys = fsm.valuesWithOption('Key');
  const header = [...fsm.header];
  const rows = fsm.parseRows(input).map((r) => r.map(cliTableCell));
  for (const text of rest) {
    const other = textFsmFor(text);
    // The reference takes the Keys from the first template that declares any.
    if (keys.length === 0) keys = other.valuesWithOption('Key');
    const otherRows = other.parseRows(input).map((r) => r.map(cliTableCell));
    for (const k of keys) {
      if (!header.includes(k))
        throw new TemplateError(`Unknown key: '${k}' when merging templates.`);
    }
    const added = other.header.filter((h) => !header.includes(h));
    if (added.length === 0) continue;
    const addedIdx = added.map((h) => other.header.indexOf(h));
    header.push(...added);
    for (const row of rows) row.push(...added.map(() => ''));
    const base = header.length - added.length;
    if (keys.length === 0) {
      rows.forEach((row, r) => {
        const src = otherRows[r];
        if (src !== undefined) addedIdx.forEach((j, i) => (row[base + i] = src[j] ?? ''));
      });
      continue;
    }
    const keyIdx = keys.map((k) => [header.indexOf(k), other.header.indexOf(k)] as const);
    for (const row of rows) {
      const src = otherRows.find((o) =>
        keyIdx.every(([a, b]) => fieldsEqual(row[a], b < 0 ? undefined : o[b])),
      );
      if (src !== undefined) addedIdx.forEach((j, i) => (row[base + i] = src[j] ?? ''));
    }
  }
  return { header, rows };
}

function fieldsEqual(a: FieldValue | undefined, b: FieldValue | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Parses template files merged as an index row would; records keyed by lower-cased name. */
export function parseTemplateFiles(paths: readonly string[], input: string): TextFsmRecord[] {
  const merged = parseMerged(
    paths.map((p) => readFileSync(p, 'utf8')),
    input,
  );
  return rowsToRecords(merged.header, merged.rows, true);
}

/**
 * Parses `input` with TextFSM template text; records keyed by lower-cased Value name, with
 * CliTable's cell form (what the service and `svc-parse` return).
 */
export function parseTextFsmLower(templateText: string, input: string): TextFsmRecord[] {
  const merged = parseMerged([templateText], input);
  return rowsToRecords(merged.header, merged.rows, true);
}
