// Compiles a TTP template (XML-ish text) into groups of line regexes, the way
// TTP's _template_class, _group_class and _variable_class do.
import { TtpErrorCode, TtpTemplateError } from './errors.js';
import { loadStruct } from './loaders.js';
import { getPattern, pyReEscape, pyRegexToJs } from './patterns.js';
import { parseCallArgs, parseChain, pyStr, type CallSpec } from './py-literal.js';
import { getAttr, parseXmlDocument, XmlSyntaxError, type XmlElement } from './xml-lite.js';

export type Dict = Record<string, unknown>;

/** Marker for "attribute not given", distinct from any template value. */
export const NOT_GIVEN: unique symbol = Symbol('not-given');

/** Names of variable getters (`hostname = "gethostname"` in `<vars>`). */
export const VARIABLE_GETTERS = new Set(['gethostname', 'getfilename']);

export interface RegexEntry {
  regex: RegExp;
  variables: Map<string, MatchVariable>;
  action: string;
  group: Group;
  isLine: boolean;
}

export interface GroupId {
  name: string;
  index: number;
  /** name + index, for equality checks (Python compares the tuples). */
  key: string;
}

const SKIP_DEFAULTS = new Set(['_end_', '_line_', 'ignore', '_start_']);
const VAR_IN_LINE = /\{\{([\S\s]+?)\}\}/g;

function hasOwn(o: object, k: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, k);
}

function replaceFirst(s: string, find: string, repl: string): string {
  const i = s.indexOf(find);
  return i === -1 ? s : s.slice(0, i) + repl + s.slice(i + find.length);
}

function rejectMacro(what: string): never {
  throw new TtpTemplateError(
    TtpErrorCode.MacroNotSupported,
    `macro is not supported: templates may not embed Python (${what})`,
  );
}

export class MatchVariable {
  functions: CallSpec[] = [];
  saveAction = 'add';
  isLine = false;
  skipVariableDict = false;
  skipRegexDict = false;
  varRes: string[] = [];
  subVariables = new Map<string, MatchVariable>();
  readonly varName: string;
  readonly varNameOriginal: string;
  private readonly attributes: CallSpec[];
  private readonly varDict: CallSpec;

  constructor(
    readonly variable: string,
    readonly line: string,
    readonly group: Group,
  ) {
    const attrs = parseChain(variable);
    this.varDict = attrs.shift() ?? { name: '', args: [], kwargs: {} };
    this.attributes = attrs;
    this.varNameOriginal = this.varDict.name;
    // sanitised so it can name a regex group
    this.varName = this.varDict.name.replace(/\W+|^(?=\d)/g, '_');
    if (group.default !== NOT_GIVEN && typeof group.default === 'string') {
      if (
        !hasOwn(group.defaults, this.varNameOriginal) &&
        !SKIP_DEFAULTS.has(this.varNameOriginal)
      ) {
        group.defaults[this.varNameOriginal] = group.default;
      }
    }
    this.extractFunctions();
  }

