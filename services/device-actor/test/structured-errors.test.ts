import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, SvcError, type JobRecord } from '@svc/proto';
import { createStructuredParser } from '../src/actor-host/structured-output.js';

const record = (spec: Partial<JobRecord['spec']>) =>
  ({
    job_id: 'j1',
    spec: { textfsm_template: null, ttp_template: null, ...spec },
  }) as unknown as JobRecord;

test('when a community template file is missing, then TEMPLATE_ERROR names the setting, never the server path', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-secret-layout-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, 'index'),
    'Template, Hostname, Platform, Command\n\ncisco_ios_show_clock.textfsm, .*, cisco_ios, sh[[ow]] clo[[ck]]\n',
  );
  const parser = createStructuredParser({ textfsmDir: dir, ttpDir: dir, timeoutMs: 5000 });
  try {
    const failures: SvcError[] = [];
    for (const [spec, command] of [
      [{}, 'show clock'],
      [{ ttp_template: 'ttp://no/such/template.txt' }, 'show version'],
    ] as const) {
      try {
        await parser.parseOutputs(record(spec), { [command]: '10:00:00 UTC' }, 'cisco_ios');
        assert.fail('expected a TEMPLATE_ERROR');
      } catch (err) {
        assert.ok(err instanceof SvcError, String(err));
        failures.push(err);
      }
    }
    for (const err of failures) {
      assert.equal(err.code, ErrorCode.TEMPLATE_ERROR, err.message);
      assert.ok(!err.message.includes(dir), err.message);
      assert.ok(!err.message.includes(tmpdir()), err.message);
    }
    assert.match(failures[0]!.message, /SVC_TEXTFSM_DIR/);
  } finally {
    await parser.close();
  }
});
