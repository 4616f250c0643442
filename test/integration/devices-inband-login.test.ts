import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createDeviceRunner } from '@svc/device-actor';
import { expectedOutput, jobFor, startDevice } from '@svc/test/support';

// Cisco Sx300 and PowerConnect ask for the user name and password again inside the shell
// after SSH authentication; the driver answers with the job's credentials.

const run = createDeviceRunner({ pool: null, poolExclude: [] });

for (const platform of ['cisco_s300', 'dell_powerconnect']) {
  test(`${platform}: when the shell asks User Name and Password, then the job's credentials log in and the device saw them`, async (t) => {
    const dev = await startDevice({ platform });
    t.after(() => dev.stop());
    const out = await run(jobFor(dev, { commands: ['show version'] }));
    assert.equal(out.results['show version'], expectedOutput(dev, 'show version'));
    assert.equal(dev.stats.authFailures, 0);
    // Passwords are not commands: the in-band answers are not in the device's command list.
    assert.ok(!dev.stats.commands.some((c) => c.command.includes(dev.password)));
  });
}

test('cisco_s300: when the in-band login refuses the password, then the job fails AUTH_FAILED without the password in the error', async (t) => {
  const dev = await startDevice({ platform: 'cisco_s300', inbandPassword: 'in-band-only' });
  t.after(() => dev.stop());
  await assert.rejects(
    run(jobFor(dev, { commands: ['show version'] })),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'AUTH_FAILED', err.message);
      assert.ok(!err.message.includes(dev.password));
      return true;
    },
  );
  assert.equal(dev.stats.authFailures, 1, 'the password was typed once, not retried');
});
