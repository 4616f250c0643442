import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
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
