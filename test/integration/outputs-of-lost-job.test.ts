// A job whose actor host went silent past WORKER_STALE_THRESHOLD is failed WORKER_LOST by the
// reaper, while the host may still be running it: its NATS connection lost, its SSH session to
// the device alive. When the device then answers, the host's `finished` compare-and-set is
// refused (the job ended) and what the device said was dropped: the record read "lost" with no
// outputs for commands that ran (possibly a configuration change). Here the actor host reaches
// a real nats-server through a relay that drops its heartbeats on demand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buckets } from '@svc/proto';
import { filteredDeviceStackForTest, http, waitUntil } from '../harness/mod.js';

test('when the reaper fails a job as lost while its host still runs it, then the outputs the device then gives are kept in the failed record', async (t) => {
  const { device, stack, auth, filter } = await filteredDeviceStackForTest(
    t,
    { platform: 'cisco_ios', enable: 'svc-demo' },
    (service) => service.startsWith('actor'),
  );
  const host = stack.actors[0]!.hostId;
  await device.setFaults({ hold: 'show ip interface brief' });
  const commands = ['show version', 'show ip interface brief'];
  const submitted = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth,
    body: { host: device.host, port: device.port, platform: 'cisco_ios', commands },
  });
  assert.equal(submitted.status, 202, submitted.text);
  const jobId = submitted.json.job_id as string;
  await waitUntil(
    () => device.stats.commands.some((c) => c.command === 'show ip interface brief'),
    'the second command to reach the device',
  );

  // The host's heartbeats go nowhere; the reaper takes it for dead and fails its job.
  filter.drop((subject) => subject === `$KV.${Buckets.workers}.${host}`);
  const read = () => http('GET', `${stack.url}/v2/send-command/${jobId}`, auth);
  const lost = await waitUntil(async () => {
    const r = await read();
    return r.json.status === 'failed' ? r : null;
  }, 'the job failed by the reaper');
  assert.equal(lost.json.error_code, 'WORKER_LOST', lost.text);
  assert.equal(lost.json.command_status, null, 'no outputs yet');

  // The device answers; the record keeps its end and gains what the device said.
  await device.setFaults({});
  const kept = await waitUntil(async () => {
    const r = await read();
    return r.json.command_status ? r : null;
  }, 'the outputs kept in the failed record');
  assert.equal(kept.json.status, 'failed');
  assert.equal(kept.json.error_code, 'WORKER_LOST');
  assert.deepEqual(Object.keys(kept.json.results), commands);
  assert.match(kept.json.results['show version'], /^Cisco IOS Software/);
  assert.deepEqual(
    kept.json.command_status.map((s: { command: string; status: string }) => [s.command, s.status]),
    commands.map((c) => [c, 'ok']),
  );
});
