import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PLATFORMS } from '@svc/proto';
import { createDeviceRunner } from '@svc/device-actor';
import { PLATFORM_CASES as CASES, expectedOutput, jobFor, startDevice } from '@svc/test/support';

test('every platform id has a simulator case', () => {
  assert.deepEqual(Object.keys(CASES).sort(), [...PLATFORMS].sort());
});

for (const platform of PLATFORMS) {
  const c = CASES[platform];
  if (c === undefined) continue;
  test(`${platform}: when show commands run, then each output is exactly the device's text`, async (t) => {
    const dev = await startDevice({ platform });
    t.after(() => dev.stop());
    const run = createDeviceRunner({ pool: null, poolExclude: [] });
    const out = await run(jobFor(dev, { commands: c.show }));
    assert.deepEqual(Object.keys(out.results), c.show);
    for (const cmd of c.show) {
      const text = out.results[cmd];
      assert.equal(text, expectedOutput(dev, cmd), `${platform} ${cmd}`);
    }
    assert.equal(out.pooled, false);
    assert.equal(out.detectedPlatform, null);
  });

  test(`${platform}: when a config set runs${c.save ? ' with save' : ''}${c.commit ? ' with commit' : ''}, then the device applied it and is back at exec`, async (t) => {
    const dev = await startDevice({ platform });
    t.after(() => dev.stop());
    const run = createDeviceRunner({ pool: null, poolExclude: [] });
    const out = await run(
      jobFor(dev, { kind: 'config', commands: c.config, saveConfig: c.save, commit: c.commit }),
    );
    for (const line of c.config) assert.ok(line in out.results, `transcript has ${line}`);
    if (c.saveKey !== undefined) assert.ok(c.saveKey in out.results, `transcript has ${c.saveKey}`);
    assert.equal(dev.stats.configLines, c.configLines, 'config lines');
    assert.equal(dev.stats.saves, c.saves, 'saves');
    assert.equal(dev.stats.commits, c.commits, 'commits');
    assert.notEqual(dev.lastMode, 'config');
    if (platform === 'linux') assert.equal(out.results['echo configured'], 'configured');
  });

  test(`${platform}: when the platform is autodetect, then it is detected and the job runs`, async (t) => {
    const dev = await startDevice({ platform });
    t.after(() => dev.stop());
    const run = createDeviceRunner({ pool: null, poolExclude: [] });
    const cmd = c.show[0] ?? '';
    const out = await run(jobFor(dev, { platform: 'autodetect', commands: [cmd] }));
    assert.equal(out.detectedPlatform, platform);
    assert.equal(out.results[cmd], expectedOutput(dev, cmd));
    assert.equal(dev.stats.handshakes, 2, 'one fingerprinting session, one job session');
  });
}
