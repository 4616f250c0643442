// Runs compiled templates over inputs: matches every group's regexes against
// the text (TTP's _parser_class), sorts the hits by position, then builds the
// results and applies template outputs.
import { runMatchFunction, type MatchFlag } from './match-functions.js';
import { runOutput } from './outputs.js';
import { ResultsBuilder, type MatchHit } from './results.js';
import type { RunContext } from './run-context.js';
import {
  isPlainObject,
  type Dict,
  type Group,
  type RegexEntry,
  type Template,
} from './template.js';

/** TTP's variable getters, run against each input's text. */
function runVarGetter(name: string, text: string): unknown {
  if (name === 'gethostname') {
    const res = [
      /\n\S{1,2}:(\S+?)[>#].*(?=\n)/,
      /\n\S+:(\S+)#.*(?=\n)/,
      /\n(\S+)#.*(?=\n)/,
      /\n\S*@(\S+)>.*(?=\n)/,
      /\n<(\S+)>.*(?=\n)/,
      /\n(\S+)>.*(?=\n)/,
      /\n(\S+ \(\S+\)) #.*(?=\n)/,
    ];
    for (const re of res) {
      const m = re.exec(text);
      if (m) return (m[1] as string).replace(/^\ufeff+/, '');
    }
    return false;
  }
  if (name === 'getfilename') return 'text_data';
  return false;
}

/** The input text, shared by reference through the recursive group runs. */
interface Slice {
  text: string;
}

class InputParser {
  private readonly ctx: RunContext;

  constructor(
    private readonly template: Template,
    private readonly data: string,
    globalVars: Dict,
    templates: Template[],
    mainResults: unknown,
  ) {
    this.ctx = {
      vars: { ...template.vars },
      globalVars,
      lookups: template.lookups,
      templates,
      template,
      mainResults,
    };
  }

  parse(groupIndexes: number[]): unknown {
    const text = '\n' + this.data + '\n\n';
    for (const [name, getter] of Object.entries(this.template.varFunctions)) {
      const v = runVarGetter(getter, text);
      if (v) this.ctx.vars[name] = v;
    }
    for (const g of this.template.groups) g.setRuns();
    const slice: Slice = { text };
    const unsorted: Array<Map<number, MatchHit[]>> = [];
    const perGroupOutput: Array<{ hits: Map<number, MatchHit[]>; outputs: string[] }> = [];
    for (const index of groupIndexes) {
      const group = this.template.groups[index];
      if (!group) continue;
      const hits = new Map<number, MatchHit[]>();
      this.runRe(group, hits, slice, 0, -1);
      if (group.outputNames.length === 0) unsorted.push(hits);
      else perGroupOutput.push({ hits, outputs: group.outputNames });
    }
    for (const g of this.template.groups) g.updateRuns(this.ctx.globalVars);
    for (const g of this.template.groups) g.updateRuns(this.ctx.vars);
    const sortHits = (m: Map<number, MatchHit[]>): MatchHit[][] =>
      [...m.keys()].sort((a, b) => a - b).map((k) => m.get(k) as MatchHit[]);
    const raw = unsorted.filter((m) => m.size > 0).map(sortHits);
    const builder = new ResultsBuilder(this.ctx);
    builder.makeResults(this.ctx.vars, this.template.varsToResults, raw, this.ctx.mainResults);
    let main = builder.results;
    for (const { hits, outputs } of perGroupOutput) {
      if (hits.size === 0) continue;
      const b = new ResultsBuilder(this.ctx);
      b.makeResults(this.ctx.vars, this.template.varsToResults, [sortHits(hits)], {});
      let grpResult: unknown = b.results;
      for (const outName of outputs) {
        const out = this.template.outputs.find((o) => o.name === outName);
        if (out) grpResult = runOutput(out, grpResult);
      }
      if (isPlainObject(main)) main = Object.keys(main).length ? [main] : [];
      if (Array.isArray(main)) main.push(grpResult);
    }
    return main;
  }

  private slice(text: string, start: number, end: number): string {
    return end === -1 ? text.slice(start, -1) : text.slice(start, end);
  }

  private checkMatches(
    re: RegexEntry,
    text: string,
    results: Map<number, MatchHit[]>,
    start: number,
  ): RegExpExecArray[] {
    const matches: RegExpExecArray[] = [];
    re.regex.lastIndex = 0;
    for (let m = re.regex.exec(text); m !== null; m = re.regex.exec(text)) {
      matches.push(m);
      if (m[0] === '') re.regex.lastIndex++;
    }
    for (const match of matches) {
      let result: Dict | false = {};
      let temp: Array<[string, unknown]>;
      const groups = match.groups;
      if (groups && Object.keys(groups).length > 0) {
        temp = Object.entries(groups).filter(([, v]) => v !== undefined);
      } else {
        temp = [...re.variables.keys()].map((k) => [k, match[0]]);
      }
      for (const [varName, value] of temp) {
        let data: unknown = value;
        const variable = re.variables.get(varName);
        if (!variable) continue;
        const newFields: Dict = {};
        for (const fn of variable.functions) {
          let flag: MatchFlag;
          try {
            [data, flag] = runMatchFunction(fn, data, this.ctx);
          } catch {
            // a conversion that fails (to_ip on a non-address) leaves the value as matched
            flag = undefined;
          }
          if (flag === false) {
            result = false;
            break;
          }
          if (typeof flag === 'object') Object.assign(newFields, flag.new_field);
        }
        if (result === false) break;
        result[variable.varNameOriginal] = data;
        Object.assign(result, newFields);
      }
      if (result === false && !re.action.startsWith('start')) continue;
      const spanStart = start + match.index;
      const list = results.get(spanStart);
      if (list) list.push([re, result]);
      else results.set(spanStart, [[re, result]]);
    }
    return matches;
  }

  private runRe(
    group: Group,
    results: Map<number, MatchHit[]>,
    slice: Slice,
    start: number,
    end: number,
  ): void {
    let s = 0; // the first start match
    let se = 0; // the end of the last (non _line_) start match
    let e = -1; // the end of the last _end_ match
    let startFound = false;
    const origin = start;
    for (const R of group.startRe) {
      const matches = this.checkMatches(R, this.slice(slice.text, start, end), results, start);
      const first = matches[0];
      const last = matches[matches.length - 1];
      if (!first || !last) continue;
      if (s > first.index || !startFound) {
        startFound = true;
        s = first.index;
      }
      // TTP compares the slice-relative index with the absolute end here; kept as TTP does
      if (se < last.index && !R.isLine) se = last.index + last[0].length + origin;
    }
    start += s;
    if (!startFound) {
      if (group.hasStartReDefault) {
        let key = 10000000;
        const startRe: RegexEntry = group.startRe[0] ?? {
          regex: /$^/g,
          variables: new Map(),
          action: 'start',
          group,
          isLine: false,
        };
        while (results.has(key)) key++;
        results.set(key, [[startRe, {}]]);
      }
      // only children that can produce defaults run without their parent's start
      for (const child of group.children) {
        if (group.startRe.length === 0 || child.hasStartReDefault)
          this.runRe(child, results, slice, start, end);
      }
      return;
    }
    for (const R of group.endRe) {
      const matches = this.checkMatches(R, this.slice(slice.text, start, end), results, start);
      const last = matches[matches.length - 1];
      if (!last) continue;
      const lastEnd = last.index + last[0].length;
      if (e < lastEnd && lastEnd > se) e = lastEnd;
    }
    if (e !== -1) {
      end = start + e;
      // drop this group's hits past its last _end_ (possible with _line_ starts)
      for (const [spanStart, hits] of [...results.entries()]) {
        if (spanStart <= end) continue;
        const kept = hits.filter(([r]) => r.group !== group);
        if (kept.length === 0) results.delete(spanStart);
        else results.set(spanStart, kept);
      }
    }
    for (const R of group.re)
      this.checkMatches(R, this.slice(slice.text, start, end), results, start);
    for (const child of group.children) this.runRe(child, results, slice, start, end);
  }
}

/** Parses every input of every template; returns TTP's `parser.result()` list. */
export function runTemplates(templates: Template[]): unknown[] {
  const globalVars: Dict = {};
  for (const template of templates) {
    if (template.resultsMethod.toLowerCase() === 'per_template') {
      let acc: unknown = {};
      for (const input of template.inputs.values()) {
        for (const datum of input.data) {
          acc = new InputParser(template, datum, globalVars, templates, acc).parse(
            input.groupsIndexes,
          );
        }
      }
      formResults(template, acc);
    } else {
      template.results = [];
      for (const input of template.inputs.values()) {
        for (const datum of input.data) {
          const res = new InputParser(template, datum, globalVars, templates, {}).parse(
            input.groupsIndexes,
          );
          formResults(template, res);
        }
      }
    }
  }
  for (const template of templates) {
    for (const out of template.outputs) template.results = runOutput(out, template.results);
  }
  return templates.map((t) => t.results);
}

/** Merges the anonymous group's list with named results (TTP's form_results). */
function formResults(template: Template, result: unknown): void {
  let datum: unknown = result;
  if (isPlainObject(result) && Object.prototype.hasOwnProperty.call(result, '_anonymous_')) {
    datum = result['_anonymous_'];
    delete result['_anonymous_'];
    if (Object.keys(result).length > 0) {
      if (Array.isArray(datum)) datum.push(result);
      else datum = [datum, result];
    }
  }
  if (template.resultsMethod.toLowerCase() === 'per_template') template.results = datum;
  else (template.results as unknown[]).push(datum);
}
