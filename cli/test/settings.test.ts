import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliError, ExitCode, defaultConfigPath, resolveSettings } from '../src/mod.js';

function home(t: { after(fn: () => void): void }, config?: object, mode = 0o600): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-settings-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  if (config) {
    const path = defaultConfigPath({}, dir);
    mkdirSync(join(dir, '.config', 'svc'), { recursive: true });
    writeFileSync(path, JSON.stringify(config));
    chmodSync(path, mode);
  }
  return dir;
}

test('when a setting is given as flag, environment and file, then the flag wins, then the environment', (t) => {
  const dir = home(t, {
    url: 'https://file:1',
    api_key: 'file-key',
    username: 'fu',
    insecure: true,
  });
  const s = resolveSettings(
    { url: 'https://flag:1' },
    { SVC_URL: 'https://env:1', SVC_API_KEY: 'env-key' },
    dir,
  );
  assert.equal(s.url, 'https://flag:1');
  assert.equal(s.apiKey, 'env-key');
  assert.equal(s.username, 'fu');
  assert.equal(s.insecure, true);
  const bare = resolveSettings({}, {}, home(t));
  assert.equal(bare.url, 'https://127.0.0.1:8443');
  assert.equal(bare.apiKey, null);
  assert.equal(bare.configFile, null);
});

test('when the config file is group or world readable, then it is refused as a usage error', (t) => {
  for (const mode of [0o640, 0o604, 0o660]) {
    const dir = home(t, { api_key: 'k' }, mode);
    assert.throws(
      () => resolveSettings({}, {}, dir),
      (e: unknown) =>
        e instanceof CliError && e.exitCode === ExitCode.usage && /chmod 600/.test(e.message),
    );
  }
});

test('when the config file has an unknown key, a named file is missing or the CA file is missing, then each is a usage error', (t) => {
  assert.throws(
    () => resolveSettings({}, {}, home(t, { api_token: 'x' })),
    /unknown key "api_token"/,
  );
  assert.throws(
    () => resolveSettings({ config: '/nonexistent/svc.json' }, {}, home(t)),
    /nonexistent/,
  );
  assert.throws(() => resolveSettings({ caFile: '/nonexistent/ca.pem' }, {}, home(t)), /CA file/);
  assert.throws(() => resolveSettings({ url: 'ftp://x' }, {}, home(t)), /not an http/);
});

test('when XDG_CONFIG_HOME is set, then the config file is looked up there', () => {
  assert.equal(defaultConfigPath({ XDG_CONFIG_HOME: '/x' }, '/home/u'), '/x/svc/config.json');
  assert.equal(defaultConfigPath({}, '/home/u'), '/home/u/.config/svc/config.json');
});
