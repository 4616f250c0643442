// Nothing reaches a device that the operator did not mean (issue 13, findings 1 and 2): text with
// line breaks or control characters never reaches the simulator (its log of received lines says
// so) and is refused with 422 at the field, nothing queued; limits on commands and bodies; user
// regexes (expect_string) cannot stall the process.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Buckets, Streams } from '@svc/proto';
import { startDevice, type SimulatedDevice } from '@svc/test/support';
import {
  NatsServerProcess,
  http,
  startInProcessStack,
  waitForJob,
  waitHealthy,
  type HttpAnswer,
  type InProcessStack,
} from '../harness/mod.js';

let nats: NatsServerProcess;
let stack: InProcessStack;
let dev: SimulatedDevice;

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url, {
    env: { JOB_DEDUP_ENABLED: 'false', SVC_BODY_LIMIT: '262144' },
  });
  await waitHealthy(stack.url);
  dev = await startDevice({ platform: 'cisco_ios' });
});

after(async () => {
  await stack?.stop();
  await dev?.stop();
  await nats?.stop();
});

const auth = () => ({ basic: { username: dev.username, password: dev.password } });
const base = () => ({ host: dev.host, port: dev.port, enable: dev.enable });

/** Jobs recorded and messages on the job stream: neither may grow on a refused request. */
async function queued(): Promise<{ records: number; stream: number }> {
  const nc = stack.connections[0]!;
  const kv = await new Kvm(jetstream(nc)).open(Buckets.jobs);
  const info = await (await jetstreamManager(nc)).streams.info(Streams.jobs);
  return { records: (await kv.status()).values, stream: info.state.messages };
}

function issueAt(a: HttpAnswer, loc: (string | number)[]) {
  const body = a.json as { validation_error?: { json?: { loc: unknown[]; msg: string }[] } };
  return body.validation_error?.json?.find((i) => JSON.stringify(i.loc) === JSON.stringify(loc));
}

const INJECTED = ['configure terminal', 'hostname PWNED', 'end'];

test('when enable carries injected lines, then every route answers 422 at enable, nothing is queued, and the device never receives them', async () => {
  const enable = `${dev.enable}\n${INJECTED.join('\n')}`;
  dev.resetStats();
  const before = await queued();
  const routes: [string, Record<string, unknown>][] = [
    ['/v2/send-command', {}],
    ['/v2/send-config', {}],
    ['/v2/send-command-structured', {}],
    ['/v1/send_command', {}],
    ['/v1/send_command_structured', {}],
  ];
  for (const [path, extra] of routes) {
    const a = await http('POST', `${stack.url}${path}`, {
      ...auth(),
      body: { ...base(), commands: ['show version'], enable, ...extra },
    });
    assert.equal(a.status, 422, `${path}: ${a.text}`);
    const issue = issueAt(a, ['body', 'enable']);
    assert.ok(issue, `${path}: ${a.text}`);
    assert.match(issue.msg, /U\+000A/);
    assert.ok(!a.text.includes(dev.enable), 'the secret is not echoed');
  }
  // A batch: the shared enable and a per-device enable obey the same rule.
  for (const body of [
    { kind: 'command', commands: ['show version'], enable, devices: [base()] },
    { kind: 'config', commands: ['hostname R1'], devices: [{ ...base(), enable }] },
  ]) {
    const a = await http('POST', `${stack.url}/v2/batches`, { ...auth(), body });
    assert.equal(a.status, 422, a.text);
    const loc =
      'devices' in body && body.enable === undefined
        ? ['body', 'devices', 0, 'enable']
        : ['body', 'enable'];
    assert.ok(issueAt(a, loc), a.text);
  }
  assert.deepEqual(await queued(), before);

  // The same job with a clean enable runs; the device's log shows only what was asked.
  const ok = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth(),
    body: { ...base(), commands: ['show version'], enable: dev.enable },
  });
  assert.equal(ok.status, 202, ok.text);
  const done = await waitForJob(stack.url, (ok.json as { job_id: string }).job_id, auth());
  assert.equal((done.json as { status: string }).status, 'finished', done.text);
  const received = dev.stats.commands.map((c) => c.command);
  assert.ok(received.includes('show version'), received.join(' | '));
  for (const line of INJECTED) assert.ok(!received.includes(line), received.join(' | '));
  assert.ok(!received.some((c) => c.includes('PWNED')), received.join(' | '));
});

