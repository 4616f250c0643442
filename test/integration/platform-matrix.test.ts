import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PLATFORMS } from '@svc/proto';
import { CommandsRejected, createDeviceRunner } from '@svc/device-actor';
import { PLATFORM_CASES as CASES, expectedOutput, jobFor, startDevice } from '@svc/test/support';

// The platform matrix: for every supported platform the simulator plays that platform's
// prompts, paging and error lines (test/support/platforms/<platform>.json, from the vendors'
// public documentation), and the driver's output must equal the device's text exactly.
// Show/config/autodetect per platform: devices-platforms.test.ts; context lines:
// devices-fidelity.test.ts. One in-process simulator per test.

const run = createDeviceRunner({ pool: null, poolExclude: [] });

for (const platform of PLATFORMS) {
  const c = CASES[platform];
  if (c === undefined) continue;

  test(`${platform}: when the device keeps paging after the paging-off command, then each output is still exactly the device's text`, async (t) => {
    const dev = await startDevice({ platform, faults: { ignorePagingOff: true } });
    t.after(() => dev.stop());
    const out = await run(jobFor(dev, { commands: c.show }));
    for (const cmd of c.show) {
      assert.equal(out.results[cmd], expectedOutput(dev, cmd), `${platform} ${cmd}`);
    }
  });

  test(`${platform}: when the device rejects a command, then it is marked with the device's error line and the other outputs are kept`, async (t) => {
    const dev = await startDevice({ platform });
    t.after(() => dev.stop());
    const first = c.show[0] ?? '';
    const last = c.show[1] ?? '';
    let rejected: CommandsRejected | null = null;
    try {
      await run(jobFor(dev, { commands: [first, 'bogus-command', last] }));
    } catch (err) {
      if (!(err instanceof CommandsRejected)) throw err;
      rejected = err;
    }
    assert.ok(rejected !== null, 'the job fails COMMAND_ERROR');
    assert.equal(rejected.code, 'COMMAND_ERROR');
    assert.equal(rejected.results[first], expectedOutput(dev, first));
    assert.equal(rejected.results[last], expectedOutput(dev, last));
    const status = rejected.commandStatus.map((s) => s.status);
    assert.deepEqual(status, ['ok', 'error', 'ok']);
    const line = rejected.commandStatus[1]?.error ?? '';
    assert.ok(line !== '' && String(rejected.results['bogus-command']).includes(line), line);
  });
}
