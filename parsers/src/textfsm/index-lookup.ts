/**
 * The ntc-templates index lookup, as the reference CliTable does it: the `index` file is a
 * CSV whose first non-comment line is the header; Platform and Command columns are Python
 * regexes matched at the start only (`re.match`); `abc[[xyz]]` in the Command column expands
 * to `abc(x(y(z)?)?)?`; the first matching row wins; a Template cell may join several
 * templates with `:`, parsed separately and merged on Key values (see cli-table.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ParserErrorCode, TemplateError } from '../errors.js';
import { PythonRegex, PythonRegexError } from './python-regex.js';
import { parseMerged } from './cli-table.js';
import { rowsToRecords, type TextFsmRecord } from './engine.js';

export interface IndexRow {
  /** 1-based line of the row in the index file. */
  readonly line: number;
  /** The Template cell as written: one file name, or several joined with `:`. */
  readonly template: string;
  /** Compiled regex per column (other than Template); undefined for an empty cell. */
  readonly columns: ReadonlyMap<string, PythonRegex | undefined>;
}

export interface TemplateIndex {
  readonly dir: string;
  readonly header: readonly string[];
  readonly rows: readonly IndexRow[];
  /** Template texts read so far, by file name: cached with the index they belong to. */
  readonly templateTexts: Map<string, string>;
  /** Recent lookups (platform + command → row), sparing a scan of every row's regexes. */
  readonly lookups: Map<string, IndexRow | undefined>;
}

const LOOKUP_MEMO_LIMIT = 4096;

/** Attributes matched against index columns; attributes the index lacks are ignored. */
export interface IndexAttributes {
  Platform?: string;
  Command?: string;
  Hostname?: string;
  [column: string]: string | undefined;
}

const indexCache = new Map<string, TemplateIndex>();

/** Reads and compiles `DIR/index`; cached per directory for the life of the process. */
export function loadTemplateIndex(dir: string): TemplateIndex {
  let index = indexCache.get(dir);
  if (index === undefined) {
    index = parseIndexFile(readFileSync(join(dir, 'index'), 'utf8'), dir);
    indexCache.set(dir, index);
  }
  return index;
}

/** Forgets cached indexes and templates (all, or one directory's), e.g. after the files changed. */
export function clearTemplateIndexCache(dir?: string): void {
  if (dir === undefined) indexCache.clear();
  else indexCache.delete(dir);
}

/** `sh[[ow]]` → `sh(o(w)?)?`, exactly as the reference expands it (no regex inside). */
export function expandCompletion(command: string): string {
  return command.replace(/\[\[(.+?)\]\]/g, (_all, word: string) => {
    const chars = [...word];
    return '(' + chars.join('(') + ')?'.repeat(chars.length);
  });
}

export function parseIndexFile(text: string, dir = ''): TemplateIndex {
  const lines = text.split(/\r\n|\r|\n/);
  let n = 0;
  let header: string[] | undefined;
  for (; n < lines.length && header === undefined; n++) {
    const content = (lines[n] as string).split('#')[0]?.trim() ?? '';
    if (content !== '') header = content.split(',').map((h) => h.trim());
  }
  if (header === undefined) throw new TemplateError(`Index file in '${dir}' has no header line.`);
  if (!header.includes('Template')) {
    throw new TemplateError(`Index file in '${dir}' does not have a 'Template' column.`);
  }
  const rows: IndexRow[] = [];
  for (; n < lines.length; n++) {
    const raw = lines[n] as string;
    if (raw.startsWith('#')) continue;
    const cells = raw.split(',').map((c) => c.trim());
    // The reference silently drops lines with the wrong number of cells (blank lines too).
    if (cells.length !== header.length) continue;
    const columns = new Map<string, PythonRegex | undefined>();
    let template = '';
    header.forEach((column, i) => {
      const cell = cells[i] as string;
      if (column === 'Template') {
        template = cell;
        return;
      }
      const pattern = column === 'Command' ? expandCompletion(cell) : cell;
      if (pattern === '') {
        columns.set(column, undefined);
        return;
      }
      try {
        columns.set(column, new PythonRegex(pattern));
      } catch (err) {
        if (!(err instanceof PythonRegexError)) throw err;
        throw new TemplateError(
          `Invalid regular expression '${pattern}' in column ${column} of ${join(dir, 'index')}: ${err.message}. Line: ${n + 1}.`,
          { line: n + 1, cause: err },
        );
      }
    });
    rows.push({ line: n + 1, template, columns });
  }
  return { dir, header, rows, templateTexts: new Map(), lookups: new Map() };
}

/** The first index row matching every given attribute, or undefined. */
export function matchIndexRow(
  index: TemplateIndex,
  attributes: IndexAttributes,
): IndexRow | undefined {
  const entries = Object.entries(attributes).filter(
    (e): e is [string, string] => e[1] !== undefined,
  );
  return index.rows.find((row) =>
    entries.every(([column, value]) => {
      const re = row.columns.get(column);
      return re === undefined || re.match(value) !== null;
    }),
  );
}

/**
 * The template file names selected for a platform and command (several when the index row
 * merges templates), or undefined when no row matches.
 */
export function findTemplates(
  dir: string,
  platform: string,
  command: string,
): string[] | undefined {
  const index = loadTemplateIndex(dir);
  const key = `${platform}\u0000${command}`;
  let row: IndexRow | undefined;
  if (index.lookups.has(key)) {
    row = index.lookups.get(key);
  } else {
    row = matchIndexRow(index, { Platform: platform, Command: command });
    if (index.lookups.size >= LOOKUP_MEMO_LIMIT) index.lookups.clear();
    index.lookups.set(key, row);
  }
  return row?.template.split(':');
}

function readTemplate(index: TemplateIndex, name: string): string {
  let text = index.templateTexts.get(name);
  if (text === undefined) {
    text = readFileSync(join(index.dir, name), 'utf8');
    index.templateTexts.set(name, text);
  }
  return text;
}

/**
 * Index lookup plus parse: what ntc-templates' `parse_output` returns (records keyed by
 * lower-cased Value names). Throws TEMPLATE_NOT_FOUND when no index row matches.
 */
export function parseWithIndex(
  dir: string,
  platform: string,
  command: string,
  input: string,
): TextFsmRecord[] {
  const index = loadTemplateIndex(dir);
  const names = findTemplates(dir, platform, command);
  if (names === undefined) {
    throw new TemplateError(
      `No template found for platform '${platform}' and command '${command}' in ${dir}.`,
      { code: ParserErrorCode.TemplateNotFound },
    );
  }
  const merged = parseMerged(
    names.map((name) => readTemplate(index, name)),
    input,
  );
  return rowsToRecords(merged.header, merged.rows, true);
}
