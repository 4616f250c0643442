import nunjucks from 'nunjucks';
import { codePointName, forbiddenCharIn, type ValidationIssue } from '@svc/proto';

/**
 * Configuration templates: Jinja2 syntax through Nunjucks, rendered to configuration lines
 * (docs/config-workflows.md). A template reaches nothing outside itself: no file system or
 * network loader (include, import and extends are refused), only the request's `vars`, and only
 * their own properties (Nunjucks is not a sandbox: `"".constructor.constructor` would reach the
 * Function constructor, so every lookup outside the given data is refused, see `hardenRuntime`).
 * Undefined is strict: a variable the template uses and `vars` does not give is a 422 naming it.
 */

/** Longest template, in bytes of UTF-8. */
export const MAX_TEMPLATE_BYTES = 64 * 1024;

/** Names every template may use without `vars` giving them. */
const BUILTINS = new Set(['range', 'cycler', 'joiner', 'loop', 'caller', 'super']);
/** Tests after `is` that ask whether a variable exists: such a use needs no value. */
const EXISTENCE_TESTS = new Set(['defined', 'undefined']);
/** Nodes that would load another template. */
const LOADING_NODES = new Set(['Include', 'Import', 'FromImport', 'Extends']);

/** Why a template could not be rendered: issues located under the request's fields. */
export class TemplateProblem extends Error {
  constructor(readonly issues: ValidationIssue[]) {
    super(issues.map((i) => i.msg).join('; '));
  }
}

/** Where a template and its vars sit in the request body (for the issues' `loc`). */
export interface TemplateLocation {
  template: (string | number)[];
  vars: (string | number)[];
}

interface NjNode {
  typename: string;
  fields: string[];
  value?: unknown;
  children?: NjNode[];
  [field: string]: unknown;
}

interface NjInternals {
  parser: { parse(src: string): NjNode };
  runtime: Record<string, unknown>;
}
const internals = nunjucks as unknown as NjInternals;

/** A loader that loads nothing: include, import and extends fail with this message. */
const NO_LOADER = {
  getSource(): never {
    throw new Error('templates may not include, import or extend other templates');
  },
};

const env = new nunjucks.Environment(NO_LOADER, {
  autoescape: false,
  throwOnUndefined: true,
});

let hardened = false;

/**
 * Nunjucks resolves `a.b` and bare names with plain property reads, inherited ones included.
 * Here a lookup answers only own properties of plain data (objects, arrays, strings' indexes
 * and length) and of the template's frame, context and the Nunjucks globals: no prototype, no
 * constructor, no method of a value.
 */
function hardenRuntime(): void {
  if (hardened) return;
  hardened = true;
  const rt = internals.runtime;
  rt['memberLookup'] = (obj: unknown, key: unknown): unknown => {
    if (obj === null || obj === undefined) return undefined;
    const k = typeof key === 'number' ? key : String(key);
    if (typeof obj === 'string') {
      return k === 'length' || /^\d+$/.test(String(k)) ? obj[k as number] : undefined;
    }
    if (typeof obj !== 'object') return undefined;
    return Object.hasOwn(obj, k) ? (obj as Record<string | number, unknown>)[k] : undefined;
  };
  rt['contextOrFrameLookup'] = (
    context: { ctx: Record<string, unknown>; env: { globals: Record<string, unknown> } },
    frame: { lookup(name: string): unknown },
    name: string,
  ): unknown => {
    const fromFrame = frame.lookup(name);
    if (fromFrame !== undefined) return fromFrame;
    if (Object.hasOwn(context.ctx, name)) return context.ctx[name];
    if (Object.hasOwn(context.env.globals, name)) return context.env.globals[name];
    return undefined;
  };
}

/**
 * The variables a template reads that it does not set itself, in order of first use: `free`
 * must be given, `reads` also holds those it treats as optional.
 */
export function freeVariables(ast: NjNode): { free: string[]; reads: string[]; loads: string[] } {
  const used: string[] = [];
  const assigned = new Set<string>();
  const loads: string[] = [];
  // Names the template itself treats as optional (`x is defined`, `x | default(…)`): a use of
  // one the request lacks is judged when rendering (an output of nothing is a render error).
  const optional = new Set<string>();
  const assign = (target: unknown): void => {
    const node = target as NjNode | undefined;
    if (!node) return;
    if (node.typename === 'Symbol') assigned.add(String(node.value));
    else if (node.typename === 'KeywordArgs' || node.typename === 'Pair')
      for (const c of node.children ?? [node]) assign(c['key']);
    for (const c of node.children ?? []) assign(c);
  };
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk);
    const node = value as NjNode | null;
    if (!node || typeof node !== 'object' || typeof node.typename !== 'string') return;
    const t = node.typename;
    if (LOADING_NODES.has(t)) loads.push(t.toLowerCase());
    switch (t) {
      case 'Symbol':
        used.push(String(node.value));
        return;
      case 'For':
      case 'AsyncEach':
      case 'AsyncAll':
        assign(node['name']);
        walk(node['arr']);
        walk(node['body']);
        walk(node['else_']);
        return;
      case 'Set':
        for (const target of (node['targets'] as NjNode[] | undefined) ?? []) assign(target);
        walk(node['value']);
        walk(node['body']);
        return;
      case 'Macro':
      case 'Caller': {
        assign(node['name']);
        const args = node['args'] as NjNode | undefined;
        for (const a of args?.children ?? []) {
          if (a.typename === 'KeywordArgs') {
            for (const pair of a.children ?? []) {
              assign(pair['key']);
              walk(pair['value']);
            }
          } else assign(a);
        }
        walk(node['body']);
        return;
      }
      case 'FunCall':
      case 'Filter':
      case 'FilterAsync': {
        const args = (node['args'] as NjNode | undefined)?.children ?? [];
        // Filters are names, not variables; `x | default(…)` needs no x.
        if (t !== 'FunCall') {
          const name = (node['name'] as NjNode | undefined)?.value;
          const [first, ...rest] = args;
          if ((name === 'default' || name === 'd') && first?.typename === 'Symbol') {
            optional.add(String(first.value));
            rest.forEach(walk);
            return;
          }
        } else walk(node['name']);
        args.forEach(walk);
        return;
      }
      case 'KeywordArgs':
      case 'Dict':
        for (const pair of node.children ?? []) walk(pair['value']);
        return;
      case 'Is': {
        const right = node['right'] as NjNode | undefined;
        const left = node['left'] as NjNode | undefined;
        const test = right?.typename === 'Symbol' ? right.value : undefined;
        if (right?.typename === 'FunCall') walk((right['args'] as NjNode | undefined)?.children);
        if (typeof test === 'string' && EXISTENCE_TESTS.has(test) && left?.typename === 'Symbol')
          optional.add(String(left.value));
        else walk(left);
        return;
      }
      case 'Block':
        walk(node['body']);
        return;
      default:
        if (node.children) walk(node.children);
        for (const f of node.fields ?? []) walk(node[f]);
    }
  };
  walk(ast);
  const free: string[] = [];
  const reads: string[] = [];
  for (const name of [...used, ...optional]) {
    if (assigned.has(name) || BUILTINS.has(name)) continue;
    if (!reads.includes(name)) reads.push(name);
    if (!optional.has(name) && !free.includes(name)) free.push(name);
  }
  return { free, reads, loads };
}

