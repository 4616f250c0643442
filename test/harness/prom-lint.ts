/**
 * A lint of the Prometheus text exposition format, after `promtool check metrics` (whose rules
 * it follows: HELP present, counters end in `_total` and nothing else does, base units, no unit
 * abbreviations, no type in the name, snake_case, no reserved suffixes or labels) plus the
 * format checks a scraper makes (every sample belongs to a declared family, histograms are
 * whole, no duplicate series). No maintained npm package lints exposition text, and promtool is
 * not on the test machines.
 */
export interface LintProblem {
  metric: string;
  problem: string;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
/** Units that have a base unit Prometheus prefers (promtool's list, roughly). */
const NON_BASE_UNITS: Record<string, string> = {
  milliseconds: 'seconds',
  microseconds: 'seconds',
  nanoseconds: 'seconds',
  minutes: 'seconds',
  hours: 'seconds',
  days: 'seconds',
  weeks: 'seconds',
  kilobytes: 'bytes',
  megabytes: 'bytes',
  gigabytes: 'bytes',
  terabytes: 'bytes',
  kibibytes: 'bytes',
  mebibytes: 'bytes',
  gibibytes: 'bytes',
  bits: 'bytes',
  celsius: 'celsius is fine only for temperatures; prefer base units',
  percent: 'ratio',
};
/** promtool's list of abbreviated units (a `min` token means minimum, and is fine). */
const ABBREVIATIONS = new Set([
  's',
  'ms',
  'us',
  'ns',
  'sec',
  'b',
  'kb',
  'mb',
  'gb',
  'tb',
  'pb',
  'm',
  'h',
  'd',
]);

interface Family {
  help: string | null;
  type: string | null;
}

/** Labels of a sample line's `{…}` part, parsed as Prometheus does (escapes `\\`, `\"`, `\n`). */
function parseLabels(text: string): Record<string, string> | null {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const m = /^\s*([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(text.slice(i));
    if (!m) return null;
    i += m[0].length;
    let value = '';
    for (;;) {
      const c = text[i++];
      if (c === undefined) return null;
      if (c === '"') break;
      if (c === '\\') {
        const e = text[i++];
        value += e === 'n' ? '\n' : (e ?? '');
      } else value += c;
    }
    if (m[1]! in out) return null;
    out[m[1]!] = value;
    const rest = /^\s*,?\s*/.exec(text.slice(i))!;
    i += rest[0].length;
  }
  return out;
}

/** Lints exposition text; returns every problem found (empty: clean). */
export function lintExposition(text: string): LintProblem[] {
  const problems: LintProblem[] = [];
  const families = new Map<string, Family>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { help: null, type: null }));
    return f;
  };
  const samples: { name: string; labels: Record<string, string>; line: string }[] = [];

  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const meta = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
    if (meta) {
      const [, kind, name, rest = ''] = meta;
      const f = family(name!);
      if (kind === 'HELP') {
        if (f.help !== null) problems.push({ metric: name!, problem: 'HELP given twice' });
        f.help = rest;
      } else {
        if (f.type !== null) problems.push({ metric: name!, problem: 'TYPE given twice' });
        if (!TYPES.has(rest)) problems.push({ metric: name!, problem: `unknown TYPE ${rest}` });
        f.type = rest;
      }
      continue;
    }
    if (line.startsWith('#')) continue; // a comment
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$/.exec(line);
    if (!m) {
      problems.push({ metric: line.split(/[{ ]/)[0] ?? line, problem: `unparsable line: ${line}` });
      continue;
    }
    const labels = parseLabels(m[2] ?? '');
    if (!labels) {
      problems.push({ metric: m[1]!, problem: `bad labels: ${line}` });
      continue;
    }
    const value = m[3]!;
    if (!/^(NaN|[+-]Inf|[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)$/.test(value)) {
      problems.push({ metric: m[1]!, problem: `bad value ${value}` });
    }
    samples.push({ name: m[1]!, labels, line });
  }

  // Which family each sample belongs to.
  const owner = (sample: string): [string, Family] | null => {
    const own = families.get(sample);
    if (own && own.type !== 'histogram') return [sample, own];
    for (const suffix of ['_bucket', '_sum', '_count']) {
      if (!sample.endsWith(suffix)) continue;
      const base = sample.slice(0, -suffix.length);
      const f = families.get(base);
      if (f && (f.type === 'histogram' || (f.type === 'summary' && suffix !== '_bucket'))) {
        return [base, f];
      }
    }
    return own ? [sample, own] : null;
  };

  const seen = new Set<string>();
  const histograms = new Map<string, { infBuckets: number; counts: number; sums: number }>();
  for (const s of samples) {
    const found = owner(s.name);
    if (!found) {
      problems.push({ metric: s.name, problem: 'sample without HELP/TYPE of its family' });
      continue;
    }
    const [name, f] = found;
    const key = `${s.name}{${Object.entries(s.labels)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(',')}}`;
    if (seen.has(key)) problems.push({ metric: name, problem: `duplicate series ${key}` });
    seen.add(key);
    for (const label of Object.keys(s.labels)) {
      if (!LABEL.test(label) || label.startsWith('__')) {
        problems.push({ metric: name, problem: `reserved or invalid label name ${label}` });
      }
      if (/[A-Z]/.test(label)) {
        problems.push({ metric: name, problem: `label names should be snake_case: ${label}` });
      }
    }
    if ('le' in s.labels && !(f.type === 'histogram' && s.name === `${name}_bucket`)) {
      problems.push({ metric: name, problem: 'label "le" is reserved for histogram buckets' });
    }
    if ('quantile' in s.labels && f.type !== 'summary') {
      problems.push({ metric: name, problem: 'label "quantile" is reserved for summaries' });
    }
    if (f.type === 'histogram') {
      const rest = Object.entries(s.labels).filter(([k]) => k !== 'le');
      const series = `${name}${JSON.stringify(rest.sort())}`;
      const h = histograms.get(series) ?? { infBuckets: 0, counts: 0, sums: 0 };
      if (s.name.endsWith('_bucket') && s.labels['le'] === '+Inf') h.infBuckets++;
      if (s.name.endsWith('_count')) h.counts++;
      if (s.name.endsWith('_sum')) h.sums++;
      histograms.set(series, h);
    }
  }
  for (const [series, h] of histograms) {
    if (h.infBuckets !== 1 || h.counts !== 1 || h.sums !== 1) {
      problems.push({
        metric: series,
        problem: 'histogram series lacks its +Inf bucket, _sum or _count',
      });
    }
  }

  for (const [name, f] of families) {
    const problem = (p: string) => problems.push({ metric: name, problem: p });
    if (!NAME.test(name)) problem('invalid metric name');
    if (f.help === null || f.help.trim() === '') problem('no HELP text');
    if (f.type === null) problem('no TYPE');
    if (name.includes(':')) problem('metric names should not contain ":" (recording rules only)');
    if (/[A-Z]/.test(name)) problem('metric names should be snake_case, not camelCase');
    if (f.type === 'counter' && !name.endsWith('_total'))
      problem('counter metrics should have "_total" suffix');
    if (f.type !== 'counter' && name.endsWith('_total')) {
      problem('non-counter metrics should not have "_total" suffix');
    }
    if (f.type !== 'histogram' && f.type !== 'summary' && /_(bucket|count|sum)$/.test(name)) {
      problem(
        'metric names ending in _bucket, _count or _sum are reserved for histograms and summaries',
      );
    }
    const tokens = name.split('_');
    for (const t of tokens) {
      if (t in NON_BASE_UNITS) problem(`use base unit "${NON_BASE_UNITS[t]}" instead of "${t}"`);
      if (ABBREVIATIONS.has(t)) problem(`metric names should not contain abbreviated units: ${t}`);
    }
    for (const type of ['counter', 'gauge', 'histogram', 'summary']) {
      if (tokens.includes(type)) problem(`metric name should not include type "${type}"`);
    }
    if (f.type === 'gauge' && name.endsWith('_info')) {
      const values = samples.filter((s) => s.name === name).map((s) => s.line.split(/\s+/).at(-1));
      if (values.some((v) => v !== '1')) problem('info metrics should have the value 1');
    }
  }
  return problems;
}
