import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createDeviceRunner } from '@svc/device-actor';
import { jobFor, startDevice } from '@svc/test/support';

/**
 * Config jobs never report success for a change the device did not apply. On Junos and PAN-OS
 * a change takes effect only on commit: without one it sits in the candidate configuration
 * (which outlives the session) until someone else's commit applies it.
 */

const run = createDeviceRunner({ pool: null, poolExclude: [] });

const LINES: Record<string, string[]> = {
  juniper_junos: ['set interfaces ge-0/0/1 description x'],
  paloalto_panos: ['set deviceconfig system hostname PA2'],
};

for (const platform of ['juniper_junos', 'paloalto_panos']) {
  const commands = LINES[platform] ?? [];

  test(`${platform}: when send-config runs without commit, then it fails COMMAND_ERROR before touching the device (the change would sit uncommitted)`, async (t) => {
    const dev = await startDevice({ platform });
    t.after(() => dev.stop());
    await assert.rejects(
      run(jobFor(dev, { kind: 'config', commands })),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'COMMAND_ERROR');
        assert.match(err.message, new RegExp(`${platform}.*commit: true`));
        return true;
      },
    );
    assert.equal(dev.stats.handshakes, 0, 'the device was not touched');
    assert.equal(dev.stats.configLines, 0);
    assert.equal(dev.uncommitted, false, 'nothing left in the candidate');
  });

  test(`${platform}: when send-config commits, then it finishes and nothing is left uncommitted`, async (t) => {
    const dev = await startDevice({ platform });
    t.after(() => dev.stop());
    const out = await run(jobFor(dev, { kind: 'config', commands, commit: true }));
    assert.ok('commit' in out.results);
    assert.equal(dev.stats.commits, 1);
    assert.equal(dev.uncommitted, false);
    assert.notEqual(dev.lastMode, 'config');
  });
}
