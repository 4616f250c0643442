import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findNatsServer } from '@svc/launcher';

// test/dist/integration/ → repository root
const root = fileURLToPath(new URL('../../../', import.meta.url));
const natsServer = findNatsServer(process.env);

test(
  'when deploy/validate.sh runs, then every NATS config, manifest and the compose file pass',
  { skip: natsServer ? false : 'nats-server not found on PATH (set NATS_SERVER_BIN)' },
  () => {
    const run = spawnSync('bash', ['deploy/validate.sh'], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, NATS_SERVER_BIN: natsServer ?? '' },
      timeout: 120_000,
    });
    const output = `${run.stdout}\n${run.stderr}`;
    assert.equal(run.status, 0, `deploy/validate.sh exited ${run.status}:\n${output}`);
    assert.match(run.stdout, /all checks passed/);
  },
);

test(
  'when a user other than the actor may write stored results, then deploy/validate.sh fails naming it',
  { skip: natsServer ? false : 'nats-server not found on PATH (set NATS_SERVER_BIN)' },
  (t) => {
    // A copy of deploy/ next to the repository's node_modules, with the gateway granted svc-results.
    const dir = mkdtempSync(join(tmpdir(), 'svc-validate-perm-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    cpSync(join(root, 'deploy'), join(dir, 'deploy'), { recursive: true });
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    const perms = join(dir, 'deploy/nats/permissions.conf');
    const text = readFileSync(perms, 'utf8');
    const widened = text.replace(
      /(GATEWAY_PERMISSIONS = \{\n {2}publish: \{\n {4}allow: \[\n)/,
      '$1      "$O.svc-results.>"\n',
    );
    assert.notEqual(widened, text);
    writeFileSync(perms, widened);
    const run = spawnSync('bash', [join(dir, 'deploy/validate.sh')], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, NATS_SERVER_BIN: natsServer ?? '' },
      timeout: 120_000,
    });
    assert.notEqual(run.status, 0, run.stdout);
    assert.match(run.stderr, /GATEWAY_PERMISSIONS may write or purge stored results/);
  },
);

// Issue 24, finding 7: the image says what it is built from, checks its own health and ships
// the CLI and the MCP adapter. No Docker here: the Dockerfile is read as text.
test('when the image is built, then it sets SVC_BUILD_COMMIT from a build argument, has a HEALTHCHECK and OCI labels, and ships svc and svc-mcp', () => {
  const text = readFileSync(join(root, 'deploy/Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const runtime = text.slice(text.search(/^FROM .* AS runtime$/m));
  assert.ok(runtime.length < text.length, 'a runtime stage');
  assert.match(runtime, /^ARG SVC_BUILD_COMMIT\b/m);
  assert.match(runtime, /^ENV .*\bSVC_BUILD_COMMIT=\$\{SVC_BUILD_COMMIT\}/m);
  assert.match(runtime, /^HEALTHCHECK .*CMD .*\/healthcheck/m);
  for (const label of ['revision', 'version', 'title', 'licenses', 'source', 'created']) {
    assert.match(runtime, new RegExp(`org\\.opencontainers\\.image\\.${label}=`), label);
  }
  assert.match(runtime, /org\.opencontainers\.image\.revision="\$\{SVC_BUILD_COMMIT\}"/);
  // Every workspace's manifest reaches `npm ci` (it needs them all).
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    workspaces: string[];
  };
  for (const ws of pkg.workspaces) {
    assert.match(text, new RegExp(`^COPY ${ws}/package\\.json ${ws}/$`, 'm'), ws);
  }
  // The commands on PATH point at committed bins whose build output is copied.
  for (const [command, dir, bin] of [
    ['svc', 'cli', 'bin/svc.js'],
    ['svc-mcp', 'services/mcp-adapter', 'bin/svc-mcp.js'],
  ] as const) {
    assert.ok(existsSync(join(root, dir, bin)), `${dir}/${bin}`);
    assert.match(runtime, new RegExp(`ln -s /app/${dir}/${bin} /usr/local/bin/${command}\\b`));
    for (const part of ['package.json', 'bin', 'dist']) {
      assert.match(runtime, new RegExp(`^COPY --from=build .* /app/${dir}/${part} `, 'm'), part);
    }
  }
});
