// Turns the position-sorted regex matches of one input into the nested result
// structure, following TTP's _results_class (0.9 semantics): a "record"
// accumulates one group item until the next start; a group that fails a check
// or meets its `_end_` is "ended" until it starts again; a match for a group
// that is still open but no longer the current record (a tail match, after a
// child group) reopens that group's last item and merges into it. Paths with
// `*` make lists, `**` merge into dicts.
import { pyStr } from './py-literal.js';
import { isPlainObject, type Dict, type Group, type GroupId, type RegexEntry } from './template.js';
import type { CallSpec } from './py-literal.js';
import type { RunContext } from './run-context.js';
import { runGroupFunction } from './group-functions.js';

/** One regex match at a text position: the regex and its processed values (false = failed check). */
export type MatchHit = [RegexEntry, Dict | false];

/**
 * A resolved path item: its name and its trailing asterisks, kept apart so that a
 * dynamic path value ending in `*` is not read as a list marker (TTP issue 97).
 */
export type PathKey = [name: string, stars: string];

interface GroupRecord {
  result: Dict;
  PATH: string[];
  FUNCTIONS: CallSpec[];
  DEFAULTS: Dict;
  GRP_ID: GroupId | null;
  /** A tail match: merge into the last saved item of the path instead of adding one. */
  mergeWithLast: boolean;
}

function emptyRecord(): GroupRecord {
  return { result: {}, PATH: [], FUNCTIONS: [], DEFAULTS: {}, GRP_ID: null, mergeWithLast: false };
}

function samePath(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function hasOwn(o: object, k: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, k);
}

