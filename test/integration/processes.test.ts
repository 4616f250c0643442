import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { startFleet } from '@svc/test/support';
import {
  NatsServerProcess,
  ServiceProcess,
  http,
  readAllFiles,
  testEnv,
  waitForJob,
  waitWorkers,
} from '../harness/mod.js';

const PASSWORD = 'Pw-9f3c1e-never-stored';

test('when gateway, dispatcher and two actor hosts run as processes, then 50 jobs on 10 devices all finish, in order per device, one session at a time, and no password is stored', async (t) => {
  const nats = await NatsServerProcess.start();
  const fleet = await startFleet({
    count: 10,
    platform: 'cisco_ios',
    commandLatencyMs: 15,
    password: PASSWORD,
    enable: PASSWORD,
  });
  // INFO: the test reads the gateway's start line and scans every log line for the password.
  const env = testEnv(nats.url, { LOG_LEVEL: 'INFO' });
  const procs = [
    ServiceProcess.start('reaper', env),
    ServiceProcess.start('dispatcher', env),
    ServiceProcess.start('device-actor', env),
    ServiceProcess.start('device-actor', env),
    ServiceProcess.start('gateway', env),
  ];
  t.after(async () => {
    for (const p of procs.slice().reverse()) await p.kill('SIGTERM');
    await fleet.stop();
    await nats.stop();
  });
  const url = await procs[4]!.httpUrl();
  // Both actor hosts beat before load starts, so placement can use both.
  await waitWorkers(url, 2);

  const auth = { basic: { username: fleet.devices[0]!.username, password: PASSWORD } };
  const submitted = new Map<number, string[]>(); // device index -> commands in submit order
  const jobIds: string[] = [];
  for (let round = 0; round < 5; round++) {
    await Promise.all(
      fleet.devices.map(async (d, i) => {
        const command = `show interface GigabitEthernet0/${round}`;
        const a = await http('POST', `${url}/v2/send-command`, {
          ...auth,
          body: { host: d.host, port: d.port, commands: [command] },
        });
        assert.equal(a.status, 202, a.text);
        jobIds.push(a.json.job_id as string);
        submitted.set(i, [...(submitted.get(i) ?? []), command]);
      }),
    );
  }
  const results = await Promise.all(jobIds.map((id) => waitForJob(url, id, auth, 60_000)));
  assert.equal(
    results.filter((r) => r.json.status === 'finished').length,
    50,
    'every job finished',
  );

  fleet.devices.forEach((d, i) => {
    const seen = d.stats.commands
      .map((c) => c.command)
      .filter((c) => c.startsWith('show interface'));
    assert.deepEqual(seen, submitted.get(i), `device ${i} ran its jobs in submission order`);
    assert.equal(d.stats.maxConcurrentSessions, 1, `device ${i} never had two sessions at once`);
  });

  // Both hosts did work: placement spread the devices.
  const nc = await connect({ servers: nats.url });
  try {
    const kv = await new Kvm(jetstream(nc)).open('svc-jobs');
    const hosts = new Set<string>();
    for (const id of jobIds) {
      const e = await kv.get(id);
      hosts.add(
        (JSON.parse(new TextDecoder().decode(e!.value)) as { actor_host: string }).actor_host,
      );
    }
    assert.equal(hosts.size, 2, 'jobs ran on both actor hosts');
  } finally {
    await nc.close();
  }

  // Nothing NATS stores holds the device password, in any encoding we can think of.
  const needles = [
    PASSWORD,
    Buffer.from(PASSWORD).toString('base64'),
    Buffer.from(PASSWORD).toString('hex'),
  ];
  for (const file of await readAllFiles(nats.storeDir)) {
    const text = file.toString('latin1');
    for (const n of needles) assert.ok(!text.includes(n), 'a device password is stored in NATS');
  }
  // Nor do the logs.
  for (const p of procs) {
    for (const line of p.output) assert.ok(!line.includes(PASSWORD), `${p.name} logged a password`);
  }
});