test('when a command, user name or password holds a control character, then 422 at that field and nothing is queued', async () => {
  const before = await queued();
  const bad = ['\u0000', '\x03', '\x1a', '\u2028', '\x85', '\t', '\r', '\x7f'];
  for (const [n, ch] of bad.entries()) {
    const commands = ['show version', 'show clock', `show ip${ch}route`];
    for (const path of ['/v2/send-command', '/v2/send-config', '/v1/send_command']) {
      const a = await http('POST', `${stack.url}${path}`, {
        ...auth(),
        body: { ...base(), commands },
      });
      assert.equal(a.status, 422, `${path} #${n}: ${a.text}`);
      assert.ok(issueAt(a, ['body', 'commands', 2]), a.text);
    }
  }
  // Basic credentials are the device login: the same rule, reported at the header.
  const basic = await http('POST', `${stack.url}/v2/send-command`, {
    basic: { username: dev.username, password: `${dev.password}\nreload` },
    body: { ...base(), commands: ['show version'] },
  });
  assert.equal(basic.status, 422, basic.text);
  assert.ok(issueAt(basic, ['header', 'Authorization']), basic.text);
  assert.ok(!basic.text.includes(dev.password));
  assert.deepEqual(await queued(), before);
});

test('when a job has too many commands, a too long command or a too large body, then it is refused before anything is queued', async () => {
  const before = await queued();
  const many = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth(),
    body: { ...base(), commands: Array.from({ length: 5000 }, () => 'show clock') },
  });
  assert.equal(many.status, 422, many.text);
  assert.ok(issueAt(many, ['body', 'commands']), many.text);
  const long = await http('POST', `${stack.url}/v2/send-config`, {
    ...auth(),
    body: { ...base(), commands: ['interface Gi0/1', `description ${'x'.repeat(5000)}`] },
  });
  assert.equal(long.status, 422, long.text);
  assert.ok(issueAt(long, ['body', 'commands', 1]), long.text);
  const huge = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth(),
    body: { ...base(), commands: ['show clock'], tags: null, pad: 'x'.repeat(300_000) },
  });
  assert.equal(huge.status, 413, huge.text);
  assert.deepEqual(await queued(), before);
});

test('when expect_string needs backtracking (backreference, lookaround) or is too large, then 422 at expect_string', async () => {
  const before = await queued();
  for (const pattern of ['(a)\\1', '(?=R1)R1#', '(?<!x)#', 'x{1000}', '(']) {
    const a = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth(),
      body: { ...base(), commands: ['show version'], expect_string: pattern },
    });
    assert.equal(a.status, 422, `${pattern}: ${a.text}`);
    assert.ok(issueAt(a, ['body', 'expect_string']), a.text);
  }
  assert.deepEqual(await queued(), before);
});

test('when a catastrophic expect_string runs on streamed output, then the event loop keeps turning, health answers, and the job ends with READ_TIMEOUT', async () => {
  // The stack runs in this process: a stalled match would stop this ticker too.
  let last = performance.now();
  let maxGap = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
  }, 10);
  try {
    await dev.setFaults({ slowOutput: { chunkSize: 64, delayMs: 2 } });
    const a = await http('POST', `${stack.url}/v2/send-command`, {
      ...auth(),
      body: {
        ...base(),
        commands: ['show running-config', 'show version'],
        expect_string: '^(.|.)*Z',
        read_timeout: 3,
      },
    });
    assert.equal(a.status, 202, a.text);
    const jobId = (a.json as { job_id: string }).job_id;
    let healthAnswers = 0;
    let slowestHealthMs = 0;
    for (;;) {
      const t0 = performance.now();
      const h = await http('GET', `${stack.url}/healthcheck`);
      slowestHealthMs = Math.max(slowestHealthMs, performance.now() - t0);
      assert.ok(h.status === 200 || h.status === 503, h.text);
      healthAnswers++;
      const job = await http('GET', `${stack.url}/v2/send-command/${jobId}`, auth());
      const status = (job.json as { status: string }).status;
      if (status === 'failed' || status === 'finished') {
        const j = job.json as { error_code: string | null };
        // No 'Z' ever comes: the read times out; it must not be a lost worker.
        assert.equal(status, 'failed', job.text);
        assert.equal(j.error_code, 'READ_TIMEOUT', job.text);
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(healthAnswers >= 3, `health answered ${healthAnswers} times during the job`);
    // Generous bounds on a shared 2-core machine; a stalled loop shows seconds.
    assert.ok(maxGap < 1000, `event loop stalled for ${Math.round(maxGap)} ms`);
    assert.ok(slowestHealthMs < 1000, `slowest health check ${Math.round(slowestHealthMs)} ms`);
  } finally {
    clearInterval(ticker);
    await dev.setFaults({});
  }
});

test('when expect_string matches in streamed output, then the output ends there (RE2 engine)', async () => {
  const a = await http('POST', `${stack.url}/v2/send-command`, {
    ...auth(),
    body: { ...base(), commands: ['show version'], expect_string: '(?i)technical\\s+support' },
  });
  assert.equal(a.status, 202, a.text);
  const done = await waitForJob(stack.url, (a.json as { job_id: string }).job_id, auth());
  const j = done.json as { status: string; results: Record<string, string> };
  assert.equal(j.status, 'finished', done.text);
  assert.match(j.results['show version'] ?? '', /Technical Support$/);
});