  private extractFunctions(): void {
    const vars = this.group.vars;
    const extractRe = (data: CallSpec): void => {
      const regex = data.args.length > 0 ? data.args[0] : data.name;
      const key = typeof regex === 'string' ? regex : String(regex);
      const fromVar = hasOwn(vars, key) ? vars[key] : undefined;
      const fromPattern = getPattern(key);
      if (fromVar) this.varRes.push(pyStr(fromVar));
      else if (fromPattern) this.varRes.push(fromPattern);
      else this.varRes.push(key);
    };
    const argsFromVars = (data: CallSpec): void => {
      data.args = data.args.map((a) => (typeof a === 'string' && hasOwn(vars, a) ? vars[a] : a));
      this.functions.push(data);
    };
    const funcs: Record<string, (data: CallSpec) => void> = {
      ignore: () => {
        this.skipVariableDict = true;
      },
      _start_: () => {
        this.saveAction = this.varName === '_start_' ? 'startempty' : 'start';
      },
      _end_: () => {
        this.saveAction = 'end';
      },
      _line_: (data) => {
        this.saveAction = 'join';
        this.isLine = true;
        extractRe(data);
      },
      _exact_: () => undefined,
      _exact_space_: () => undefined,
      _headers_: () => {
        this.saveAction = 'start';
      },
      chain: (data) => {
        const chainName = data.args[0];
        const value =
          typeof chainName === 'string' && hasOwn(vars, chainName) ? vars[chainName] : undefined;
        if (value === undefined || value === null) return;
        const attrs: CallSpec[] = [];
        if (typeof value === 'string') attrs.push(...parseChain(value));
        else if (Array.isArray(value)) for (const v of value) attrs.push(...parseChain(String(v)));
        for (const a of attrs) applyOne(a);
      },
      set: (data) => {
        const matchLine = this.line.replace(VAR_IN_LINE, '').trimEnd();
        if (matchLine) {
          data.kwargs['match_line'] = '\n' + matchLine;
          this.functions.push(data);
        } else {
          this.group.defaults[this.varNameOriginal] = data.args[0];
          this.skipRegexDict = true;
        }
      },
      default: (data) => {
        if (SKIP_DEFAULTS.has(this.varNameOriginal)) return;
        this.group.defaults[this.varNameOriginal] = data.args.length === 1 ? data.args[0] : 'None';
      },
      joinmatches: (data) => {
        this.functions.push(data);
        this.saveAction = 'join';
      },
      re: extractRe,
      macro: () => rejectMacro(`match variable '${this.varNameOriginal}'`),
    };
    for (const n of [
      'contains_re',
      'startswith_re',
      'endswith_re',
      'notstartswith_re',
      'notendswith_re',
      'exclude_re',
      'exclude',
      'contains',
      'equal',
      'notequal',
      'sformat',
    ]) {
      funcs[n] = argsFromVars;
    }
    const applyOne = (a: CallSpec): void => {
      const f = funcs[a.name];
      if (f) f(a);
      else if (getPattern(a.name) !== undefined) extractRe(a);
      else this.functions.push(a);
    };
    const own = funcs[this.varName];
    if (own) own(this.varDict);
    for (const a of this.attributes) applyOne(a);
  }

  /** Builds (or extends, for the 2nd+ variable of a line) the regex for the template line. */
  formRegex(previous: string): string {
    const line = this.line;
    const noIndent = line.trimStart();
    const spans: Array<[number, number]> = [[0, 0]];
    for (const m of noIndent.matchAll(VAR_IN_LINE)) spans.push([m.index, m.index + m[0].length]);
    spans.push([line.length, line.length]);
    const chunks: string[] = [];
    for (let i = 1; i < spans.length; i++) {
      const prev = spans[i - 1] as [number, number];
      const cur = spans[i] as [number, number];
      let before = noIndent.slice(prev[1], cur[0]);
      if (before) {
        before = pyReEscape(before);
        if (!line.includes('_exact_space_')) before = before.replace(/(\\ )+/g, '\\ +');
        if (!line.includes('_exact_')) before = before.replace(/\d+/g, '\\d+');
        chunks.push(before);
      }
      chunks.push(noIndent.slice(cur[0], cur[1]));
    }
    const escLine = chunks.join('');
    const escVar = '{{' + this.variable + '}}';
    let regex: string;
    if (previous === '') {
      const indent = line.slice(0, line.length - noIndent.length);
      regex = '\\n' + indent + escLine + '[\\t ]*(?=\\n|\\r\\n)';
    } else {
      regex = previous;
    }
    const deleteVar = (): void => {
      const index = regex.indexOf(escVar);
      if (index !== -1) {
        regex = regex.slice(0, index).replace(/(\\ \+)$/, '') + '[\\t ]*(?=\\n|\\r\\n)';
      }
    };
    const vars = this.group.vars;
    if (this.varName === 'ignore') {
      if (this.varDict.args.length === 0) {
        regex = replaceFirst(regex, escVar, '\\S+');
      } else {
        const p = String(this.varDict.args[0]);
        const fromVar = hasOwn(vars, p) ? vars[p] : undefined;
        const fromPattern = getPattern(p);
        const use = fromVar ? pyStr(fromVar) : (fromPattern ?? p);
        regex = replaceFirst(regex, escVar, `(?:${use})`);
      }
    } else if (this.varName === '_start_' || this.varName === '_end_') {
      deleteVar();
    } else if (this.varName === '_headers_') {
      regex = this.headersRegex(escVar);
    }
    for (const f of this.functions) if (f.name === 'set') deleteVar();
    if (this.varRes.length === 0) this.varRes.push(getPattern('WORD') as string);
    if (this.varName !== 'ignore') {
      regex = replaceFirst(regex, escVar, `(?P<${this.varName}>(?:${this.varRes.join(')|(?:')}))`);
    }
    return regex;
  }

