/**
 * TextFSM template parsing, following Google's Python textfsm: Value lines, states, rules,
 * actions, and the same validation (and error wording) as the reference.
 */
import { TemplateError } from '../errors.js';
import { PythonRegex, PythonRegexError } from './python-regex.js';

export const VALUE_OPTIONS = ['Filldown', 'Fillup', 'Key', 'List', 'Required'] as const;
export type ValueOption = (typeof VALUE_OPTIONS)[number];

export const LINE_OPS = ['Continue', 'Next', 'Error'] as const;
export type LineOp = (typeof LINE_OPS)[number];
export const RECORD_OPS = ['Clear', 'Clearall', 'Record', 'NoRecord'] as const;
export type RecordOp = (typeof RECORD_OPS)[number];

export interface TemplateValue {
  readonly name: string;
  /** Options in declaration order: their hooks run in this order, as in the reference. */
  readonly options: readonly ValueOption[];
  /** The Value's regex as written, e.g. `(\S+)`. */
  readonly regex: string;
  /** For List values: the Value's own regex, used for nested named-group matches. */
  readonly listRegex: PythonRegex | undefined;
}

export interface TemplateRule {
  /** 1-based template line. */
  readonly line: number;
  /** The rule's regex after `${Value}` substitution, in Python syntax. */
  readonly regexSource: string;
  readonly regex: PythonRegex;
  /** Empty means the default (`Next` / `NoRecord` / stay in the current state). */
  readonly lineOp: LineOp | '';
  readonly recordOp: RecordOp | '';
  /** Target state, or the message of an `Error` action (quotes kept, as the reference does). */
  readonly newState: string;
  /** For each named group of the rule regex that is a Value: [group name, value index]. */
  readonly assignments: ReadonlyArray<readonly [string, number]>;
}

export interface CompiledTemplate {
  readonly values: readonly TemplateValue[];
  /** Value names in declaration order (the record header). */
  readonly header: readonly string[];
  /** States in declaration order; `End` is removed as the reference does. */
  readonly states: ReadonlyMap<string, readonly TemplateRule[]>;
  /** An explicit (empty) `EOF` state suppresses the implicit record at end of input. */
  readonly hasEofState: boolean;
}

const MAX_NAME_LEN = 48;
const COMMENT = /^\s*#/;
const STATE_NAME = /^[\p{L}\p{N}_]+$/u;
const WORD = '[\\p{L}\\p{N}_]';
const NEW_STATE = `(?<newState>${WORD}+|".*")`;
const OPERATOR = `(?<lineOp>${LINE_OPS.join('|')})(?:\\.(?<recordOp>${RECORD_OPS.join('|')}))?`;
const ACTION_RE = new RegExp(`^\\s+${OPERATOR}(?:\\s+${NEW_STATE})?$`, 'u');
const ACTION2_RE = new RegExp(
  `^\\s+(?<recordOp>${RECORD_OPS.join('|')})(?:\\s+${NEW_STATE})?$`,
  'u',
);
const ACTION3_RE = new RegExp(`^(?:\\s+${NEW_STATE})?$`, 'u');
// Greedy, so the last ` ->` on the line splits match from action, as in the reference.
const MATCH_ACTION = /^(?<match>[\s\S]*)\s->(?<action>[\s\S]*)$/u;
// Python's string.Template placeholders: `$$`, `$name`, `${name}`, or an invalid `$`.
const PLACEHOLDER = /\$(?:(\$)|([_a-z][_a-z0-9]*)|\{([_a-z][_a-z0-9]*)\}|)/gi;

