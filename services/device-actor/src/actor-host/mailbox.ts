/**
 * A device's queue of jobs. Jobs run in arrival order, at most `limit` at a time (1 by
 * default: one session per device).
 */
export class Mailbox<T> {
  readonly #queue: T[] = [];
  #running = 0;
  readonly #idle: (() => void)[] = [];

  constructor(
    private readonly limit: number,
    private readonly run: (item: T) => Promise<void>,
    private readonly onIdle: () => void,
  ) {}

  get waiting(): readonly T[] {
    return this.#queue;
  }

  get running(): number {
    return this.#running;
  }

  push(item: T): void {
    this.#queue.push(item);
    this.#pump();
  }

  /** Resolves once no item runs (at once when none does). */
  whenIdle(): Promise<void> {
    if (this.#running === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Removes and returns the jobs that have not started. */
  takeWaiting(): T[] {
    return this.#queue.splice(0);
  }

  #pump(): void {
    while (this.#running < this.limit && this.#queue.length > 0) {
      const item = this.#queue.shift()!;
      this.#running++;
      void this.run(item).finally(() => {
        this.#running--;
        if (this.#running === 0 && this.#queue.length === 0) {
          this.onIdle();
          for (const resolve of this.#idle.splice(0)) resolve();
        } else this.#pump();
      });
    }
  }
}

/** Counts sessions across all devices of a host (ACTOR_MAX_SESSIONS). */
export class Semaphore {
  #used = 0;
  readonly #waiters: (() => void)[] = [];

  constructor(private readonly size: number) {}

  get inUse(): number {
    return this.#used;
  }

  async acquire(): Promise<void> {
    if (this.#used < this.size) {
      this.#used++;
      return;
    }
    // The releasing holder hands its slot over directly, so #used stays the same.
    await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#used--;
  }
}