/** Python truthiness of a value saved into a list (empty items are not appended). */
function truthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isPlainObject(v)) return Object.keys(v).length > 0;
  return true;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export class ResultsBuilder {
  results: unknown = {};
  startedGroups: string[] = [];
  endedGroups = new Set<string>();
  record: GroupRecord = emptyRecord();
  dynPathCache: Dict = {};
  private variables: Dict = {};

  constructor(private readonly ctx: RunContext) {}

  makeResults(
    variables: Dict,
    varsToResults: Record<string, string[]>,
    rawResults: MatchHit[][][],
    mainResults: unknown,
  ): void {
    this.results = mainResults;
    this.variables = variables;
    if (rawResults.length > 0) this.saveVars(variables, varsToResults);
    for (const groupResults of rawResults) {
      for (const hits of groupResults) {
        const [re, data] = hits.length === 1 ? (hits[0] as MatchHit) : this.choose(hits);
        const group = re.group;
        const id = group.groupId?.key ?? '';
        if (data === false) {
          this.endedGroups.add(id);
          continue;
        }
        const parent = group.parentGroupId?.key;
        if (parent !== undefined && this.endedGroups.has(parent)) continue;
        if (this.endedGroups.has(id)) {
          if (!re.action.startsWith('start')) continue;
          this.endedGroups.delete(id);
        }
        this.save(re.action, data, [...group.path], group, re);
      }
    }
    if (this.processGroup() !== false) this.saveCurElements(this.record.result, this.pathKeys());
  }

  /** Picks one of several regexes that matched at the same position, as TTP prefers them. */
  private choose(hits: MatchHit[]): MatchHit {
    const startEmpty: MatchHit[] = [];
    const start: MatchHit[] = [];
    const normal: MatchHit[] = [];
    const line: MatchHit[] = [];
    for (const hit of hits) {
      const r = hit[0];
      if (r.isLine) line.push(hit);
      else if (r.action === 'start') start.push(hit);
      else if (r.action === 'startempty') startEmpty.push(hit);
      else normal.push(hit);
    }
    const recId = this.record.GRP_ID;
    const isCurrent = (g: Group): boolean => recId !== null && g.groupId?.key === recId.key;
    const isStarted = (id: GroupId | null): boolean =>
      id !== null && this.startedGroups.includes(id.key);
    const starts = startEmpty.length ? startEmpty : start;
    if (starts.length) {
      for (const hit of starts) if (hit[1] !== false && isCurrent(hit[0].group)) return hit;
      let last = starts[starts.length - 1] as MatchHit;
      for (const hit of starts) {
        last = hit;
        if (hit[1] === false) continue;
        const g = hit[0].group;
        // a child of the current record's group, or a group whose parent is open
        if (recId && g.groupId?.name.startsWith(recId.name)) return hit;
        if (isStarted(g.parentGroupId)) return hit;
      }
      return last;
    }
    if (normal.length) {
      for (const hit of normal) if (isCurrent(hit[0].group)) return hit;
      for (const hit of normal) if (isStarted(hit[0].group.groupId)) return hit;
      return normal[normal.length - 1] as MatchHit;
    }
    for (const hit of line) if (isCurrent(hit[0].group)) return hit;
    return line[line.length - 1] as MatchHit;
  }

  private save(action: string, result: Dict, PATH: string[], group: Group, re: RegexEntry): void {
    switch (action) {
      case 'start':
      case 'startempty':
        this.start(action === 'start' ? result : {}, PATH, group, re);
        return;
      case 'add':
        this.add(result, PATH, group, re);
        return;
      case 'join':
        this.join(result, PATH, group, re);
        return;
      case 'end':
        this.end(PATH, group);
        return;
      default:
        return;
    }
  }

  private saveVars(variables: Dict, varsToResults: Record<string, string[]>): void {
    for (const pathItem of Object.keys(varsToResults).sort()) {
      if (!pathItem) continue;
      const result: Dict = {};
      for (const name of varsToResults[pathItem] ?? []) {
        if (hasOwn(variables, name)) result[name] = variables[name];
      }
      this.record = { ...emptyRecord(), result, PATH: pathItem.split('.').map((s) => s.trim()) };
      const processed = this.formPath(this.record.PATH);
      if (processed === false || processed.length === 0) continue;
      this.saveCurElements(this.record.result, processed);
    }
    this.record = emptyRecord();
  }

  private traceStart(group: Group, re: RegexEntry): void {
    const id = group.groupId?.key ?? '';
    while (this.startedGroups.length) {
      if (group.parentGroupId?.key === this.startedGroups[this.startedGroups.length - 1]) {
        this.startedGroups.push(id);
        return;
      }
      // a _line_ group keeps the groups before it open, to collect unmatched lines
      if (re.isLine) {
        this.startedGroups.push(id);
        return;
      }
      this.startedGroups.pop();
    }
    this.startedGroups.push(id);
  }

  private start(result: Dict, PATH: string[], group: Group, re: RegexEntry): void {
    this.traceStart(group, re);
    if (this.processGroup() !== false) this.saveCurElements(this.record.result, this.pathKeys());
    this.record = {
      result,
      DEFAULTS: { ...group.runs },
      PATH,
      FUNCTIONS: group.funcs,
      GRP_ID: group.groupId,
      mergeWithLast: false,
    };
  }

  /** Starts a record that merges into the last item saved at the group's path. */
  private reopen(result: Dict, PATH: string[], group: Group, re: RegexEntry): void {
    this.start(result, PATH, group, re);
    this.record.mergeWithLast = true;
    // the item's defaults were applied when it was first saved
    this.record.DEFAULTS = {};
  }

  private add(result: Dict, PATH: string[], group: Group, re: RegexEntry): void {
    if (samePath(this.record.PATH, PATH)) {
      // values already in the record win over later matches
      this.record.result = { ...result, ...this.record.result };
    } else if (group.groupId && this.startedGroups.includes(group.groupId.key)) {
      this.reopen(result, PATH, group, re);
    }
  }

  private join(result: Dict, PATH: string[], group: Group, re: RegexEntry): void {
    if (!samePath(this.record.PATH, PATH)) {
      if (group.groupId && this.startedGroups.includes(group.groupId.key))
        this.reopen(result, PATH, group, re);
      return;
    }
    let joinchar = '\n';
    for (const name of Object.keys(result)) {
      const v = re.variables.get(name);
      if (!v) continue;
      const jm = v.functions.find((f) => f.name === 'joinmatches');
      if (jm) {
        if (jm.args.length) joinchar = String(jm.args[0]);
        break;
      }
    }
    const rec = this.record.result;
    for (const [k, val] of Object.entries(result)) {
      if (hasOwn(rec, k)) {
        const cur = rec[k];
        if (typeof cur === 'string') rec[k] = cur + joinchar + pyStr(val);
        else if (Array.isArray(cur)) {
          if (Array.isArray(val)) cur.push(...(val as unknown[]));
          else cur.push(val);
        } else rec[k] = [cur, val];
      } else {
        rec[k] = val;
      }
    }
  }

  private end(PATH: string[], group: Group): void {
    const top = this.startedGroups[this.startedGroups.length - 1];
    // an _end_ of a child group that is not the current record ends nothing
    if (!samePath(this.record.PATH, PATH) && group.groupId?.key === top) return;
    this.endedGroups.add(group.groupId?.key ?? '');
  }

  /**
   * Resolves `{{ var }}` in path items (from the record, then earlier records, then
   * template vars) and splits off trailing asterisks; false when a value is missing.
   */
  formPath(path: readonly string[]): PathKey[] | false {
    const out: PathKey[] = [];
    for (const raw of path) {
      let item = raw.replace(/\*+$/, '');
      const stars = raw.slice(item.length);
      const found = [...item.matchAll(/\{\{\s*(\S+)\s*\}\}/g)].map((m) => m[1] as string);
      for (const m of found) {
        const pattern = new RegExp('\\{\\{\\s*' + escapeRe(m) + '\\s*\\}\\}', 'g');
        let repl: string;
        if (hasOwn(this.record.result, m)) {
          this.dynPathCache[m] = this.record.result[m];
          repl = pyStr(this.record.result[m]);
          delete this.record.result[m];
        } else if (hasOwn(this.dynPathCache, m)) {
          repl = pyStr(this.dynPathCache[m]);
        } else if (hasOwn(this.variables, m)) {
          repl = pyStr(this.variables[m]);
        } else {
          return false;
        }
        item = item.replace(pattern, () => repl);
      }
      out.push([item, stars]);
    }
    return out;
  }

  /** The current record's path, resolved by processGroup. */
  private processedPath: PathKey[] = [];

  private pathKeys(): PathKey[] {
    return this.processedPath;
  }

  /** Applies defaults and group functions to the record, and resolves its path. */
  private processGroup(): boolean | undefined {
    const rec = this.record;
    for (const [k, v] of Object.entries(rec.DEFAULTS)) {
      if (!hasOwn(rec.result, k)) rec.result[k] = v;
    }
    if (rec.mergeWithLast) {
      // group functions see the whole item: the saved one with the tail matches over it
      const path = this.formPath(rec.PATH);
      if (path !== false && path.length > 0) rec.result = this.reconstructLast(rec.result, path);
    }
    for (const fn of rec.FUNCTIONS) {
      const [data, flag] = runGroupFunction(fn, rec.result, this.ctx, this);
      rec.result = data as Dict;
      if (flag === false) return false;
    }
    const processed = this.formPath(rec.PATH);
    if (processed === false || processed.length === 0) return false;
    this.processedPath = processed;
    return undefined;
  }

  private reconstructLast(result: Dict, path: PathKey[]): Dict {
    const el = this.dictByPath(path, this.results);
    let copied: Dict;
    if (Array.isArray(el)) {
      const last: unknown = el[el.length - 1];
      if (!isPlainObject(last)) return result;
      copied = { ...last };
    } else if (isPlainObject(el)) {
      copied = { ...el };
    } else {
      return result;
    }
    return Object.assign(copied, result);
  }

  private listToDictFwd(keys: PathKey[]): Dict {
    const first = keys[0];
    if (!first) return {};
    const [name, stars] = first;
    if (stars === '*') {
      if (keys.length === 1) return { [name]: [] };
      return { [name]: [this.listToDictFwd(keys.slice(1))] };
    }
    return { [name]: this.listToDictFwd(keys.slice(1)) };
  }

  /** The element at `path` in `element`, creating missing levels; may shift a leading `_`. */
  dictByPath(path: PathKey[], element: unknown): unknown {
    if (path.length === 0) return element;
    if (isPlainObject(element)) {
      let name = (path[0] as PathKey)[0];
      if (name === '_') {
        if (path.length === 1) return element;
        path.shift();
        name = (path[0] as PathKey)[0];
      }
      if (!hasOwn(element, name)) Object.assign(element, this.listToDictFwd(path));
      return this.dictByPath(path.slice(1), element[name]);
    }
    if (Array.isArray(element)) {
      if (element.length === 0) element.push(this.listToDictFwd(path));
      return this.dictByPath(path, element[element.length - 1]);
    }
    return undefined;
  }

  private valueToList(data: unknown, path: PathKey[], result: unknown): unknown {
    if (path.length === 0) return [data, result];
    let name = (path[0] as PathKey)[0];
    if (name === '_') {
      if (path.length === 1) {
        if (isPlainObject(data) && isPlainObject(result)) Object.assign(data, result);
        else if (Array.isArray(data) && isPlainObject(result))
          Object.assign(data[data.length - 1] as Dict, result);
        return data;
      }
      path.shift();
      name = (path[0] as PathKey)[0];
    }
    if (isPlainObject(data)) {
      if (hasOwn(data, name)) {
        data[name] = this.valueToList(data[name], path.slice(1), result);
        return data;
      }
    } else if (Array.isArray(data)) {
      const last: unknown = data[data.length - 1];
      if (isPlainObject(last) && hasOwn(last, name)) {
        last[name] = this.valueToList(last[name], path.slice(1), result);
        return data;
      }
    }
    return undefined;
  }

  private mergeRecursively(element: Dict, data: Dict): void {
    for (const [k, v] of Object.entries(data)) {
      const cur = element[k];
      if (truthy(cur) && isPlainObject(v) && isPlainObject(cur)) this.mergeRecursively(cur, v);
      else element[k] = v;
    }
  }

  saveCurElements(resultData: unknown, resultPath: PathKey[]): void {
    const el = this.dictByPath(resultPath, this.results);
    const merge = this.record.mergeWithLast;
    if (Array.isArray(el) && truthy(resultData)) {
      const last: unknown = el[el.length - 1];
      if (merge && isPlainObject(last) && isPlainObject(resultData))
        this.mergeRecursively(last, resultData);
      else el.push(resultData);
    } else if (isPlainObject(el)) {
      const lastItem = resultPath[resultPath.length - 1];
      if (merge) {
        if (isPlainObject(resultData)) this.mergeRecursively(el, resultData);
      } else if (lastItem?.[1] === '**') {
        // `**`: merge, keeping values already present
        if (isPlainObject(resultData)) Object.assign(el, { ...resultData, ...el });
      } else if (Object.keys(el).length > 0) {
        this.results = this.valueToList(this.results, resultPath, resultData);
      } else if (isPlainObject(resultData)) {
        Object.assign(el, resultData);
      }
    }
  }
}