  /** Fixed-width table row regex from a header line; see TTP's `_headers_` docs. */
  private headersRegex(escVar: string): string {
    const index = this.line.indexOf(escVar);
    let prefix = this.line.slice(0, index).trimEnd();
    const headers = prefix.match(/(\S+\s+|\S+)/g) ?? [];
    prefix = prefix.replace(/\t/g, '    ');
    const indent = prefix.length - prefix.trimStart().length;
    if (headers.length === 0) {
      throw new TtpTemplateError(TtpErrorCode.InvalidTemplate, '_headers_ line has no headers');
    }
    headers[0] = ' '.repeat(indent) + (headers[0] as string);
    const colFn = this.functions.find((f) => f.name === 'columns');
    let columns = headers.length - 2;
    if (colFn && typeof colFn.args[0] === 'number') columns = colFn.args[0];
    columns = Math.min(Math.max(columns, 1), headers.length);
    this.functions = this.functions.filter((f) => f.name !== 'columns');
    const parts = headers.map((h, i) => {
      const name = h.trim();
      const last = i === headers.length - 1;
      if (i < columns - 1) return `(?P<${name}>.{${h.length}})`;
      if (i === columns - 1) return last ? `(?P<${name}>.+)` : `(?P<${name}>.{1,${h.length}})`;
      return last ? `(?P<${name}>.*)` : `(?P<${name}>.{0,${h.length}})`;
    });
    for (const h of headers) {
      const name = h.trim();
      this.subVariables.set(
        name,
        new MatchVariable(`${name} | strip | exclude(${name})`, '', this.group),
      );
    }
    return '\\n' + parts.join('') + '(?=\\n|\\r\\n)';
  }
}

export class Group {
  path: string[];
  defaults: Dict = {};
  runs: Dict = {};
  default: unknown = NOT_GIVEN;
  hasStartReDefault = false;
  outputNames: string[] = [];
  funcs: CallSpec[] = [];
  method = 'group';
  startRe: RegexEntry[] = [];
  endRe: RegexEntry[] = [];
  re: RegexEntry[] = [];
  children: Group[] = [];
  name = '';
  groupId: GroupId | null = null;
  inputs: string[] = [];

  constructor(
    element: XmlElement,
    readonly vars: Dict,
    readonly grpIndex: number,
    readonly top: boolean,
    path: string[],
    readonly pathchar: string,
    readonly parentGroupId: GroupId | null,
  ) {
    this.path = [...path];
    this.getAttributes(element.attrib);
    if (this.name === '') {
      if (this.top) this.path = ['_anonymous_*'];
      this.name = this.path.join('.');
      // distinct from a named parent sharing the path, so ending one does not end the other
      this.groupId = makeId(this.name + '._anonymous_', this.grpIndex);
    }
    this.getRegexes(element.text);
    element.children.forEach((child, index) => {
      this.children.push(new Group(child, vars, index, false, this.path, pathchar, this.groupId));
      if (child.tail.trim()) this.getRegexes(child.tail, true);
    });
  }

