// Runs every TTP case of the shared corpus (template + data -> expected.json).
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseTtp } from '../src/ttp/mod.js';

// compiled to parsers/dist/test/, so the repo root is three levels up
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const sharedDir = process.env['SVC_SHARED_DIR'] ?? join(dirname(repoRoot), 'shared');
const casesDir = join(sharedDir, 'ttp-cases');

/**
 * Some cases of the corpus are themselves ttp_templates files; other cases
 * reference those files as ttp://... This maps the references to the cases
 * holding them, so a templates directory can be built from shared data at test time.
 */
const TEMPLATES_FROM_CASES: Record<string, string> = {
  'platform/test_platform_show_run_pipe_sec_interface.txt':
    'ttp_templates__test_ttp_templates_methods__test_parse_output_ttp_path',
  'platform/cisco_ios_show_ip_ospf_database_external.txt':
    'ttp_templates__test_platform_cisco_ios__test_cisco_ios_show_ip_ospf_database_external',
};

function buildTemplatesDir(): string {
  const explicit = process.env['SVC_TTP_TEMPLATES_DIR'];
  if (explicit) return explicit;
  const dir = mkdtempSync(join(tmpdir(), 'ttp-templates-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  for (const [ref, caseName] of Object.entries(TEMPLATES_FROM_CASES)) {
    const source = join(casesDir, caseName, 'template.txt');
    if (!existsSync(source)) continue;
    mkdirSync(dirname(join(dir, ref)), { recursive: true });
    writeFileSync(join(dir, ref), readFileSync(source, 'utf8'));
  }
  return dir;
}

function missingReferences(template: string, templatesDir: string): string[] {
  const refs = [...template.matchAll(/ttp:\/\/([^"'\s]+)/g)].map((m) => m[1] as string);
  return refs.filter((r) => !existsSync(join(templatesDir, r)));
}

if (!existsSync(casesDir)) {
  test('ttp cases', { skip: `no TTP cases at ${casesDir} (set SVC_SHARED_DIR)` }, () => undefined);
} else {
  const templatesDir = buildTemplatesDir();
  const cases = readdirSync(casesDir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  for (const name of cases) {
    const dir = join(casesDir, name);
    const template = readFileSync(join(dir, 'template.txt'), 'utf8');
    const missing = missingReferences(template, templatesDir);
    const options =
      missing.length > 0
        ? {
            // known gap: the referenced ttp_templates files are not in the shared data
            todo: `needs ttp_templates files not in the shared data: ${missing.join(', ')} (set SVC_TTP_TEMPLATES_DIR)`,
          }
        : {};
    test(`when case ${name} is parsed, then the result equals expected.json`, options, () => {
      const data = readFileSync(join(dir, 'data.txt'), 'utf8');
      const expected: unknown = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8'));
      const actual = parseTtp(template, data, { templatesDir });
      assert.deepStrictEqual(actual, expected);
    });
  }
}
