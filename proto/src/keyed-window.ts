/**
 * Runs tasks concurrently, at most `limit` at once, except that tasks of one key run one after
 * the other in the order they were given (a device's jobs are placed in stream order while other
 * devices' placements overlap theirs).
 */
export class KeyedWindow {
  readonly #running = new Set<Promise<void>>();
  readonly #lastOfKey = new Map<string, Promise<void>>();

  constructor(
    private readonly limit: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Starts `task` after the previous task of `key`; resolves once the window has room again. */
  async add(key: string, task: () => Promise<void>): Promise<void> {
    const before = this.#lastOfKey.get(key) ?? Promise.resolve();
    const done: Promise<void> = before
      .then(task)
      .catch(this.onError)
      .finally(() => {
        this.#running.delete(done);
        if (this.#lastOfKey.get(key) === done) this.#lastOfKey.delete(key);
      });
    this.#running.add(done);
    this.#lastOfKey.set(key, done);
    while (this.#running.size >= this.limit) await Promise.race(this.#running);
  }

  /** Tasks given and not yet ended. */
  get size(): number {
    return this.#running.size;
  }

  /** Resolves when every task given so far has ended. */
  async drain(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }
}