  private getAttributes(attrib: Array<[string, string]>): void {
    const options: Record<string, (v: string) => void> = {
      method: (v) => {
        this.method = v.toLowerCase().trim();
      },
      input: (v) => {
        if (this.top) this.inputs = v.split(',').map((s) => s.trim());
      },
      output: (v) => {
        if (this.top) this.outputNames = v.split(',').map((s) => s.trim());
      },
      name: (v) => {
        if (v.startsWith('/')) {
          const rel = v.replace(/^\/+/, '');
          if (this.path.includes('_anonymous_'))
            this.path = ['_anonymous_*', ...rel.split(this.pathchar)];
          else if (v === '/') this.path = ['_anonymous_*'];
          else this.path = rel.split(this.pathchar);
        } else {
          this.path = [...this.path, ...v.split(this.pathchar)];
        }
        this.name = this.path.join('.');
        this.groupId = makeId(this.name, this.grpIndex);
      },
      default: (v) => {
        this.default = hasOwn(this.vars, v) ? this.vars[v] : v;
      },
      chain: (v) => this.extractChain(v),
      functions: (v) => this.extractChain(v),
    };
    for (const [name, value] of attrib) {
      const opt = options[name.toLowerCase()];
      if (opt) opt(value);
      else this.addFunction({ name, ...parseCallArgs(value) });
    }
  }

  private addFunction(spec: CallSpec): void {
    if (spec.name === 'macro') rejectMacro(`group '${this.name || this.path.join('.')}'`);
    this.funcs.push(spec);
  }

  private extractChain(varName: string): void {
    const value = hasOwn(this.vars, varName) ? this.vars[varName] : varName;
    const specs: CallSpec[] = [];
    if (typeof value === 'string') specs.push(...parseChain(value));
    else if (Array.isArray(value)) for (const v of value) specs.push(...parseChain(String(v)));
    for (const s of specs) {
      if (s.name === 'method') this.method = pyStr(s.args[0] ?? 'group').toLowerCase();
      else if (s.name === 'default') this.default = s.args[0];
      else if (GROUP_FUNCTION_NAMES.has(s.name)) this.addFunction(s);
      else if (s.name === 'macro') rejectMacro('group chain');
      // unknown group functions are ignored, as TTP logs and skips them
    }
  }

  private getRegexes(data: string, tail = false): void {
    const lines: Array<{ vars: string[]; line: string }> = [];
    for (const raw of data.split(/\r\n|\r|\n/)) {
      if (!raw.trim()) continue;
      if (raw.trimStart().startsWith('##')) continue;
      const line = raw.trimEnd();
      const vars = [...line.matchAll(VAR_IN_LINE)].map((m) => m[1] as string);
      if (vars.length === 0) continue;
      lines.push({ vars, line });
    }
    const regexes: RegexEntry[] = [];
    for (const item of lines) {
      let regex = '';
      const variables = new Map<string, MatchVariable>();
      let action = 'add';
      let isLine = false;
      let skipRegex = false;
      for (const variable of item.vars) {
        const v = new MatchVariable(variable, item.line, this);
        if (v.skipRegexDict) {
          skipRegex = true;
          continue;
        }
        if (!v.skipVariableDict) {
          variables.set(v.varName, v);
          variables.set(v.varNameOriginal, v);
        }
        regex = v.formRegex(regex);
        for (const [k, sv] of v.subVariables) variables.set(k, sv);
        if (!isLine) isLine = v.isLine;
        if (!action.includes('start') && v.varName !== 'ignore') action = v.saveAction;
      }
      if (skipRegex) continue;
      let compiled: RegExp;
      try {
        compiled = new RegExp(pyRegexToJs(regex), 'g');
      } catch (err) {
        throw new TtpTemplateError(
          TtpErrorCode.InvalidTemplate,
          `invalid regular expression for template line '${item.line.trim()}'`,
          { cause: err },
        );
      }
      regexes.push({ regex: compiled, variables, action, group: this, isLine });
    }
    regexes.forEach((entry, index) => {
      if (entry.action.includes('end')) {
        this.endRe.push(entry);
      } else if (tail) {
        this.re.push(entry);
      } else if (index === 0 || this.method === 'table') {
        if (!entry.action.includes('start')) entry.action = 'start';
        this.startRe.push(entry);
      } else if (entry.action.includes('start')) {
        this.startRe.push(entry);
      } else {
        this.re.push(entry);
      }
    });
    if (isPlainObject(this.default)) {
      Object.assign(this.defaults, this.default);
      if (this.startRe.length === 0) this.hasStartReDefault = true;
    }
    for (const s of this.startRe) {
      if (this.hasStartReDefault) break;
      for (const k of s.variables.keys()) {
        if (hasOwn(this.defaults, k)) {
          this.hasStartReDefault = true;
          break;
        }
      }
    }
  }

