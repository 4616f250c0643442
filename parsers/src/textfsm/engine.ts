/**
 * The TextFSM state machine: runs a compiled template over text, with the reference's
 * record semantics (option hooks in declaration order, empty-record suppression, implicit
 * record at end of input unless an `EOF` state exists).
 */
import { TextFsmError } from '../errors.js';
import { isAscii } from './python-regex.js';
import { compileTemplate, type CompiledTemplate, type TemplateValue } from './template.js';

/** An item of a List value: the matched text, or the nested named groups of the Value regex. */
export type ListItem = string | null | { [group: string]: string | null };
/** A record field: a string (`''` when unset) or, for List values, an array. */
export type FieldValue = string | ListItem[];
export type TextFsmRecord = Record<string, FieldValue>;

type Cell = string | null | ListItem[];

/** Per-run state of one Value (Python's TextFSMValue plus its option objects). */
class RunValue {
  value: Cell = null;
  filldown: Cell = null;
  list: ListItem[] = [];
  readonly hasFilldown: boolean;

  constructor(
    readonly def: TemplateValue,
    readonly index: number,
  ) {
    this.hasFilldown = def.options.includes('Filldown');
  }
}

function truthy(cell: Cell): boolean {
  return cell !== null && cell.length > 0;
}

class Run {
  readonly values: RunValue[];
  readonly result: Cell[][] = [];

  constructor(readonly template: CompiledTemplate) {
    this.values = template.values.map((v, i) => new RunValue(v, i));
  }

  assign(v: RunValue, text: string | null): void {
    v.value = text;
    for (const option of v.def.options) {
      switch (option) {
        case 'Filldown':
          v.filldown = v.value;
          break;
        case 'Fillup':
          if (truthy(v.value)) {
            for (let r = this.result.length - 1; r >= 0; r--) {
              const row = this.result[r] as Cell[];
              if (truthy(row[v.index] ?? null)) break;
              row[v.index] = v.value;
            }
          }
          break;
        case 'List':
          v.list.push(listItem(v, text));
          break;
        case 'Key':
        case 'Required':
          break;
      }
    }
  }

  clearRecord(): void {
    for (const v of this.values) {
      v.value = null;
      for (const option of v.def.options) {
        if (option === 'Filldown') v.value = v.filldown;
        else if (option === 'List' && !v.hasFilldown) v.list = [];
      }
    }
  }

  clearAll(): void {
    for (const v of this.values) {
      v.value = null;
      v.filldown = null;
      v.list = [];
    }
  }

  appendRecord(): void {
    if (this.values.length === 0) return;
    const record: Cell[] = [];
    for (const v of this.values) {
      for (const option of v.def.options) {
        if (option === 'Required' && !truthy(v.value)) {
          // Python's SkipRecord: drop this record and clear for the next one.
          this.clearRecord();
          return;
        }
        if (option === 'List') v.value = [...v.list];
      }
      record.push(v.value);
    }
    // A record of only unset scalars and empty lists is dropped, and (as in the reference)
    // the current values are then kept.
    if (record.every((c) => c === null || (Array.isArray(c) && c.length === 0))) return;
    this.result.push(record.map((c) => c ?? ''));
    this.clearRecord();
  }

  parse(text: string): Cell[][] {
    const states = this.template.states;
    let stateName = 'Start';
    let rules = states.get('Start') ?? [];
    lines: for (const line of splitLines(text)) {
      const ascii = isAscii(line);
      for (const rule of rules) {
        const m = rule.regex.match(line, ascii);
        if (m === null) continue;
        for (const [group, index] of rule.assignments) {
          this.assign(this.values[index] as RunValue, m.groups?.[group] ?? null);
        }
        switch (rule.recordOp) {
          case 'Record':
            this.appendRecord();
            break;
          case 'Clear':
            this.clearRecord();
            break;
          case 'Clearall':
            this.clearAll();
            break;
          case 'NoRecord':
          case '':
            break;
        }
        if (rule.lineOp === 'Error') {
          throw new TextFsmError(
            rule.newState !== ''
              ? `Error: ${rule.newState}. Rule Line: ${rule.line}. Input Line: ${line}.`
              : `State Error raised. Rule Line: ${rule.line}. Input Line: ${line}`,
            rule.line,
          );
        }
        if (rule.lineOp === 'Continue') continue;
        if (rule.newState !== '') {
          stateName = rule.newState;
          if (stateName === 'End' || stateName === 'EOF') break lines;
          rules = states.get(stateName) ?? [];
        }
        break;
      }
    }
    if (stateName !== 'End' && !this.template.hasEofState) this.appendRecord();
    return this.result;
  }
}

