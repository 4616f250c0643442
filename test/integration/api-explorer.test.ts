// An API explorer at /docs and human-readable logs on a terminal (issue 24, finding 10). Real
// nats-server, real HTTP, real processes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  NatsServerProcess,
  ServiceProcess,
  http,
  startInProcessStack,
  waitHealthy,
  type InProcessStack,
} from '../harness/mod.js';

let nats: NatsServerProcess;
let stack: InProcessStack;

before(async () => {
  nats = await NatsServerProcess.start();
  stack = await startInProcessStack(nats.url);
  await waitHealthy(stack.url);
});

after(async () => {
  await stack?.stop();
  await nats?.stop();
});

test('when a browser opens /docs, then it gets the API explorer of the generated OpenAPI document without authentication, and the API routes still need it', async () => {
  let page = await http('GET', `${stack.url}/docs`);
  if (page.status === 302)
    page = await http('GET', new URL(String(page.headers['location']), `${stack.url}/docs`).href);
  assert.equal(page.status, 200, page.text);
  assert.match(String(page.headers['content-type']), /text\/html/);
  assert.match(page.text, /swagger/i);
  const served = await http('GET', `${stack.url}/docs/json`);
  assert.equal(served.status, 200);
  const doc = await http('GET', `${stack.url}/v2/openapi.json`);
  assert.deepEqual(served.json.paths, doc.json.paths, 'the explorer shows the generated document');
  const api = await http('GET', `${stack.url}/v2/send-command/no-such-job`);
  assert.equal(api.status, 401);
});

test('when npm start logs with LOG_FORMAT=pretty, then lines are human-readable; piped without it they are JSON', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-logs-'));
  const launchers: ServiceProcess[] = [];
  // One hook, in this order: hooks run as registered, and a data dir removed first was removed
  // under a running launcher's nats-server (ENOTEMPTY when it wrote meanwhile).
  t.after(async () => {
    for (const launcher of launchers) await launcher.kill('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  });
  const env = (format: string) => ({
    // Its own nats-server (the shared one holds the in-process stack's streams).
    NATS_URL: '',
    NATS_USER: '',
    NATS_PASSWORD: '',
    PATH: `${process.env['PATH'] ?? ''}:/usr/sbin`,
    SVC_ENCRYPTION_KEY: '',
    SVC_DATA_DIR: dataDir,
    SVC_PORT: '0',
    SVC_HTTP_PORT: '-1',
    LOG_LEVEL: 'INFO',
    LOG_FORMAT: format,
  });
  const pretty = ServiceProcess.start('launcher', env('pretty'));
  launchers.push(pretty);
  const prettyLine = await pretty.waitFor(/gateway listening/);
  assert.throws(() => JSON.parse(prettyLine) as unknown, 'not JSON');
  assert.match(prettyLine, /INFO/);
  await pretty.kill('SIGTERM');

  const piped = ServiceProcess.start('launcher', env(''));
  launchers.push(piped);
  const jsonLine = await piped.waitFor(/gateway listening/);
  assert.equal((JSON.parse(jsonLine) as { level: string }).level, 'INFO');
});
