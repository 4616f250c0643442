/**
 * TextFSM parse benchmark over the ntc-templates sample: every case, index lookup included.
 * Usage: node bench/dist/src/parse-bench.js [--repeats N] [--top N]
 * Env: SVC_SHARED_DIR (default: the repo's parent dir + /shared).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseWithIndex } from '@svc/parsers';

interface Case {
  name: string;
  platform: string;
  command: string;
  input: string;
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer`);
  return v;
}

function percentile(sorted: readonly number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)] ?? 0;
}

function fmt(ms: number): string {
  return ms < 1 ? `${(ms * 1000).toFixed(0)}µs` : `${ms.toFixed(2)}ms`;
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const sharedDir = process.env['SVC_SHARED_DIR'] ?? join(dirname(repoRoot), 'shared');
const ntcDir = join(sharedDir, 'ntc-templates');
const templatesDir = join(ntcDir, 'templates');
if (!existsSync(join(templatesDir, 'index'))) {
  console.error(`parse-bench: no ntc-templates data at ${ntcDir}`);
  process.exit(1);
}

const cases: Case[] = [];
const testsDir = join(ntcDir, 'tests');
for (const platform of readdirSync(testsDir).sort()) {
  for (const commandDir of readdirSync(join(testsDir, platform)).sort()) {
    const dir = join(testsDir, platform, commandDir);
    for (const file of readdirSync(dir).sort()) {
      if (!file.endsWith('.raw')) continue;
      cases.push({
        name: `${platform}/${commandDir}/${file}`,
        platform,
        command: commandDir.split('_').join(' '),
        input: readFileSync(join(dir, file), 'utf8'),
      });
    }
  }
}

const repeats = arg('--repeats', 30);
const top = arg('--top', cases.length);

// The first pass reads the index and templates and compiles them: measured apart.
const coldStart = performance.now();
for (const c of cases) parseWithIndex(templatesDir, c.platform, c.command, c.input);
const coldMs = performance.now() - coldStart;

const samples = cases.map(() => [] as number[]);
const passTotals: number[] = [];
for (let r = 0; r < repeats; r++) {
  const passStart = performance.now();
  cases.forEach((c, i) => {
    const t0 = performance.now();
    parseWithIndex(templatesDir, c.platform, c.command, c.input);
    (samples[i] as number[]).push(performance.now() - t0);
  });
  passTotals.push(performance.now() - passStart);
}

const rows = cases.map((c, i) => {
  const sorted = [...(samples[i] as number[])].sort((a, b) => a - b);
  return { name: c.name, median: percentile(sorted, 50), p99: percentile(sorted, 99) };
});
rows.sort((a, b) => b.median - a.median);
console.log(`case (slowest first)\tmedian\tp99`);
for (const row of rows.slice(0, top))
  console.log(`${row.name}\t${fmt(row.median)}\t${fmt(row.p99)}`);

const totals = [...passTotals].sort((a, b) => a - b);
const medians = rows.map((r) => r.median).sort((a, b) => a - b);
console.log(
  `parse-bench: ${cases.length} cases x ${repeats} repeats; per case median ${fmt(percentile(medians, 50))}, ` +
    `p99 of case medians ${fmt(percentile(medians, 99))}; whole sample median ${fmt(percentile(totals, 50))}, ` +
    `p99 ${fmt(percentile(totals, 99))}; cold first pass ${fmt(coldMs)}`,
);
