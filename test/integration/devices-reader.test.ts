import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UserPattern } from '@svc/proto';
import { CliSession, getDriver } from '@svc/device-actor';
import { bulkText, startDevice } from '@svc/test/support';

/**
 * The reader is linear: a 5 MB output streamed in 4 KB chunks is read with a number of
 * characters scanned that is a small multiple of its size (counted, not timed).
 */

const BYTES = 5 * 1024 * 1024;

for (const withExpect of [false, true]) {
  test(`cisco_ios: when show tech-support prints 5 MB in 4 KB chunks${withExpect ? ' and expect_string ends it' : ''}, then the output is whole and the characters scanned stay linear`, async (t) => {
    const dev = await startDevice({
      platform: 'cisco_ios',
      bulkOutput: { command: 'show tech-support', bytes: BYTES },
      faults: { slowOutput: { chunkSize: 4096, delayMs: 0 } },
    });
    t.after(() => dev.stop());
    const driver = getDriver('cisco_ios');
    assert.ok(driver);
    const signal = new AbortController().signal;
    const cli = await CliSession.open(
      driver,
      {
        host: dev.host,
        port: dev.port,
        username: dev.username,
        password: dev.password,
        connTimeoutMs: 10_000,
        readTimeoutMs: 10_000,
      },
      signal,
    );
    t.after(() => cli.destroy());
    await cli.prepare(dev.username, dev.enable, 10_000);
    const before = cli.scanned;
    const chunksBefore = cli.chunks;
    const out = await cli.command('show tech-support', {
      timeoutMs: 60_000,
      expect: withExpect ? UserPattern.compile('END-OF-BULK') : null,
    });
    assert.equal(out, bulkText(BYTES));
    const chunks = cli.chunks - chunksBefore;
    const scanned = cli.scanned - before;
    assert.ok(chunks >= 100, `read in ${chunks} chunks`);
    assert.ok(
      scanned <= (withExpect ? 6 : 3) * out.length,
      `${scanned} characters scanned for ${out.length}`,
    );
  });
}
