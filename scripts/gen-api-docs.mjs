#!/usr/bin/env node
// Writes the generated part of docs/api.md from the OpenAPI document the gateway serves at
// /v2/openapi.json (itself built from the proto schemas). `--check` fails when docs/api.md is
// stale; test/integration/observability-docs.test.ts runs it, so the two never drift.
import { readFileSync, writeFileSync } from 'node:fs';

const root = new URL('..', import.meta.url);
const { buildOpenApi } = await import(new URL('services/gateway/dist/src/routes/openapi.js', root));
const doc = buildOpenApi('generated');

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const cell = (s) =>
  String(s ?? '')
    .replace(/\|/g, '\\|')
    .replace(/\n/g, ' ');

function schemaText(s) {
  if (!s) return '';
  if (s.$ref) return s.$ref.split('/').pop();
  if (s.anyOf) return s.anyOf.map(schemaText).join(' or ');
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(', ');
  if (s.type === 'array') return `array of ${schemaText(s.items)}`;
  if (s.type === 'object' && s.patternProperties) return 'object string to string';
  return s.type ?? 'any';
}

function routesTable() {
  const rows = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const m of METHODS) {
      const op = ops[m];
      if (!op) continue;
      const codes = Object.keys(op.responses).join(', ');
      const auth = op.security && op.security.length === 0 ? 'none' : 'Basic or Bearer';
      const body = op.requestBody
        ? schemaText(op.requestBody.content['application/json'].schema)
        : '';
      rows.push(
        `| ${m.toUpperCase()} | \`${path}\` | ${cell(op.summary)}${op.deprecated ? ' **(deprecated)**' : ''} | ${auth} | ${body} | ${codes} |`,
      );
    }
  }
  return [
    '| method | path | what | auth | request | responses |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

function schemasSection() {
  const out = [];
  for (const [name, s] of Object.entries(doc.components.schemas)) {
    out.push(`#### ${name}`, '');
    if (s.description) out.push(cell(s.description), '');
    if (s.type !== 'object' || !s.properties) {
      out.push(`${schemaText(s)}`, '');
      continue;
    }
    const required = new Set(s.required ?? []);
    out.push('| field | type | required | notes |', '|---|---|---|---|');
    for (const [field, p] of Object.entries(s.properties)) {
      const notes = [
        p.description,
        p.default !== undefined ? `default ${JSON.stringify(p.default)}` : '',
      ]
        .filter(Boolean)
        .join('; ');
      out.push(
        `| \`${field}\` | ${cell(schemaText(p))} | ${required.has(field) ? 'yes' : 'no'} | ${cell(notes)} |`,
      );
    }
    out.push('');
  }
  return out.join('\n').trimEnd();
}

const generated = `### Routes\n\n${routesTable()}\n\n### Schemas\n\n${schemasSection()}`;
const BEGIN = '<!-- generated: begin (node scripts/gen-api-docs.mjs) -->';
const END = '<!-- generated: end -->';
const file = new URL('docs/api.md', root);
const text = readFileSync(file, 'utf8');
const start = text.indexOf(BEGIN);
const end = text.indexOf(END);
if (start < 0 || end < 0) throw new Error('docs/api.md lacks the generated markers');
const next = `${text.slice(0, start + BEGIN.length)}\n${generated}\n${text.slice(end)}`;
if (next !== text) {
  if (process.argv.includes('--check')) {
    console.error('docs/api.md is stale: run node scripts/gen-api-docs.mjs');
    process.exit(1);
  }
  writeFileSync(file, next);
}
