import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Buckets, Consumers, ObjectBuckets, Streams, Subjects } from '@svc/proto';
import { connectNats } from '@svc/nats';
import { findNatsServer } from '@svc/launcher';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  ShippedNatsCluster,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type InProcessStack,
  type NatsUser,
  waitUntil,
} from '../harness/mod.js';

// The shipped cluster configuration (deploy/nats/n1..n3.conf, accounts.conf, permissions.conf),
// only moved onto loopback ports: who may connect, and what each service's user may do.
const natsServer = findNatsServer(process.env);
const skip = natsServer ? false : 'nats-server not found on PATH (set NATS_SERVER_BIN)';

let cluster: ShippedNatsCluster;
let stack: InProcessStack;
let device: SimulatedDevice;
const open: NatsConnection[] = [];

before(async () => {
  if (skip) return;
  cluster = await ShippedNatsCluster.start();
  device = await startDevice({ platform: 'cisco_ios', hostname: 'R1', enable: 'svc-demo' });
  stack = await startInProcessStack(cluster.url, {
    // The replay recipe of docs/events.md needs the jobs' events kept (issue 26).
    env: { NATS_REPLICAS: '3', JOB_EVENTS_REPLAY: 'true' },
    credentials: {
      gateway: cluster.credentials('gateway'),
      dispatcher: cluster.credentials('dispatcher'),
      actor: cluster.credentials('actor'),
      reaper: cluster.credentials('reaper'),
    },
  });
  await waitHealthy(stack.url, 60_000);
});

after(async () => {
  for (const nc of open) await nc.close().catch(() => undefined);
  await stack?.stop();
  await device?.stop();
  await cluster?.stop();
});

async function as(user: NatsUser): Promise<NatsConnection> {
  const nc = await connectNats(cluster.url, `test-${user}`, cluster.credentials(user));
  open.push(nc);
  return nc;
}

/** A JetStream publish the server must refuse (a permission violation, never a stored message). */
async function refusedPublish(nc: NatsConnection, subject: string): Promise<void> {
  await assert.rejects(
    jetstream(nc).publish(subject, 'x', { timeout: 5000 }),
    (err: Error) => /permission/i.test(err.message),
    `publish to ${subject} was not refused`,
  );
}

async function refusedPut(nc: NatsConnection, bucket: string): Promise<void> {
  const kv = await new Kvm(jetstream(nc)).open(bucket);
  await assert.rejects(
    kv.put('intruder', 'x'),
    (err: Error) => /permission/i.test(err.message),
    `put to ${bucket} was not refused`,
  );
}

test(
  'when a client connects without credentials, then the shipped cluster refuses it',
  { skip },
  async () => {
    for (const node of cluster.nodes) {
      await assert.rejects(
        connect({ servers: node.url, maxReconnectAttempts: 0, timeout: 5000 }),
        (err: Error) => /authoriz/i.test(err.message),
      );
    }
    await assert.rejects(
      connect({
        servers: cluster.nodes[0]!.url,
        user: 'gateway',
        pass: 'wrong',
        maxReconnectAttempts: 0,
      }),
      (err: Error) => /authoriz/i.test(err.message),
    );
  },
);

test(
  'when the services run with their own users, then a job runs end to end',
  { skip },
  async () => {
    const events = await as('events');
    const seen: string[] = [];
    const sub = events.subscribe(Subjects.eventsAll, {
      callback: (_e, m) => void seen.push(m.subject),
    });
    await events.flush();
    const submitted = await http('POST', `${stack.url}/v2/send-command`, {
      basic: { username: device.username, password: device.password },
      body: {
        host: '127.0.0.1',
        port: device.port,
        platform: 'cisco_ios',
        commands: ['show version'],
      },
    });
    assert.equal(submitted.status, 202, submitted.text);
    const jobId = submitted.json.job_id as string;
    const done = await waitForJob(stack.url, jobId, {
      basic: { username: device.username, password: device.password },
    });
    assert.equal(done.json.status, 'finished', done.text);
    // The event subscriber saw the job's events with nothing but its read-only user.
    await waitUntil(
      () => seen.includes(Subjects.jobEvent(jobId, 'finished')),
      `the finished event among ${seen.join(', ')}`,
      { timeoutMs: 5000 },
    );
    sub.unsubscribe();
    // The gateway's job counts read the record writes with its own user (a scrape catches up).
    const metrics = await http('GET', `${stack.url}/metrics`);
    assert.match(
      metrics.text,
      /^svc_jobs_total\{platform="cisco_ios",status="finished"\} [1-9]/m,
      'the gateway counted the job',
    );
  },
);

