import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createDeviceRunner } from '@svc/device-actor';
import { expectedOutput, jobFor, startDevice } from '@svc/test/support';

// Autodetect against devices as they answer in the field: a plain IOS router at its `>` prompt,
// images that refuse `show version` in user-exec mode, and a banner that arrives in pieces.

const run = createDeviceRunner({ pool: null, poolExclude: [] });

test('when a plain IOS device answers "Cisco IOS Software, IOSv Software" at its > prompt, then autodetect says cisco_ios', async (t) => {
  const dev = await startDevice({ platform: 'cisco_ios' });
  t.after(() => dev.stop());
  const out = await run(jobFor(dev, { platform: 'autodetect', commands: ['show version'] }));
  assert.equal(out.detectedPlatform, 'cisco_ios');
  assert.match(String(out.results['show version']), /^Cisco IOS Software, IOSv Software/);
});

// Platforms that log in at a user-exec prompt and have an enable.
for (const platform of [
  'cisco_ios',
  'cisco_xe',
  'cisco_asa',
  'arista_eos',
  'hp_procurve',
  'allied_telesis_awplus',
  'ipinfusion_ocnos',
]) {
  test(`${platform}: when show version is refused in user-exec mode, then autodetect enters enable and detects the platform`, async (t) => {
    const dev = await startDevice({ platform, privilegedOnly: ['show version'] });
    t.after(() => dev.stop());
    const out = await run(jobFor(dev, { platform: 'autodetect', commands: ['show version'] }));
    assert.equal(out.detectedPlatform, platform);
    assert.equal(out.results['show version'], expectedOutput(dev, 'show version'));
  });
}

test('when the banner splits at a line that looks like a prompt on a slow link, then autodetect still reads the answer to show version', async (t) => {
  const dev = await startDevice({
    platform: 'cisco_ios',
    bannerPauseMs: 40,
    faults: { slowEchoMs: 30 },
  });
  t.after(() => dev.stop());
  const out = await run(jobFor(dev, { platform: 'autodetect', commands: ['show version'] }));
  assert.equal(out.detectedPlatform, 'cisco_ios');
  assert.equal(out.results['show version'], expectedOutput(dev, 'show version'));
});