  /** Per-input copy of defaults, since `set` values get resolved against vars. */
  setRuns(): void {
    this.runs = structuredClone(this.defaults);
    for (const c of this.children) c.setRuns();
  }

  updateRuns(data: Dict): void {
    for (const [k, v] of Object.entries(data)) {
      for (const [dk, dv] of Object.entries(this.runs)) {
        if (dv === k) this.runs[dk] = v;
      }
    }
    for (const c of this.children) c.updateRuns(data);
  }
}

export const GROUP_FUNCTION_NAMES = new Set([
  'contains',
  'containsall',
  'contains_val',
  'exclude',
  'excludeall',
  'exclude_val',
  'equal',
  'del',
  'record',
  'set',
  'to_int',
  'to_ip',
  'expand',
  'items2dict',
  'itemize',
  'lookup',
  'void',
  'sformat',
  'str_to_unicode',
]);

function makeId(name: string, index: number): GroupId {
  return { name, index, key: `${name}\u0000${index}` };
}

export function isPlainObject(v: unknown): v is Dict {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    Object.getPrototypeOf(v) === Object.prototype
  );
}

export interface InputDef {
  name: string;
  data: string[];
  groupsIndexes: number[];
}

export interface OutputDef {
  name: string | undefined;
  attributes: Dict;
  text: string;
}

export class Template {
  pathchar = '.';
  vars: Dict = {};
  varsToResults: Record<string, string[]> = {};
  varFunctions: Record<string, string> = {};
  outputs: OutputDef[] = [];
  groups: Group[] = [];
  inputs = new Map<string, InputDef>();
  lookups: Dict = {};
  templates: Template[] = [];
  results: unknown = [];
  resultsMethod = 'per_input';
  name: string;

  constructor(text: string | XmlElement, name: string) {
    this.name = name;
    const root = typeof text === 'string' ? toTemplateElement(text) : text;
    if (
      root.tag.toLowerCase() === 'template' &&
      (typeof text !== 'string' || root.attrib.length > 0)
    ) {
      this.applyTemplateAttributes(root);
    }
    if (root.children.length === 0) {
      this.groups.push(
        new Group(
          {
            tag: 'g',
            attrib: [['name', '_anonymous_']],
            text: '\n' + root.text + '\n',
            tail: '',
            children: [],
          },
          this.vars,
          0,
          true,
          [],
          this.pathchar,
          null,
        ),
      );
    } else {
      this.parseHierarchical(root);
    }
    for (const [k, v] of Object.entries(this.vars)) {
      if (typeof v === 'string' && VARIABLE_GETTERS.has(v)) this.varFunctions[k] = v;
    }
    for (const k of Object.keys(this.varFunctions)) delete this.vars[k];
  }

  private applyTemplateAttributes(el: XmlElement): void {
    for (const [k, v] of el.attrib) {
      if (k === 'name') this.name = v;
      else if (k === 'results') this.resultsMethod = v;
      else if (k === 'pathchar') this.pathchar = v;
    }
  }