test(
  'when a job prints more than one NATS message holds, then the actor user stores it in svc-results and the gateway user reads it back',
  { skip },
  async () => {
    const chars = 1_500_000;
    const auth = { basic: { username: device.username, password: device.password } };
    const submitted = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth,
      body: {
        host: '127.0.0.1',
        port: device.port,
        platform: 'cisco_ios',
        enable: device.enable,
        commands: [`show tech-support bytes ${chars}`],
      },
    });
    assert.equal(submitted.status, 202, submitted.text);
    const done = await waitForJob(stack.url, submitted.json.job_id, auth, 180_000);
    assert.equal(done.json.status, 'finished', done.text.slice(0, 500));
    const output = done.json.results[`show tech-support bytes ${chars}`] as string;
    assert.ok(output.length >= chars, `output of ${output.length} characters`);
    assert.match(output.slice(-200), /GigabitEthernet0\/\d+ is up/);
  },
);

/** Results objects: only the actor user may write them or purge their stream. */
async function refusedResultsWrite(nc: NatsConnection): Promise<void> {
  await refusedPublish(nc, `$O.${ObjectBuckets.results}.C.intruder`);
  await refusedPublish(nc, `$O.${ObjectBuckets.results}.M.aW50cnVkZXI=`);
  const jsm = await jetstreamManager(nc);
  await assert.rejects(jsm.streams.purge(`OBJ_${ObjectBuckets.results}`), (err: Error) =>
    /permission|timeout/i.test(err.message),
  );
}

test(
  'when a user other than the actor writes or purges stored results, then NATS refuses it',
  { skip },
  async () => {
    for (const user of ['gateway', 'dispatcher', 'reaper'] as const) {
      await refusedResultsWrite(await as(user));
    }
  },
);

test(
  'when the gateway user writes a heartbeat or a lock, or makes a consumer of the jobs, then NATS refuses it',
  { skip },
  async () => {
    const nc = await as('gateway');
    await refusedPut(nc, Buckets.workers);
    await refusedPut(nc, Buckets.locks);
    // A consumer on the jobs' work queue would take them away from the actor hosts.
    const jsm = await jetstreamManager(nc);
    await assert.rejects(
      jsm.consumers.add(Streams.jobs, {
        durable_name: 'intruder',
        filter_subject: Subjects.jobShard('default', 0),
      }),
      (err: Error) => /permission|timeout/i.test(err.message),
    );
    await assert.rejects(jsm.streams.delete(Streams.jobs), (err: Error) =>
      /permission|timeout/i.test(err.message),
    );
  },
);

test(
  'when an operator stores a configuration template, then the gateway user writes svc-templates and no other service user may',
  { skip },
  async () => {
    const auth = { basic: { username: device.username, password: device.password } };
    const put = await http('PUT', `${stack.url}/v2/config-templates/nats-perm`, {
      ...auth,
      body: { template: 'hostname {{ h }}' },
    });
    assert.equal(put.status, 201, put.text);
    const read = await http('GET', `${stack.url}/v2/config-templates/nats-perm`, auth);
    assert.equal(read.json.template, 'hostname {{ h }}');
    for (const user of ['actor', 'dispatcher', 'reaper'] as const) {
      await refusedPut(await as(user), Buckets.templates);
    }
  },
);

