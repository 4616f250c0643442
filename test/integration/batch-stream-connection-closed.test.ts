// A batch stream (`GET /v2/batches/{id}/stream`) whose feed ended tried to open it again every
// 500 ms, whatever ended it: with its gateway's NATS connection closed, it went on trying (a
// warning each time) and held the client until SSE_TIMEOUT (5 minutes by default), with nothing
// to send. It now ends at once, as a job stream's watch does, and the client reconnects (to a
// gateway that has a connection).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  IDLE_CONTEXT_ENV,
  NatsServerProcess,
  OPERATOR,
  postIdleBatch,
  startInProcessStack,
  waitHealthy,
  waitUntil,
} from '../harness/mod.js';

test("when a batch stream's gateway loses its NATS connection for good, then the stream ends instead of trying again until SSE_TIMEOUT", async (t) => {
  const nats = await NatsServerProcess.start();
  const stack = await startInProcessStack(nats.url, {
    env: { ...IDLE_CONTEXT_ENV, SSE_TIMEOUT: '300' },
  });
  const stream = new AbortController();
  t.after(async () => {
    stream.abort();
    await stack.stop();
    await nats.stop();
  });
  await waitHealthy(stack.url, 30_000);
  const { batchId } = await postIdleBatch(stack.url, [2201]);

  // A plain reader, not an EventSource: this test watches the one HTTP answer end.
  const { username, password } = OPERATOR.basic;
  const answer = await fetch(`${stack.url}/v2/batches/${batchId}/stream`, {
    headers: {
      authorization: 'Basic ' + Buffer.from(`${username}:${password}`).toString('base64'),
    },
    signal: stream.signal,
  });
  assert.equal(answer.status, 200);
  let text = '';
  let ended = false;
  void (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of answer.body!) text += decoder.decode(chunk as Uint8Array);
      ended = true;
    } catch {
      // Aborted by the teardown.
    }
  })();
  await waitUntil(() => text.includes('"queued"'), "the job's queued event");

  // The gateway's connection is the stack's last one.
  const gatewayConnection = stack.connections.at(-1)!;
  await gatewayConnection.close();
  await waitUntil(() => ended, `the stream ended, well before SSE_TIMEOUT (so far: ${text})`, {
    timeoutMs: 20_000,
  });
  // It ended without a summary: the batch still runs, the client reconnects elsewhere.
  assert.ok(!text.includes('event: summary'), text);
});
