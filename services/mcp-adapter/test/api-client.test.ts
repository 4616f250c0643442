import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiClient } from '../src/api-client.js';
import { AdapterError } from '../src/errors.js';
import { waitForJob } from '../src/job-wait.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler = (_req, res) => res.end();
const seen: { method: string; url: string; authorization: string | undefined }[] = [];

// A real loopback HTTP server answering what each test needs: the client is exercised over
// real sockets, not a stubbed transport.
const server = createServer((req, res) => {
  seen.push({
    method: req.method ?? '',
    url: req.url ?? '',
    authorization: req.headers.authorization,
  });
  handler(req, res);
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
after(() => {
  server.closeAllConnections();
  server.close();
});

const client = (extra: Partial<ConstructorParameters<typeof ApiClient>[0]> = {}) =>
  new ApiClient({ baseUrl: `${base}/svc`, apiKey: 'k-123', timeoutMs: 500, ...extra });

function json(status: number, body: unknown, headers: Record<string, string> = {}): Handler {
  return (_req, res) => {
    res
      .writeHead(status, { 'content-type': 'application/json', ...headers })
      .end(JSON.stringify(body));
  };
}

async function failure(p: Promise<unknown>): Promise<AdapterError> {
  const err = await p.then(
    () => assert.fail('expected an error'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof AdapterError, String(err));
  return err;
}

test('when calling, then the Bearer key, the path prefix and the query are sent', async () => {
  handler = json(200, { ok: true });
  const answer = await client().get('/v2/jobs', { query: { page: 2, status: undefined } });
  assert.deepEqual(answer.body, { ok: true });
  const last = seen.at(-1)!;
  assert.equal(last.authorization, 'Bearer k-123');
  assert.equal(last.url, '/svc/v2/jobs?page=2');
});

const statuses: [number, string, boolean][] = [
  [401, 'UNAUTHORIZED', false],
  [403, 'FORBIDDEN', false],
  [404, 'NOT_FOUND', false],
  [409, 'CONFLICT', false],
  [429, 'RATE_LIMITED', true],
  [503, 'SERVICE_UNAVAILABLE', true],
  [500, 'API_ERROR', false],
];
for (const [status, code, retryable] of statuses) {
  test(`when the API answers ${status}, then the error is ${code} with the API message`, async () => {
    handler = json(
      status,
      { message: `because ${status}` },
      status === 429 ? { 'retry-after': '7' } : {},
    );
    const err = await failure(client().get('/x'));
    assert.equal(err.code, code);
    assert.equal(err.retryable, retryable);
    assert.equal(err.message, `because ${status}`);
    assert.equal(err.details.httpStatus, status);
    if (status === 429) assert.equal(err.details.retryAfterSeconds, 7);
  });
}

test('when the API answers 422, then the message names each invalid field', async () => {
  const issues = [
    { loc: ['body', 'port'], msg: 'Input should be a valid integer', type: 'int_type' },
  ];
  handler = json(422, { message: 'validation failed', validation_error: { json: issues } });
  const err = await failure(client().post('/v2/send-command', {}));
  assert.equal(err.code, 'VALIDATION_ERROR');
  assert.equal(err.message, 'validation failed: body.port: Input should be a valid integer');
  assert.deepEqual(err.details.validation, issues);
});

test('when the API body carries an error_code, then it wins over the status', async () => {
  handler = json(403, {
    message: 'locked out',
    error_code: 'DEVICE_LOCKED_OUT',
    error_retryable: false,
  });
  const err = await failure(client().post('/v2/send-command', {}));
  assert.equal(err.code, 'DEVICE_LOCKED_OUT');
  assert.equal(err.retryable, false);
});

test('when an accepted status comes back, then its body is returned', async () => {
  handler = json(503, { status: 'degraded' });
  const answer = await client().get('/healthcheck', { accept: [503] });
  assert.equal(answer.status, 503);
  assert.deepEqual(answer.body, { status: 'degraded' });
});

test('when the body is not JSON, then it is BAD_RESPONSE', async () => {
  handler = (_req, res) => res.writeHead(200).end('<html>');
  assert.equal((await failure(client().get('/x'))).code, 'BAD_RESPONSE');
});

test('when the API is silent past the timeout, then it is REQUEST_TIMEOUT', async () => {
  handler = () => undefined; // never answers
  const err = await failure(client({ timeoutMs: 100 }).post('/v2/send-command', {}));
  assert.equal(err.code, 'REQUEST_TIMEOUT');
  assert.equal(err.retryable, true);
  assert.match(err.message, /may still have been accepted/);
});

test('when nothing listens, then it is API_UNREACHABLE', async () => {
  const dead = new ApiClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k', timeoutMs: 500 });
  const err = await failure(dead.get('/healthcheck'));
  assert.equal(err.code, 'API_UNREACHABLE');
  assert.match(err.message, /ECONNREFUSED/);
});

test('when waiting, then a 503 in between is ridden out and the terminal record returned', async () => {
  const answers: Handler[] = [
    json(200, { job_id: 'j1', status: 'queued' }),
    json(503, { message: 'store down' }, { 'retry-after': '10' }),
    json(200, { job_id: 'j1', status: 'started' }),
    json(200, { job_id: 'j1', status: 'finished', results: { a: 'b' } }),
  ];
  handler = (req, res) => (answers.shift() ?? json(500, {}))(req, res);
  const statuses: string[] = [];
  const record = await waitForJob(client(), '/v2/send-command', 'j1', {
    pollIntervalMs: 10,
    jobTimeoutMs: 5_000,
    onStatus: (s) => statuses.push(s),
  });
  assert.equal(record.status, 'finished');
  assert.deepEqual(record['results'], { a: 'b' });
  assert.deepEqual(statuses, ['started', 'finished']);
  assert.equal(seen.at(-1)!.url, '/svc/v2/send-command/j1');
});

test('when the job outlives the wait, then JOB_WAIT_TIMEOUT carries the job id and last status', async () => {
  handler = json(200, { job_id: 'j2', status: 'started' });
  const err = await failure(
    waitForJob(client(), '/v2/send-command', 'j2', { pollIntervalMs: 20, jobTimeoutMs: 100 }),
  );
  assert.equal(err.code, 'JOB_WAIT_TIMEOUT');
  assert.equal(err.retryable, false);
  assert.equal(err.details.jobId, 'j2');
  assert.equal(err.details.jobStatus, 'started');
});

test('when a poll is refused (403), then the wait ends with that error and the job id', async () => {
  handler = json(403, { message: 'not yours' });
  const err = await failure(
    waitForJob(client(), '/v2/send-command', 'j3', { pollIntervalMs: 10, jobTimeoutMs: 1_000 }),
  );
  assert.equal(err.code, 'FORBIDDEN');
  assert.equal(err.details.jobId, 'j3');
});
