#!/usr/bin/env node
// Checks the Grafana dashboard(s) under deploy/grafana without a Grafana server: valid JSON,
// the fields an import needs, a layout inside the 24-column grid, a Prometheus data source
// chosen at import, one query per target with balanced brackets, and only metric names that
// docs/observability.md documents (the metrics test checks the same names against real
// /metrics output). Prints the metric names used. Exits non-zero on any problem.
import { readFileSync, readdirSync } from 'node:fs';

const root = new URL('..', import.meta.url);
const docs = readFileSync(new URL('docs/observability.md', root), 'utf8');
const documented = new Set([...docs.matchAll(/`((?:svc|process|nodejs)_[a-z0-9_]+)`/g)].map((m) => m[1]));
const problems = [];

/** Metric names in a PromQL expression (histogram series names reduced to their family). */
function metricNames(expr) {
  return [...expr.matchAll(/\b((?:svc|process|nodejs)_[a-z0-9_]+)\b/g)].map((m) =>
    m[1].replace(/_(bucket|sum|count)$/, ''),
  );
}

function balanced(expr) {
  const pairs = { ')': '(', ']': '[', '}': '{' };
  const stack = [];
  let quoted = false;
  for (const c of expr) {
    if (c === '"') quoted = !quoted;
    if (quoted) continue;
    if ('([{'.includes(c)) stack.push(c);
    else if (c in pairs && stack.pop() !== pairs[c]) return false;
  }
  return stack.length === 0 && !quoted;
}

const dir = new URL('grafana/', import.meta.url);
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
if (files.length === 0) problems.push('no dashboard under deploy/grafana');
const used = new Set();
for (const file of files) {
  const where = `deploy/grafana/${file}`;
  let dash;
  try {
    dash = JSON.parse(readFileSync(new URL(file, dir), 'utf8'));
  } catch (err) {
    problems.push(`${where}: not JSON: ${err.message}`);
    continue;
  }
  for (const key of ['title', 'uid', 'schemaVersion', 'panels', 'templating']) {
    if (dash[key] === undefined) problems.push(`${where}: no ${key}`);
  }
  const ds = (dash.templating?.list ?? []).find((v) => v.type === 'datasource');
  if (ds?.query !== 'prometheus' || ds.name !== 'datasource') {
    problems.push(`${where}: needs a "datasource" variable of type prometheus`);
  }
  const ids = new Set();
  for (const panel of dash.panels ?? []) {
    const name = `${where}: panel ${panel.id} "${panel.title}"`;
    if (ids.has(panel.id)) problems.push(`${name}: duplicate id`);
    ids.add(panel.id);
    const g = panel.gridPos ?? {};
    if (!(g.w > 0 && g.h > 0 && g.x >= 0 && g.y >= 0 && g.x + g.w <= 24)) {
      problems.push(`${name}: gridPos outside the 24-column grid`);
    }
    if (panel.type === 'row') continue;
    if (panel.datasource?.uid !== '${datasource}') problems.push(`${name}: datasource is not \${datasource}`);
    const targets = panel.targets ?? [];
    if (targets.length === 0) problems.push(`${name}: no query`);
    const refIds = new Set();
    for (const t of targets) {
      if (refIds.has(t.refId)) problems.push(`${name}: duplicate refId ${t.refId}`);
      refIds.add(t.refId);
      if (typeof t.expr !== 'string' || t.expr.trim() === '') {
        problems.push(`${name}: target ${t.refId} has no expr`);
        continue;
      }
      if (!balanced(t.expr)) problems.push(`${name}: unbalanced brackets in ${t.expr}`);
      const names = metricNames(t.expr);
      if (names.length === 0) problems.push(`${name}: ${t.expr} names no svc, process or nodejs metric`);
      for (const n of names) {
        used.add(n);
        if (!documented.has(n) && !/^(process|nodejs)_/.test(n)) {
          problems.push(`${name}: ${n} is not documented in docs/observability.md`);
        }
      }
    }
  }
}
if (problems.length > 0) {
  for (const p of problems) console.error(`FAIL: ${p}`);
  process.exit(1);
}
console.log(`dashboards ok (${files.length}); metrics used: ${[...used].sort().join(' ')}`);