/** Compiles TextFSM template text. Throws {@link TemplateError} naming the offending line. */
export function compileTemplate(text: string): CompiledTemplate {
  // Python reads templates with universal newlines.
  const lines = text.split(/\r\n|\r|\n/);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  let lineNum = 0;
  const next = (): string | undefined => {
    if (lineNum >= lines.length) return undefined;
    return (lines[lineNum++] as string).replace(/\s+$/u, '');
  };

  const values: TemplateValue[] = [];
  const valueMap = new Map<string, string>();
  // Value definitions: a contiguous block ended by a blank line.
  for (let line = next(); line !== undefined; line = next()) {
    if (line === '') break;
    if (COMMENT.test(line)) continue;
    if (line.startsWith('Value ')) {
      const value = parseValue(line, lineNum);
      if (values.some((v) => v.name === value.name)) {
        throw templateError(
          `Duplicate declarations for Value '${value.name}'. Line: ${lineNum}.`,
          lineNum,
        );
      }
      values.push(value);
      valueMap.set(value.name, value.regex.replace(/^\(/, `(?P<${value.name}>`));
    } else if (values.length === 0) {
      throw templateError('No Value definitions found.', lineNum);
    } else {
      throw templateError(`Expected blank line after last Value entry. Line: ${lineNum}.`, lineNum);
    }
  }

  const states = new Map<string, TemplateRule[]>();
  const valueIndex = new Map(values.map((v, i) => [v.name, i] as const));
  for (;;) {
    let stateName: string | undefined;
    for (let line = next(); line !== undefined; line = next()) {
      if (line === '' || COMMENT.test(line)) continue;
      if (
        !STATE_NAME.test(line) ||
        line.length > MAX_NAME_LEN ||
        (LINE_OPS as readonly string[]).includes(line) ||
        (RECORD_OPS as readonly string[]).includes(line)
      ) {
        throw templateError(`Invalid state name: '${line}'. Line: ${lineNum}`, lineNum);
      }
      if (states.has(line)) {
        throw templateError(`Duplicate state name: '${line}'. Line: ${lineNum}`, lineNum);
      }
      stateName = line;
      states.set(line, []);
      break;
    }
    if (stateName === undefined) break;
    const rules = states.get(stateName) as TemplateRule[];
    for (let line = next(); line !== undefined; line = next()) {
      if (line === '') break;
      if (COMMENT.test(line)) continue;
      if (!(line.startsWith(' ^') || line.startsWith('  ^') || line.startsWith('\t^'))) {
        throw templateError(
          `Missing white space or carat ('^') before rule. Line: ${lineNum}`,
          lineNum,
        );
      }
      rules.push(parseRule(line, lineNum, valueMap, valueIndex));
    }
  }

  if (!states.has('Start')) throw templateError("Missing state 'Start'.", undefined);
  if ((states.get('End')?.length ?? 0) > 0)
    throw templateError("Non-Empty 'End' state.", undefined);
  if ((states.get('EOF')?.length ?? 0) > 0)
    throw templateError("Non-Empty 'EOF' state.", undefined);
  states.delete('End');
  for (const [name, rules] of states) {
    for (const rule of rules) {
      if (rule.lineOp === 'Error' || rule.newState === '') continue;
      if (rule.newState === 'End' || rule.newState === 'EOF') continue;
      if (!states.has(rule.newState)) {
        throw templateError(
          `State '${rule.newState}' not found, referenced in state '${name}'. Line: ${rule.line}.`,
          rule.line,
        );
      }
    }
  }

  return {
    values,
    header: values.map((v) => v.name),
    states,
    hasEofState: states.has('EOF'),
  };
}

function templateError(message: string, line: number | undefined): TemplateError {
  return new TemplateError(message, { line });
}

function parseValue(line: string, lineNum: number): TemplateValue {
  const fail = (msg: string): never => {
    throw templateError(`${msg} Line ${lineNum}.`, lineNum);
  };
  const tokens = line.split(' ');
  if (tokens.length < 3) fail('Expect at least 3 tokens on line.');
  const options: ValueOption[] = [];
  let name: string;
  let regex: string;
  if (!(tokens[2] as string).startsWith('(')) {
    for (const option of (tokens[1] as string).split(',')) {
      if (options.includes(option as ValueOption)) fail(`Duplicate option "${option}".`);
      if (!(VALUE_OPTIONS as readonly string[]).includes(option))
        fail(`Unknown option "${option}".`);
      options.push(option as ValueOption);
    }
    name = tokens[2] as string;
    regex = tokens.slice(3).join(' ');
  } else {
    name = tokens[1] as string;
    regex = tokens.slice(2).join(' ');
  }
  if (name.length > MAX_NAME_LEN) fail(`Invalid Value name '${name}' or name too long.`);
  const count = (ch: string): number => regex.split(ch).length - 1;
  if (!/^\([\s\S]*\)$/.test(regex) || count('(') !== count(')')) {
    fail(`Value '${regex}' must be contained within a '()' pair.`);
  }
  let listRegex: PythonRegex | undefined;
  if (options.includes('List')) {
    try {
      listRegex = new PythonRegex(regex);
    } catch (err) {
      fail(`Invalid regular expression '${regex}': ${reason(err)}.`);
    }
  }
  return { name, options, regex, listRegex };
}

function reason(err: unknown): string {
  if (err instanceof PythonRegexError) return err.message;
  throw err;
}

function parseRule(
  rawLine: string,
  lineNum: number,
  valueMap: ReadonlyMap<string, string>,
  valueIndex: ReadonlyMap<string, number>,
): TemplateRule {
  const line = rawLine.trim();
  const matchAction = MATCH_ACTION.exec(line);
  const match = matchAction?.groups?.['match'] ?? line;

  let regexSource = match;
  // The reference skips substitution entirely when the template has no Values.
  if (valueMap.size > 0) {
    regexSource = match.replace(
      PLACEHOLDER,
      (
        _all,
        escaped: string | undefined,
        named: string | undefined,
        braced: string | undefined,
      ) => {
        if (escaped !== undefined) return '$';
        const key = named ?? braced;
        const sub = key === undefined ? undefined : valueMap.get(key);
        if (sub === undefined) {
          throw templateError(
            `Duplicate or invalid variable substitution: '${match}'. Line: ${lineNum}.`,
            lineNum,
          );
        }
        return sub;
      },
    );
  }

  let regex: PythonRegex;
  try {
    regex = new PythonRegex(regexSource);
  } catch (err) {
    throw templateError(
      `Invalid regular expression: '${regexSource}': ${reason(err)}. Line: ${lineNum}.`,
      lineNum,
    );
  }

  let lineOp: LineOp | '' = '';
  let recordOp: RecordOp | '' = '';
  let newState = '';
  if (matchAction) {
    const action = matchAction.groups?.['action'] ?? '';
    const m = ACTION_RE.exec(action) ?? ACTION2_RE.exec(action) ?? ACTION3_RE.exec(action);
    if (m === null)
      throw templateError(`Badly formatted rule '${line}'. Line: ${lineNum}.`, lineNum);
    lineOp = (m.groups?.['lineOp'] as LineOp | undefined) ?? '';
    recordOp = (m.groups?.['recordOp'] as RecordOp | undefined) ?? '';
    newState = m.groups?.['newState'] ?? '';
    if (lineOp === 'Continue' && newState !== '') {
      throw templateError(
        `Action '${lineOp}' with new state ${newState} specified. Line: ${lineNum}.`,
        lineNum,
      );
    }
    if (lineOp !== 'Error' && newState !== '' && !/^[\p{L}\p{N}_]/u.test(newState)) {
      throw templateError(
        `Alphanumeric characters only in state names. Line: ${lineNum}.`,
        lineNum,
      );
    }
  }

  const assignments: Array<readonly [string, number]> = [];
  for (const group of regex.groupNames) {
    const index = valueIndex.get(group);
    if (index !== undefined) assignments.push([group, index]);
  }
  return { line: lineNum, regexSource, regex, lineOp, recordOp, newState, assignments };
}
