import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, Sealer } from '@svc/proto';
import { readServiceSettings } from '@svc/service-main';
import { loadDeviceActorConfig } from '../src/config.js';

function problemsOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.problems;
  }
  assert.fail('expected a ConfigError');
}

test('when several settings are wrong, then one start reports every one of them', () => {
  const missing = join(tmpdir(), 'svc-no-such-templates-dir');
  const problems = problemsOf(() =>
    loadDeviceActorConfig({
      HEARTBEAT_INTERVAL: 'soon',
      BREAKER_THRESHOLD: '0',
      DEVICE_NETWORKS_ALLOW: '10.0.0.0/33',
      WEBHOOK_ALLOW_NETWORKS: 'not a network!',
      SVC_TEXTFSM_DIR: missing,
    }),
  );
  const text = problems.join('\n');
  for (const name of [
    'HEARTBEAT_INTERVAL',
    'BREAKER_THRESHOLD',
    'DEVICE_NETWORKS_ALLOW',
    'WEBHOOK_ALLOW_NETWORKS',
    'SVC_TEXTFSM_DIR',
  ]) {
    assert.match(text, new RegExp(name), text);
  }
});

test('when SVC_TEXTFSM_DIR is not a template folder, then the start fails naming the setting', (t) => {
  const empty = mkdtempSync(join(tmpdir(), 'svc-textfsm-'));
  t.after(() => rmSync(empty, { recursive: true, force: true }));
  const [problem] = problemsOf(() => loadDeviceActorConfig({ SVC_TEXTFSM_DIR: empty }));
  assert.match(problem ?? '', /^SVC_TEXTFSM_DIR: .*index/);
  const file = join(empty, 'a-file');
  writeFileSync(file, 'x');
  assert.match(
    problemsOf(() => loadDeviceActorConfig({ SVC_TTP_TEMPLATES_DIR: file }))[0] ?? '',
    /^SVC_TTP_TEMPLATES_DIR: .*not a directory/,
  );
  // A real folder in the ntc-templates layout starts.
  writeFileSync(
    join(empty, 'index'),
    'Template, Hostname, Platform, Command\n\ncisco_ios_show_clock.textfsm, .*, cisco_ios, sh[[ow]] clo[[ck]]\n',
  );
  assert.equal(loadDeviceActorConfig({ SVC_TEXTFSM_DIR: empty }).SVC_TEXTFSM_DIR, empty);
});

test('when the encryption key is missing and a setting is bad, then both are reported at once', () => {
  const opts = { loadConfig: loadDeviceActorConfig, needsSealer: true };
  const problems = problemsOf(() => readServiceSettings({ BREAKER_THRESHOLD: 'x' }, opts));
  assert.equal(problems.length, 2, problems.join('\n'));
  assert.ok(problems.some((p) => p.startsWith('SVC_ENCRYPTION_KEY: required')));
  const short = problemsOf(() =>
    readServiceSettings({ SVC_ENCRYPTION_KEY: Buffer.from('short').toString('base64') }, opts),
  );
  assert.match(short[0] ?? '', /^SVC_ENCRYPTION_KEY: /);
  assert.ok(!short[0]?.includes('c2hvcnQ'), 'the key is never shown');
  const ok = readServiceSettings({ SVC_ENCRYPTION_KEY: Sealer.generateKey() }, opts);
  assert.ok(ok.sealer);
});
