import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NatsServerProcess, ServiceProcess, http, testEnv } from '../harness/mod.js';

// Audit lines are buffered on stdout (one write for many lines); a graceful stop must not lose
// the ones still in the buffer.
test('when the gateway is stopped gracefully right after an audited request, then its audit line is in the output after the stop', async (t) => {
  const nats = await NatsServerProcess.start();
  // INFO: the test reads the gateway's start line for its URL.
  const gateway = ServiceProcess.start('gateway', testEnv(nats.url, { LOG_LEVEL: 'INFO' }));
  t.after(async () => {
    await gateway.kill('SIGKILL');
    await nats.stop();
  });
  const url = await gateway.httpUrl();

  // The failure is audited before the 401 is sent.
  const answer = await http('GET', `${url}/v2/jobs`, {
    headers: { authorization: 'Bearer not.a.token' },
  });
  assert.equal(answer.status, 401, answer.text);
  await gateway.kill('SIGTERM');

  assert.equal(gateway.child.exitCode, 0, 'a graceful stop');
  const audited = gateway.output
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['logger'] === 'svc.audit' && l['event_type'] === 'auth.failed');
  assert.equal(audited.length, 1, gateway.output.slice(-5).join('\n'));
  assert.equal(audited[0]!['status'], '401');
});