  private parseHierarchical(root: XmlElement): void {
    const tags: Record<string, XmlElement[]> = {
      vars: [],
      groups: [],
      inputs: [],
      outputs: [],
      lookups: [],
      template: [],
    };
    const kinds: Record<string, string> = {
      v: 'vars',
      vars: 'vars',
      variables: 'vars',
      g: 'groups',
      grp: 'groups',
      group: 'groups',
      o: 'outputs',
      out: 'outputs',
      output: 'outputs',
      i: 'inputs',
      in: 'inputs',
      input: 'inputs',
      lookup: 'lookups',
      template: 'template',
    };
    for (const child of root.children) {
      const tag = child.tag.toLowerCase();
      if (tag === 'macro') rejectMacro('<macro> tag');
      const kind = kinds[tag];
      if (kind) tags[kind]?.push(child);
      // <doc> and unknown tags carry nothing to parse
    }
    (tags['template'] ?? []).forEach((t, i) => this.templates.push(new Template(t, String(i))));
    for (const v of tags['vars'] ?? []) {
      const loaded = loadStruct(v.text, getAttr(v, 'load') ?? 'python');
      Object.assign(this.vars, loaded);
      const path = getAttr(v, 'name');
      if (path !== undefined) {
        const list = (this.varsToResults[path] ??= []);
        list.push(...Object.keys(loaded));
      }
    }
    for (const o of tags['outputs'] ?? []) {
      const attributes: Dict = { returner: 'self', format: 'raw' };
      for (const [k, v] of o.attrib) attributes[k] = v;
      if (attributes['macro'] !== undefined) rejectMacro('output macro');
      this.outputs.push({ name: getAttr(o, 'name'), attributes, text: o.text });
    }
    for (const l of tags['lookups'] ?? []) {
      const name = getAttr(l, 'name');
      if (name === undefined) continue;
      this.lookups[name] = loadStruct(l.text, getAttr(l, 'load') ?? 'python', getAttr(l, 'key'));
    }
    (tags['groups'] ?? []).forEach((g, i) =>
      this.groups.push(new Group(g, this.vars, i, true, [], this.pathchar, null)),
    );
    for (const i of tags['inputs'] ?? []) {
      const load = getAttr(i, 'load') ?? 'python';
      if (load.trim() === 'macro') rejectMacro('input macro');
      const name = (getAttr(i, 'name') ?? 'Default_Input').trim();
      const groupsAttr = getAttr(i, 'groups') ?? 'all';
      this.addInput(
        name,
        load.trim() === 'text' ? [i.text] : [],
        groupsAttr.split(',').map((s) => s.trim()),
      );
    }
  }

  /** Adds data to a named input, creating it (with TTP's group selection) if needed. */
  addInput(name: string, data: string[], groupNames: string[] = ['all']): void {
    const inputGroups = this.groups
      .filter(
        (g) => g.inputs.length === 0 && (groupNames.includes('all') || groupNames.includes(g.name)),
      )
      .map((g) => g.grpIndex);
    const groupInputs = this.groups.filter((g) => g.inputs.includes(name)).map((g) => g.grpIndex);
    const indexes = [...new Set(groupInputs.length ? groupInputs : inputGroups)].sort(
      (a, b) => a - b,
    );
    const existing = this.inputs.get(name);
    if (existing) {
      existing.data.push(...data);
      existing.groupsIndexes = [...new Set([...existing.groupsIndexes, ...indexes])];
    } else {
      this.inputs.set(name, { name, data: [...data], groupsIndexes: indexes });
    }
  }
}

/** ElementTree's fallback: a document that is not one XML root is wrapped in <template>. */
function toTemplateElement(text: string): XmlElement {
  try {
    const root = parseXmlDocument(text);
    if (root.tag.toLowerCase() !== 'template') {
      return { tag: 'template', attrib: [], text: '', tail: '', children: [root] };
    }
    return root;
  } catch (err) {
    if (!(err instanceof XmlSyntaxError)) throw err;
  }
  try {
    const root = parseXmlDocument(`<template>\n${text}\n</template>`);
    // attributes only come from a template's own root tag
    root.attrib = [];
    return root;
  } catch (err) {
    throw new TtpTemplateError(
      TtpErrorCode.InvalidTemplate,
      `template is not valid TTP/XML: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}
