// The commands a reader of the docs types on a fresh clone: `npm ci`, `npm run build`, then
// `npx --no-install svc-mcp`, `npx --no-install svc-parse` (and `svc`). npm links a workspace's
// bin only when its target exists at install time, so this runs `npm ci` (offline, from the
// cache the suite's own install filled) in a copy of the repository without node_modules or
// dist, and checks the bins before and after the build. The copy has no ../shared beside it,
// as a user's clone: the test files that start a stack with parser settings must pass there.
//
// `--ignore-scripts`: the only install scripts are third-party (ssh2's and cpu-features' optional
// native builds, protobufjs'), which neither link nor need the bins; building them would add a
// minute of compiling and, on a Node without local headers, a header download.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile as execFileCb } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';

const execFile = promisify(execFileCb);
const root = new URL('../../..', import.meta.url).pathname;

/** The workspaces whose build output the copy receives (see the build step below). */
const BUILT = [
  'proto',
  'drivers',
  'jobs',
  'telemetry',
  'nats',
  'device-access',
  'webhooks',
  'service-main',
  'config',
  'parsers',
  'services/gateway',
  'services/dispatcher',
  'services/device-actor',
  'services/reaper',
  'services/mcp-adapter',
  'services/launcher',
  'cli',
  'test',
  'bench',
];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** A shell's environment without the repository's own node_modules/.bin on PATH. */
function cleanEnv(): NodeJS.ProcessEnv {
  const path = (process.env['PATH'] ?? '')
    .split(delimiter)
    .filter((p) => !p.includes('node_modules'))
    .join(delimiter);
  const env: NodeJS.ProcessEnv = { PATH: path, HOME: process.env['HOME'] ?? tmpdir() };
  for (const k of ['npm_config_cache', 'NODE_EXTRA_CA_CERTS', 'TMPDIR'])
    if (process.env[k]) env[k] = process.env[k];
  return env;
}

async function run(
  cwd: string,
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv = cleanEnv(),
): Promise<Run> {
  try {
    const { stdout, stderr } = await execFile(cmd, args, {
      cwd,
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof e.code === 'number' ? e.code : 1,
      stdout: e.stdout ?? '',
      stderr: e.stderr ?? '',
    };
  }
}

let copy: string;
before(() => {
  copy = mkdtempSync(join(tmpdir(), 'svc-fresh-'));
});
after(() => rmSync(copy, { recursive: true, force: true }));

test('fresh copy: npm ci, then npx --no-install svc-mcp/svc-parse/svc --help', async () => {
  // What a clone holds: the files git tracks (and new ones not ignored), nothing built.
  const listed = await execFile(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    { cwd: root, maxBuffer: 64 * 1024 * 1024 },
  );
  for (const file of listed.stdout.split('\0')) {
    if (file === '' || !existsSync(join(root, file))) continue;
    cpSync(join(root, file), join(copy, file), { preserveTimestamps: true });
  }
  assert.ok(!existsSync(join(copy, 'node_modules')));
  assert.ok(!existsSync(join(copy, 'services/mcp-adapter/dist')));

  const ci = await run(copy, 'npm', [
    'ci',
    '--offline',
    '--ignore-scripts',
    '--engine-strict',
    '--no-audit',
    '--no-fund',
    '--loglevel=error',
  ]);
  assert.equal(ci.code, 0, `npm ci failed:\n${ci.stderr}`);

  // Linked at install time, before any build: each says what to do.
  for (const bin of ['svc-mcp', 'svc-parse', 'svc']) {
    assert.ok(existsSync(join(copy, 'node_modules/.bin', bin)), `${bin} not linked by npm ci`);
    const early = await run(copy, 'npx', ['--no-install', bin, '--help']);
    assert.notEqual(early.code, 0, `${bin} before the build: ${early.stdout}${early.stderr}`);
    assert.match(early.stderr, /run `?npm run build`? first/);
  }

  // The build: the copy receives the suite's own build output with its timestamps (the same
  // files `tsc -b` writes, with their .tsbuildinfo), so `npm run build` checks them and is
  // quick; a from-scratch build of every workspace took 2 min 17 s on the loaded 2-core test
  // machine, which with npm ci would leave too little of the per-file limit.
  for (const ws of BUILT) {
    const dist = join(root, ws, 'dist');
    if (existsSync(dist))
      cpSync(dist, join(copy, ws, 'dist'), { recursive: true, preserveTimestamps: true });
  }
  const build = await run(copy, 'npm', ['run', 'build', '--loglevel=error']);
  assert.equal(build.code, 0, `npm run build failed:\n${build.stdout}${build.stderr}`);

  const mcp = await run(copy, 'npx', ['--no-install', 'svc-mcp', '--help']);
  assert.equal(mcp.code, 0, mcp.stderr);
  assert.match(mcp.stdout, /^Usage: svc-mcp/m);
  assert.match(mcp.stdout, /SVC_MCP_API_KEY/);

  const parse = await run(copy, 'npx', ['--no-install', 'svc-parse', '--help']);
  assert.equal(parse.code, 0, parse.stderr);
  assert.match(parse.stdout, /svc-parse textfsm/);

  const svc = await run(copy, 'npx', ['--no-install', 'svc', '--help']);
  assert.equal(svc.code, 0, svc.stderr);
  assert.match(svc.stdout, /svc/);
  assert.ok(existsSync(dirname(join(copy, 'parsers/dist/src/cli.js'))));
});

/** `# pass N`, `# fail N` … from a TAP summary. */
function tapCount(tap: string, what: string): number {
  return Number(new RegExp(`^# ${what} (\\d+)$`, 'm').exec(tap)?.[1] ?? NaN);
}

for (const file of ['mcp-stdio', 'mcp-http', 'structured']) {
  test(`fresh copy without ../shared: ${file} passes, and community-data tests say why they skip`, async (t) => {
    if (!existsSync(join(copy, 'test/dist/integration', `${file}.test.js`)))
      return t.skip('the fresh copy was not built (see the test above)');
    assert.ok(!existsSync(join(dirname(copy), 'shared')), `${dirname(copy)}/shared exists`);
    // A test run of its own: with NODE_TEST_CONTEXT it would report to this runner, not in TAP.
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env['NODE_TEST_CONTEXT'];
    delete env['SVC_SHARED_DIR'];
    const r = await run(
      copy,
      process.execPath,
      [
        '--test',
        '--test-reporter=tap',
        // Well under the suite's 240 s: a file that waits on the missing folder fails here.
        '--test-timeout=90000',
        // One test that parses and one that does not show that the stack came up.
        '--test-name-pattern=structured|health|community index',
        `test/dist/integration/${file}.test.js`,
      ],
      env,
    );
    assert.equal(r.code, 0, `${file} failed in a lone clone:\n${r.stdout}\n${r.stderr}`);
    assert.equal(tapCount(r.stdout, 'fail'), 0, r.stdout);
    assert.ok(tapCount(r.stdout, 'pass') >= 1, r.stdout);
    if (file === 'structured')
      assert.match(r.stdout, /# SKIP no ntc-templates test data at \S+/, r.stdout);
  });
}