test(
  'when an actor host user writes API keys or revocations, then NATS refuses it',
  { skip },
  async () => {
    const nc = await as('actor');
    await refusedPut(nc, Buckets.apiKeys);
    await refusedPut(nc, Buckets.revoked);
    // It consumes jobs, never queues them.
    await refusedPublish(nc, Subjects.jobShard('default', 0));
    await refusedPublish(nc, Subjects.jobs('default'));
    const jsm = await jetstreamManager(nc);
    // Of SVC_JOBS only a shard's consumer: none on a context's own subject, none on every job.
    for (const filter_subject of [Subjects.jobs('default'), Subjects.jobsAll]) {
      await assert.rejects(
        jsm.consumers.add(Streams.jobs, {
          durable_name: 'intruder',
          filter_subject,
          ack_policy: AckPolicy.Explicit,
        }),
        (err: Error) => /permission|timeout/i.test(err.message),
        `a consumer of ${filter_subject}`,
      );
    }
    await assert.rejects(
      jsm.consumers.add(Streams.jobs, { durable_name: 'intruder', ack_policy: AckPolicy.Explicit }),
      (err: Error) => /permission|timeout/i.test(err.message),
      'a consumer of every job',
    );
    // Its own shards' consumers it may make (the service does, for the shards it owns).
    const info = await jsm.consumers.info(Streams.jobs, Consumers.shard('default', 0));
    assert.equal(info.config.filter_subject, Subjects.jobShard('default', 0));
    await assert.rejects(jsm.streams.purge(`KV_${Buckets.apiKeys}`), (err: Error) =>
      /permission|timeout/i.test(err.message),
    );
  },
);

test(
  'when the dispatcher or reaper user writes outside its part, then NATS refuses it',
  { skip },
  async () => {
    const dispatcher = await as('dispatcher');
    await refusedPut(dispatcher, Buckets.apiKeys);
    await refusedPut(dispatcher, Buckets.jobs);
    await refusedPublish(dispatcher, Subjects.jobs('default'));
    const reaper = await as('reaper');
    await refusedPut(reaper, Buckets.apiKeys);
    await refusedPut(reaper, Buckets.revoked);
    await refusedPublish(reaper, Subjects.jobShard('default', 0));
  },
);

// Issue 24, finding 7: the replay recipe of docs/events.md works for the `events` user.
test(
  'when the events user follows the JetStream recipe of docs/events.md, then it replays SVC_EVENTS with a consumer of its own and may not consume other streams',
  { skip },
  async () => {
    const creds = cluster.credentials('events');
    // The recipe's inbox prefix: replies to this user only, never other users' `_INBOX.>`.
    const nc = await connect({
      servers: cluster.url.split(','),
      user: creds.NATS_USER,
      pass: creds.NATS_PASSWORD,
      inboxPrefix: '_INBOX_events',
    });
    open.push(nc);
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const info = await jsm.consumers.add(Streams.events, {
      filter_subject: 'svc.events.job.>',
      deliver_policy: DeliverPolicy.All,
      ack_policy: AckPolicy.None,
      inactive_threshold: 60_000_000_000,
    });
    const consumer = await jetstream(nc, { checkAPI: false }).consumers.get(
      Streams.events,
      info.name,
    );
    const first = await consumer.next({ expires: 10_000 });
    assert.ok(first?.subject.startsWith('svc.events.job.'), 'a replayed job event');
    await assert.rejects(
      jsm.consumers.add(Streams.jobs, { ack_policy: AckPolicy.Explicit }),
      /permission|timeout/i,
    );
  },
);

test(
  'when the event subscriber publishes or reads beyond events, then NATS refuses it',
  { skip },
  async () => {
    const nc = await as('events');
    await refusedPublish(nc, Subjects.jobEvent('00000000-0000-4000-8000-000000000000', 'finished'));
    await refusedPublish(nc, '$JS.API.INFO');
    const sub = nc.subscribe(Subjects.jobsAll);
    const closed = await sub.closed;
    assert.ok(closed instanceof Error && /permission/i.test(closed.message), String(closed));
  },
);
