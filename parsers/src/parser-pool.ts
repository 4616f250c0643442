/**
 * A small worker-thread pool bounding parse time. A JavaScript regex cannot be interrupted,
 * and some community templates backtrack catastrophically on some inputs, so each parse runs
 * in a worker; one that overruns its budget is terminated and replaced.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { errorFromData, ParserErrorCode, TemplateError, type ErrorData } from './errors.js';
import type { ParseRequest } from './parse-request.js';

export interface ParserPoolOptions {
  /** Worker threads, started on demand. Default: `min(4, availableParallelism())`. */
  size?: number;
  /** Budget of one parse in milliseconds, queueing excluded. Default: 5000. */
  timeoutMs?: number;
}

/** @internal Message from a worker: a parse's answer, or `ready` once its modules are loaded. */
export type WorkerReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: ErrorData }
  | { ready: true };

interface Job {
  id: number;
  request: ParseRequest;
  resolve: (value: unknown) => void;
  reject: (reason: Error) => void;
}

interface Slot {
  worker: Worker;
  job: Job | undefined;
  timer: NodeJS.Timeout | undefined;
  /** The worker has loaded its modules; a job's budget starts only then. */
  ready: boolean;
}

const WORKER_URL = new URL('./parse-worker.js', import.meta.url);

export class ParserPool {
  readonly size: number;
  readonly timeoutMs: number;
  readonly #slots: Slot[] = [];
  readonly #queue: Job[] = [];
  #nextId = 1;
  #closed = false;

  constructor(options: ParserPoolOptions = {}) {
    const size = options.size ?? Math.min(4, availableParallelism());
    const timeoutMs = options.timeoutMs ?? 5000;
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`ParserPool size must be a positive integer, got ${size}`);
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      throw new RangeError(`ParserPool timeoutMs must be a positive number, got ${timeoutMs}`);
    }
    this.size = size;
    this.timeoutMs = timeoutMs;
  }

  /** Runs a request in a worker. Rejects with a PARSE_TIMEOUT {@link TemplateError} on overrun. */
  run(request: ParseRequest): Promise<unknown> {
    if (this.#closed) {
      return Promise.reject(
        new TemplateError('Parser pool is closed.', { code: ParserErrorCode.WorkerFailed }),
      );
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ id: this.#nextId++, request, resolve, reject });
      this.#dispatch();
    });
  }

  /** Terminates the workers; queued and running parses reject with WORKER_FAILED. */
  async close(): Promise<void> {
    this.#closed = true;
    const closed = new TemplateError('Parser pool closed.', { code: ParserErrorCode.WorkerFailed });
    for (const job of this.#queue.splice(0)) job.reject(closed);
    const slots = this.#slots.splice(0);
    for (const slot of slots) {
      clearTimeout(slot.timer);
      slot.job?.reject(closed);
      slot.job = undefined;
    }
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let slot = this.#slots.find((s) => s.job === undefined);
      if (slot === undefined) {
        if (this.#slots.length >= this.size) return;
        slot = this.#spawn();
      }
      const job = this.#queue.shift() as Job;
      this.#start(slot, job);
    }
  }

  #start(slot: Slot, job: Job): void {
    slot.job = job;
    // The worker queues the message until it has booted; the budget is the parse's own.
    slot.worker.postMessage({ id: job.id, request: job.request });
    if (slot.ready) this.#arm(slot, job);
  }

  #arm(slot: Slot, job: Job): void {
    slot.timer = setTimeout(() => {
      this.#replace(slot);
      job.reject(
        new TemplateError(
          `Parse exceeded its ${this.timeoutMs} ms budget; the template may backtrack catastrophically on this input.`,
          {
            code: ParserErrorCode.Timeout,
          },
        ),
      );
    }, this.timeoutMs);
  }

  #spawn(): Slot {
    // Idle workers must not keep the process alive; a running job's timer does.
    const worker = new Worker(WORKER_URL);
    worker.unref();
    const slot: Slot = { worker, job: undefined, timer: undefined, ready: false };
    worker.on('message', (reply: WorkerReply) => {
      if ('ready' in reply) {
        slot.ready = true;
        if (slot.job !== undefined) this.#arm(slot, slot.job);
        return;
      }
      const job = slot.job;
      if (job === undefined || job.id !== reply.id) return;
      clearTimeout(slot.timer);
      slot.job = undefined;
      if (reply.ok) job.resolve(reply.result);
      else job.reject(errorFromData(reply.error));
      this.#dispatch();
    });
    const fail = (reason: string): void => {
      if (!this.#slots.includes(slot)) return;
      const job = slot.job;
      this.#replace(slot);
      job?.reject(
        new TemplateError(`Parse worker failed: ${reason}`, { code: ParserErrorCode.WorkerFailed }),
      );
    };
    worker.on('error', (err) => fail(err.message));
    worker.on('exit', (code) => fail(`exited with code ${code}`));
    this.#slots.push(slot);
    return slot;
  }

  /** Drops a slot (terminating its worker) and lets the queue spawn a fresh one. */
  #replace(slot: Slot): void {
    clearTimeout(slot.timer);
    slot.job = undefined;
    const i = this.#slots.indexOf(slot);
    if (i >= 0) this.#slots.splice(i, 1);
    void slot.worker.terminate();
    if (!this.#closed) this.#dispatch();
  }
}
