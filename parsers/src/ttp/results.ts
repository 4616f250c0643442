// Turns the position-sorted regex matches of one input into the nested result
// structure, following TTP's _results_class: a "record" accumulates one group
// item until the next start; paths with `*` make lists, `**` merge into dicts.
import { pyStr } from './py-literal.js';
import { isPlainObject, type Dict, type Group, type GroupId, type RegexEntry } from './template.js';
import type { CallSpec } from './py-literal.js';
import type { RunContext } from './run-context.js';
import { runGroupFunction } from './group-functions.js';

/** One regex match at a text position: the regex and its processed values (false = failed check). */
export type MatchHit = [RegexEntry, Dict | false];

interface GroupRecord {
  result: Dict;
  PATH: string[];
  FUNCTIONS: CallSpec[];
  DEFAULTS: Dict;
  GRP_ID: GroupId | null;
}

function emptyRecord(): GroupRecord {
  return { result: {}, PATH: [], FUNCTIONS: [], DEFAULTS: {}, GRP_ID: null };
}

function stripStars(s: string): string {
  return s.replace(/\*+$/, '');
}

function starCount(s: string): number {
  return s.length - stripStars(s).length;
}

function samePath(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function hasOwn(o: object, k: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, k);
}

export class ResultsBuilder {
  results: unknown = {};
  startedGroups: string[] = [];
  lock: { LOCK: boolean; GROUP: string[] } = { LOCK: false, GROUP: [] };
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
      this.lock = { LOCK: false, GROUP: [] };
      for (const hits of groupResults) {
        let re: RegexEntry;
        let data: Dict | false;
        if (hits.length === 1) {
          [re, data] = hits[0] as MatchHit;
        } else {
          const startIdx: number[] = [];
          const normalIdx: number[] = [];
          const lineIdx: number[] = [];
          hits.forEach(([r], i) => {
            if (r.isLine) lineIdx.push(i);
            else if (r.action.startsWith('start')) startIdx.push(i);
            else normalIdx.push(i);
          });
          [re, data] = hits[0] as MatchHit;
          const recId = this.record.GRP_ID;
          const started = (key: string | undefined): boolean =>
            key !== undefined && this.startedGroups.includes(key);
          if (startIdx.length) {
            let chosen = false;
            for (const i of startIdx) {
              [re, data] = hits[i] as MatchHit;
              if (data === false) continue;
              if (recId && re.group.groupId?.key === recId.key) chosen = true;
              else if (recId && re.group.groupId?.name.startsWith(recId.name)) chosen = true;
              if (chosen) break;
            }
            if (!chosen) {
              // a group whose parent is open beats one from an unrelated branch
              const i = startIdx.find((x) => {
                const [r, d] = hits[x] as MatchHit;
                return d !== false && started(r.group.parentGroupId?.key);
              });
              if (i !== undefined) [re, data] = hits[i] as MatchHit;
            }
          } else {
            const pool = normalIdx.length ? normalIdx : lineIdx;
            let chosen = false;
            for (const i of pool) {
              [re, data] = hits[i] as MatchHit;
              if (recId && re.group.groupId?.key === recId.key) {
                chosen = true;
                break;
              }
            }
            if (!chosen) {
              // prefer a match for a group that is currently open
              const i = pool.find((x) => started((hits[x] as MatchHit)[0].group.groupId?.key));
              if (i !== undefined) [re, data] = hits[i] as MatchHit;
            }
          }
        }
        const group = re.group;
        if (data === false) {
          this.lock = { LOCK: true, GROUP: group.path };
          continue;
        } else if (this.lock.LOCK) {
          const locked = this.lock.GROUP.join('.');
          const here = group.path.join('.');
          if (re.action.startsWith('start')) {
            if (samePath(group.path, this.lock.GROUP)) this.lock = { LOCK: false, GROUP: [] };
            else if (here.startsWith(locked)) continue;
            else this.lock = { LOCK: false, GROUP: [] };
          } else if (here.startsWith(locked)) {
            continue;
          }
        }
        this.save(re.action, data, [...group.path], group, re);
      }
    }
    if (this.processGroup() !== false) this.saveCurElements(this.record.result, this.record.PATH);
  }

  private save(action: string, result: Dict, PATH: string[], group: Group, re: RegexEntry): void {
    switch (action) {
      case 'start':
      case 'startempty':
        this.start(action === 'start' ? result : {}, PATH, group);
        return;
      case 'add':
        this.add(result, PATH, group);
        return;
      case 'join':
        this.join(result, PATH, re);
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
      this.record.PATH = processed;
      this.saveCurElements(this.record.result, this.record.PATH);
    }
    this.record = emptyRecord();
  }

  private traceStart(group: Group): void {
    const id = group.groupId?.key ?? '';
    while (this.startedGroups.length) {
      if (group.parentGroupId?.key === this.startedGroups[this.startedGroups.length - 1]) {
        this.startedGroups.push(id);
        return;
      }
      this.startedGroups.pop();
    }
    this.startedGroups.push(id);
  }

  private start(result: Dict, PATH: string[], group: Group): void {
    this.traceStart(group);
    if (this.processGroup() !== false) this.saveCurElements(this.record.result, this.record.PATH);
    this.record = {
      result,
      DEFAULTS: { ...group.runs },
      PATH,
      FUNCTIONS: group.funcs,
      GRP_ID: group.groupId,
    };
  }

  private add(result: Dict, PATH: string[], group: Group): void {
    if (samePath(this.record.PATH, PATH)) {
      // values already in the record win over later matches
      this.record.result = { ...result, ...this.record.result };
    } else if (group.groupId && this.startedGroups.includes(group.groupId.key)) {
      const processed = this.formPath(PATH);
      if (processed === false) return;
      const el = this.dictByPath(processed, this.results);
      if (isPlainObject(el)) Object.assign(el, result);
      else if (Array.isArray(el)) {
        const last: unknown = el[el.length - 1];
        if (isPlainObject(last)) Object.assign(last, result);
      }
    }
  }

  private join(result: Dict, PATH: string[], re: RegexEntry): void {
    if (!samePath(this.record.PATH, PATH)) return;
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
    if (!samePath(this.record.PATH, PATH) && group.groupId?.key === top) return;
    this.lock = { LOCK: true, GROUP: [...PATH] };
  }

  /** Substitutes `{{ var }}` in path items; false when a value is missing. */
  formPath(path: string[]): string[] | false {
    for (let index = 0; index < path.length; index++) {
      let item = path[index] as string;
      const found = [...item.matchAll(/\{\{\s*(\S+)\s*\}\}/g)].map((m) => m[1] as string);
      if (found.length === 0) continue;
      for (const m of found) {
        const pattern = new RegExp(
          '\\{\\{\\s*' + m.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '\\s*\\}\\}',
          'g',
        );
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
      path[index] = item;
    }
    return path;
  }

  /** Applies defaults and group functions to the record, and resolves its path. */
  private processGroup(): boolean | undefined {
    const rec = this.record;
    // nothing matched and no defaults: there is no item to save
    if (Object.keys(rec.result).length === 0 && Object.keys(rec.DEFAULTS).length === 0)
      return false;
    for (const [k, v] of Object.entries(rec.DEFAULTS)) {
      if (!hasOwn(rec.result, k)) rec.result[k] = v;
    }
    for (const fn of rec.FUNCTIONS) {
      const [data, flag] = runGroupFunction(fn, rec.result, this.ctx, this);
      rec.result = data;
      if (flag === false) return false;
    }
    const processed = this.formPath(rec.PATH);
    if (processed === false || processed.length === 0) return false;
    rec.PATH = processed;
    return undefined;
  }

  private listToDictFwd(keys: string[]): Dict {
    if (keys.length) {
      if (keys[0] === '_') {
        if (keys.length === 1) return {};
        keys.shift();
      }
      const first = keys[0] as string;
      const name = stripStars(first);
      if (first.length - name.length === 1) {
        if (keys.length === 1) return { [name]: [] };
        return { [name]: [this.listToDictFwd(keys.slice(1))] };
      }
      return { [name]: this.listToDictFwd(keys.slice(1)) };
    }
    return {};
  }

  dictByPath(path: string[], element: unknown): unknown {
    if (path.length === 0) return element;
    if (isPlainObject(element)) {
      let name = stripStars(path[0] as string);
      if (name === '_') {
        if (path.length === 1) return element;
        path.shift();
        name = stripStars(path[0] as string);
      }
      if (hasOwn(element, name)) return this.dictByPath(path.slice(1), element[name]);
      Object.assign(element, this.listToDictFwd(path));
      return this.dictByPath(path.slice(1), element[name]);
    }
    if (Array.isArray(element)) {
      if (element.length === 0) element.push(this.listToDictFwd(path));
      return this.dictByPath(path, element[element.length - 1]);
    }
    return undefined;
  }

  private valueToList(data: unknown, path: string[], result: Dict): unknown {
    if (path.length) {
      let name = stripStars(path[0] as string);
      if (name === '_') {
        if (path.length === 1) {
          if (isPlainObject(data)) Object.assign(data, result);
          else if (Array.isArray(data)) Object.assign(data[data.length - 1] as Dict, result);
          return data;
        }
        path.shift();
        name = stripStars(path[0] as string);
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
    return [data, result];
  }

  saveCurElements(resultData: unknown, resultPath: string[]): void {
    const el = this.dictByPath(resultPath, this.results);
    if (Array.isArray(el)) {
      el.push(resultData);
    } else if (isPlainObject(el)) {
      const lastItem = resultPath[resultPath.length - 1] ?? '';
      if (starCount(lastItem) === 2 && isPlainObject(resultData)) {
        // `**`: merge, keeping values already present
        const merged = { ...resultData, ...el };
        Object.assign(el, merged);
      } else if (Object.keys(el).length > 0) {
        this.results = this.valueToList(this.results, resultPath, resultData as Dict);
      } else if (isPlainObject(resultData)) {
        Object.assign(el, resultData);
      }
    }
  }
}
