#!/usr/bin/env node
// Runs the built tests. Node 20 expands no globs (and would run every .js under a test/ folder),
// so the files are listed here explicitly: unit tests beside each package, then the
// cross-service tests in test/integration.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const unitDirs = [
  'proto/dist/test',
  'drivers/dist/test',
  'jobs/dist/test',
  'telemetry/dist/test',
  'nats/dist/test',
  'device-access/dist/test',
  'webhooks/dist/test',
  'service-main/dist/test',
  'config/dist/test',
  'parsers/dist/test',
  'services/gateway/dist/test',
  'services/dispatcher/dist/test',
  'services/device-actor/dist/test',
  'services/reaper/dist/test',
  'services/mcp-adapter/dist/test',
  'cli/dist/test',
];
const integrationDirs = ['test/dist/integration'];

const only = process.argv.includes('--unit')
  ? unitDirs
  : process.argv.includes('--integration')
    ? integrationDirs
    : [...unitDirs, ...integrationDirs];
const files = only.flatMap((dir) => {
  const abs = join(root, dir);
  if (!existsSync(abs)) return [];
  // Only tests whose source still exists: tsc -b leaves the output of a moved or deleted test
  // behind in an existing checkout, and that stale file would run (and fail) with the rest.
  const sourceDir = join(root, dir.replace('/dist/', '/').replace(/^test\/dist\//, 'test/'));
  return readdirSync(abs)
    .filter((f) => f.endsWith('.test.js'))
    .filter((f) => existsSync(join(sourceDir, f.replace(/\.js$/, '.ts'))))
    .sort()
    .map((f) => join(dir, f));
});
if (files.length === 0) {
  console.error('no test files found: run the build first');
  process.exit(1);
}
// TEST_FILTER: comma-separated substrings of the file paths to run (all files when unset).
const filters = (process.env.TEST_FILTER ?? '').split(',').filter(Boolean);
const selected =
  filters.length > 0 ? files.filter((f) => filters.some((part) => f.includes(part))) : files;
// Unit tests run two files at a time. Integration files that kill processes, run clusters or
// fleets, or measure stalls run one at a time: two of them would starve each other on 2 cores.
// The others mostly wait on their own nats-server and simulator, so they run two at a time
// (half the suite's wall time is such per-file start-up).
const SOLO = [
  'actors-failover',
  'backpressure',
  'batches',
  'cluster-failover',
  'dispatcher-restart',
  'fresh-clone-bins',
  'launcher',
  'leaf-node',
  'nats-security',
  'observability-prometheus',
  'processes',
  'security-input',
];
const unit = selected.filter((f) => !f.startsWith('test/'));
const integration = selected.filter((f) => f.startsWith('test/'));
const solo = integration.filter((f) => SOLO.some((name) => f.endsWith(`/${name}.test.js`)));
const paired = integration.filter((f) => !solo.includes(f));
const runs = [
  [unit, 2],
  [paired, 2],
  [solo, 1],
].filter(([list]) => list.length > 0);
// The tests' temporary files go to one folder of this run, removed at the end: a test that
// leaves something behind (or is killed before its cleanup) does not litter the user's /tmp,
// and what was left is named so that the test can be mended.
const scratch = mkdtempSync(join(tmpdir(), 'svc-test-run-'));
let status = 0;
for (const [list, concurrency] of runs) {
  const result = spawnSync(
    process.execPath,
    ['--test', `--test-concurrency=${concurrency}`, '--test-timeout=240000', ...list],
    { cwd: root, stdio: 'inherit', env: { ...process.env, TMPDIR: scratch } },
  );
  status ||= result.status ?? 1;
}
const left = readdirSync(scratch);
if (left.length > 0) console.error(`tests left in their temporary folder: ${left.join(' ')}`);
rmSync(scratch, { recursive: true, force: true });
process.exit(status);
