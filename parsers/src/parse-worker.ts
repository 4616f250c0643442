/** Worker-thread entry of {@link ParserPool}: runs one request per message. */
import { parentPort } from 'node:worker_threads';
import { errorToData } from './errors.js';
import { executeParseRequest, type ParseRequest } from './parse-request.js';
import type { WorkerReply } from './parser-pool.js';

const port = parentPort;
if (port === null) throw new Error('parse-worker must run in a worker thread');

port.on('message', (message: { id: number; request: ParseRequest }) => {
  let reply: WorkerReply;
  try {
    reply = { id: message.id, ok: true, result: executeParseRequest(message.request) };
  } catch (err) {
    reply = { id: message.id, ok: false, error: errorToData(err) };
  }
  port.postMessage(reply);
});
// Modules are loaded: from here on the pool counts a parse's budget.
port.postMessage({ ready: true } satisfies WorkerReply);
