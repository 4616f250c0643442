// A batch whose jobs never run (context `idle`: no actor host serves it) and a client of its SSE
// stream: what the batch stream's tests need to hold a stream open and end it when they choose
// (by cancelling the batch).
import assert from 'node:assert/strict';
import { EventSource } from 'eventsource';
import { http } from './http-client.js';
import { waitUntil } from './wait.js';

/** The stack's settings for `postIdleBatch`: jobs of context `idle` stay queued. */
export const IDLE_CONTEXT_ENV = { SVC_CONTEXTS: 'default,idle', WORKER_CONTEXTS: 'default' };

/** The test stack's operator (basic auth). */
export const OPERATOR = { basic: { username: 'operator', password: 'device-secret' } };

/** POSTs a `show version` batch of context `idle` over loopback `ports`; its id and job ids. */
export async function postIdleBatch(
  url: string,
  ports: readonly number[],
): Promise<{ batchId: string; jobIds: string[] }> {
  const created = await http('POST', `${url}/v2/batches`, {
    ...OPERATOR,
    body: {
      kind: 'command',
      context: 'idle',
      platform: 'cisco_ios',
      commands: ['show version'],
      devices: ports.map((port) => ({ host: '127.0.0.1', port })),
    },
  });
  assert.equal(created.status, 202, created.text);
  return {
    batchId: created.json.batch_id as string,
    jobIds: (created.json.jobs as { job_id: string }[]).map((j) => j.job_id),
  };
}

/** POSTs a `show version` batch of the one simulated `device` (as `as`); its id. */
export async function postDeviceBatch(
  url: string,
  device: { host: string; port: number; enable?: string },
  as: { basic: { username: string; password: string } },
): Promise<string> {
  const created = await http('POST', `${url}/v2/batches`, {
    ...as,
    body: {
      kind: 'command',
      platform: 'cisco_ios',
      ...(device.enable !== undefined ? { enable: device.enable } : {}),
      commands: ['show version'],
      devices: [{ host: device.host, port: device.port }],
    },
  });
  assert.equal(created.status, 202, created.text);
  return created.json.batch_id as string;
}

/** One event a batch stream's client received. */
export interface ReceivedBatchEvent {
  event: 'job' | 'summary';
  id: string;
  status?: string;
  job_id?: string;
}

/** An EventSource client (the `eventsource` package) of a batch's stream (as the operator). */
export function followBatchStream(
  url: string,
  batchId: string,
  as: { basic: { username: string; password: string } } = OPERATOR,
): {
  events: ReceivedBatchEvent[];
  opened: () => number;
  close: () => void;
  /** Waits for the stream's summary (`what` names the wait in a timeout's message). */
  untilSummary: (what?: string) => Promise<void>;
} {
  const events: ReceivedBatchEvent[] = [];
  let opened = 0;
  const { username, password } = as.basic;
  const authorization = 'Basic ' + Buffer.from(`${username}:${password}`).toString('base64');
  const es = new EventSource(`${url}/v2/batches/${batchId}/stream`, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, authorization } }),
  });
  es.addEventListener('open', () => opened++);
  for (const name of ['job', 'summary'] as const) {
    es.addEventListener(name, (e) => {
      const data = JSON.parse(e.data) as { status?: string; job_id?: string };
      events.push({
        event: name,
        id: e.lastEventId,
        ...(data.status !== undefined ? { status: data.status } : {}),
        ...(data.job_id !== undefined ? { job_id: data.job_id } : {}),
      });
    });
  }
  const untilSummary = async (what = 'the summary') => {
    await waitUntil(
      () => events.some((e) => e.event === 'summary'),
      `${what} (events so far: ${JSON.stringify(events)})`,
      { timeoutMs: 60_000, everyMs: 100 },
    );
  };
  return { events, opened: () => opened, close: () => es.close(), untilSummary };
}
