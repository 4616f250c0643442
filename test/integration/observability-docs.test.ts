import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

test('when the OpenAPI document changes, then docs/api.md must be regenerated (check mode passes)', () => {
  const run = spawnSync(process.execPath, ['scripts/gen-api-docs.mjs', '--check'], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
});
