import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PLATFORMS, compilePattern, driverDescriptionProblems, loadDriverDir } from '@svc/proto';
import { BUILTIN_DRIVERS } from '../src/mod.js';

test('every built-in driver is a valid driver description', () => {
  for (const p of PLATFORMS) {
    assert.equal(BUILTIN_DRIVERS[p].platform, p);
    assert.deepEqual(driverDescriptionProblems(BUILTIN_DRIVERS[p], p), [], p);
  }
});

test('when a pattern starts with (?i), then it ignores case', () => {
  assert.ok(compilePattern('(?i)^error:').test('ERROR: x'));
  assert.ok(!compilePattern('^error:').test('ERROR: x'));
});

test('when the driver folder holds good and bad files, then the good load and every problem is listed', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-drivers-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const good = { ...BUILTIN_DRIVERS.cisco_ios, platform: 'lab_ios', name: 'Lab IOS' };
  writeFileSync(join(dir, 'a-good.json'), JSON.stringify(good));
  writeFileSync(join(dir, 'b-not-json.json'), '{ nope');
  writeFileSync(
    join(dir, 'c-schema.json'),
    JSON.stringify({ ...good, platform: 'Bad Name', pagingOff: 'terminal length 0' }),
  );
  writeFileSync(
    join(dir, 'd-regex.json'),
    JSON.stringify({ ...good, platform: 'lab_x', errors: ['(unclosed'] }),
  );
  writeFileSync(join(dir, 'e-builtin.json'), JSON.stringify({ ...good, platform: 'cisco_ios' }));
  writeFileSync(join(dir, 'f-twice.json'), JSON.stringify(good));
  writeFileSync(
    join(dir, 'g-nobase.json'),
    JSON.stringify({ ...good, platform: 'lab_y', prompt: { ...good.prompt, any: '^R1#$' } }),
  );
  writeFileSync(join(dir, 'notes.txt'), 'not a driver');
  const { drivers, problems } = loadDriverDir(dir);
  assert.deepEqual(
    drivers.map((d) => d.platform),
    ['lab_ios'],
  );
  const text = problems.join('\n');
  assert.match(text, /b-not-json\.json: not JSON/);
  assert.match(text, /c-schema\.json\.platform: /);
  assert.match(text, /c-schema\.json\.pagingOff: /);
  assert.match(text, /d-regex\.json\.errors\.0: not a valid regular expression/);
  assert.match(text, /e-builtin\.json: platform "cisco_ios" is built in/);
  assert.match(text, /f-twice\.json: platform "lab_ios" is also described in a-good\.json/);
  assert.match(text, /g-nobase\.json\.prompt\.any: must contain \{base\}/);
  assert.equal(problems.length, 7, text);
});

test('when the driver folder is missing, then that is the one problem; empty means none', () => {
  assert.match(
    loadDriverDir(join(tmpdir(), 'svc-no-such-drivers')).problems[0] ?? '',
    /^SVC_DRIVERS_DIR: .* cannot be read \(ENOENT\)/,
  );
  assert.deepEqual(loadDriverDir(''), { drivers: [], problems: [] });
});
