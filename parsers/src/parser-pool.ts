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
  /**
   * Budget of one parse in milliseconds, time waiting for a worker included (worker start-up
   * excluded). Default: 5000.
   */
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
  /** Who asked (the job's owner): no caller holds more than half the workers while others wait. */
  caller: string;
  enqueuedAt: number;
  /** Rejects the job when its budget runs out while it waits for a worker. */
  waitTimer: NodeJS.Timeout | undefined;
  /** What is left of the budget once a worker takes it. */
  budgetMs: number;
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

  /**
   * Runs a request in a worker for `caller`. Rejects with a PARSE_TIMEOUT {@link TemplateError}
   * when waiting plus parsing overruns the budget.
   */
  run(request: ParseRequest, caller = ''): Promise<unknown> {
    if (this.#closed) {
      return Promise.reject(
        new TemplateError('Parser pool is closed.', { code: ParserErrorCode.WorkerFailed }),
      );
    }
    return new Promise((resolve, reject) => {
      const job: Job = {
        id: this.#nextId++,
        request,
        caller,
        enqueuedAt: Date.now(),
        waitTimer: undefined,
        budgetMs: this.timeoutMs,
        resolve,
        reject,
      };
      job.waitTimer = setTimeout(() => {
        const i = this.#queue.indexOf(job);
        if (i < 0) return;
        this.#queue.splice(i, 1);
        reject(
          new TemplateError(
            `Parse waited ${this.timeoutMs} ms for a parser worker (its whole budget); the host's parsers are busy.`,
            { code: ParserErrorCode.Timeout },
          ),
        );
      }, this.timeoutMs);
      this.#queue.push(job);
      this.#dispatch();
    });
  }

  /** Terminates the workers; queued and running parses reject with WORKER_FAILED. */
  async close(): Promise<void> {
    this.#closed = true;
    const closed = new TemplateError('Parser pool closed.', { code: ParserErrorCode.WorkerFailed });
    for (const job of this.#queue.splice(0)) {
      clearTimeout(job.waitTimer);
      job.reject(closed);
    }
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
      const job = this.#queue.splice(this.#next(), 1)[0] as Job;
      this.#start(slot, job);
    }
  }

  /**
   * The queue index to run next: the first job whose caller holds less than half the workers,
   * or whose caller is the only one waiting; else the job of the caller holding the fewest.
   */
  #next(): number {
    const half = Math.max(1, Math.floor(this.size / 2));
    const held = (caller: string) => this.#slots.filter((s) => s.job?.caller === caller).length;
    const fair = this.#queue.findIndex(
      (j) => held(j.caller) < half || this.#queue.every((o) => o.caller === j.caller),
    );
    if (fair >= 0) return fair;
    let best = 0;
    for (let i = 1; i < this.#queue.length; i++) {
      if (held(this.#queue[i]!.caller) < held(this.#queue[best]!.caller)) best = i;
    }
    return best;
  }

  #start(slot: Slot, job: Job): void {
    clearTimeout(job.waitTimer);
    job.budgetMs = Math.max(1, this.timeoutMs - (Date.now() - job.enqueuedAt));
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
          `Parse exceeded its ${this.timeoutMs} ms budget (time waiting for a worker included); the template may backtrack catastrophically on this input.`,
          {
            code: ParserErrorCode.Timeout,
          },
        ),
      );
    }, job.budgetMs);
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