/** A template's syntax problems, or null: checked when it is stored and before each render. */
export function templateProblems(text: string, at: TemplateLocation): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (Buffer.byteLength(text, 'utf8') > MAX_TEMPLATE_BYTES) {
    return [
      {
        loc: at.template,
        msg: `ensure this template has at most ${MAX_TEMPLATE_BYTES} bytes`,
        type: 'string_too_long',
      },
    ];
  }
  let ast: NjNode;
  try {
    ast = internals.parser.parse(text);
  } catch (err) {
    return [{ loc: at.template, msg: syntaxMessage(err), type: 'template_syntax' }];
  }
  const { loads } = freeVariables(ast);
  if (loads.length > 0) {
    issues.push({
      loc: at.template,
      msg: `templates may not include, import or extend other templates (found ${[...new Set(loads)].join(', ')})`,
      type: 'template_syntax',
    });
  }
  return issues;
}

/**
 * Renders a template with `vars` into configuration lines (blank lines dropped, trailing
 * whitespace removed). Throws `TemplateProblem` for a syntax error, a load, an undefined
 * variable or a render error.
 */
export function renderConfig(
  text: string,
  vars: Record<string, unknown>,
  at: TemplateLocation,
): string[] {
  hardenRuntime();
  const problems = templateProblems(text, at);
  if (problems.length > 0) throw new TemplateProblem(problems);
  const { free, reads } = freeVariables(internals.parser.parse(text));
  // A value's line break would become a configuration line of its own (`hostname R1\nusername
  // …`): only the template's own text makes lines. Variables it does not read are not judged.
  const unsafe = reads.flatMap((name) =>
    Object.hasOwn(vars, name) ? controlCharIssues(vars[name], [...at.vars, name]) : [],
  );
  if (unsafe.length > 0) throw new TemplateProblem(unsafe);
  const missing = free.filter((name) => !Object.hasOwn(vars, name));
  if (missing.length > 0) {
    throw new TemplateProblem(
      missing.map((name) => ({
        loc: [...at.vars, name],
        msg: `undefined variable ${JSON.stringify(name)}: the template uses it and vars does not give it`,
        type: 'undefined_variable',
      })),
    );
  }
  let out: string;
  try {
    out = new nunjucks.Template(text, env, 'template', true).render(vars);
  } catch (err) {
    throw new TemplateProblem([
      { loc: at.template, msg: renderMessage(err), type: 'template_error' },
    ]);
  }
  return out
    .split(/\r?\n/)
    .map((l) => l.trimEnd())
    .filter((l) => l !== '');
}

/**
 * Issues for each string in a variable's value (keys of mappings included, at any depth) that
 * holds a line break or another control character; the value itself is never echoed.
 */
function controlCharIssues(value: unknown, loc: (string | number)[], depth = 0): ValidationIssue[] {
  if (depth > 32) return [];
  if (typeof value === 'string') {
    const found = forbiddenCharIn(value);
    if (found === null) return [];
    return [
      {
        loc,
        msg: `character ${codePointName(found.codePoint)} at position ${found.index} is not allowed in a template variable: a line break would add a configuration line (no line breaks or other control characters; let the template make the lines, e.g. loop over a list)`,
        type: 'value_error',
      },
    ];
  }
  if (Array.isArray(value)) {
    return value.flatMap((v, i) => controlCharIssues(v, [...loc, i], depth + 1));
  }
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => [
      ...controlCharIssues(k, [...loc, k], depth + 1),
      ...controlCharIssues(v, [...loc, k], depth + 1),
    ]);
  }
  return [];
}

function syntaxMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return `template syntax error: ${oneLine(text)}`;
}

function renderMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return `template render error: ${oneLine(text)}`;
}

/** Nunjucks messages span lines ("(unknown path) [Line 1, Column 4]\n  …"): one line here. */
function oneLine(text: string): string {
  return text
    .replace(/\(unknown path\)\s*/g, '')
    .replace(/^Template render error:\s*/i, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .join(' ')
    .slice(0, 500);
}
