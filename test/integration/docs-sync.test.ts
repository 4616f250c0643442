import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

test('when the settings or error codes change, then docs/configuration.md and docs/errors.md were regenerated', () => {
  const script = fileURLToPath(new URL('../../../scripts/gen-docs.mjs', import.meta.url));
  const r = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});