function listItem(v: RunValue, text: string | null): ListItem {
  const re = v.def.listRegex;
  // Only a Value regex with nested groups yields dicts (Python: `compiled_regex.groups > 1`).
  if (re !== undefined && re.groupCount > 1 && text !== null && re.groupNames.length > 0) {
    const m = re.match(text);
    if (m !== null) {
      const item: { [group: string]: string | null } = {};
      for (const name of re.groupNames) item[name] = m.groups?.[name] ?? null;
      return item;
    }
  }
  return text;
}

/** Python's `str.splitlines()`: every Unicode line boundary, no trailing empty line. */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  // eslint-disable-next-line no-control-regex -- \x1c-\x1e are line boundaries to Python
  const lines = text.split(/\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]/);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** A compiled template, reusable for any number of parses (each parse starts afresh). */
export class TextFsm {
  readonly template: CompiledTemplate;

  constructor(template: string | CompiledTemplate) {
    this.template = typeof template === 'string' ? compileTemplate(template) : template;
  }

  /** Value names in declaration order. */
  get header(): readonly string[] {
    return this.template.header;
  }

  /** Value names carrying an option, e.g. `'Key'` (Python's `GetValuesByAttrib`). */
  valuesWithOption(option: TemplateValue['options'][number]): string[] {
    return this.template.values.filter((v) => v.options.includes(option)).map((v) => v.name);
  }

  /** Records as rows of fields in header order (Python's `ParseText`). */
  parseRows(text: string): FieldValue[][] {
    return new Run(this.template).parse(text) as FieldValue[][];
  }

  /** Records keyed by Value name (Python's `ParseTextToDicts`). */
  parse(text: string): TextFsmRecord[] {
    return rowsToRecords(this.template.header, this.parseRows(text), false);
  }

  /** Records keyed by lower-cased Value name, as the service and ntc-templates return them. */
  parseLower(text: string): TextFsmRecord[] {
    return rowsToRecords(this.template.header, this.parseRows(text), true);
  }
}

export function rowsToRecords(
  header: readonly string[],
  rows: readonly (readonly FieldValue[])[],
  lowerCase: boolean,
): TextFsmRecord[] {
  const keys = lowerCase ? header.map((h) => h.toLowerCase()) : header;
  return rows.map((row) => {
    const record: TextFsmRecord = {};
    keys.forEach((k, i) => {
      record[k] = row[i] ?? '';
    });
    return record;
  });
}

const compiledCache = new Map<string, TextFsm>();
const CACHE_LIMIT = 512;

/** Compiles (with a small cache keyed by the template text, evicting the oldest). */
export function textFsmFor(templateText: string): TextFsm {
  let fsm = compiledCache.get(templateText);
  if (fsm === undefined) {
    fsm = new TextFsm(templateText);
    if (compiledCache.size >= CACHE_LIMIT) {
      const oldest = compiledCache.keys().next();
      if (oldest.done !== true) compiledCache.delete(oldest.value);
    }
    compiledCache.set(templateText, fsm);
  }
  return fsm;
}

/**
 * Parses `input` with TextFSM template text; records keyed by Value name, exactly as
 * Python's `ParseTextToDicts` (List items may be `null` or nested-group objects).
 */
export function parseTextFsm(templateText: string, input: string): TextFsmRecord[] {
  return textFsmFor(templateText).parse(input);
}
