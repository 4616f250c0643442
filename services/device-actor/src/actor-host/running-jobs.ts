/**
 * The jobs running now on a host, by id: what a cancel or a shutdown aborts. A stopping host
 * waits for it to empty (`whenEmpty`), told by the job that ends last rather than by polling.
 */
export class RunningJobs {
  readonly #jobs = new Map<string, AbortController>();
  readonly #emptied: (() => void)[] = [];

  get size(): number {
    return this.#jobs.size;
  }

  get(jobId: string): AbortController | undefined {
    return this.#jobs.get(jobId);
  }

  has(jobId: string): boolean {
    return this.#jobs.has(jobId);
  }

  set(jobId: string, controller: AbortController): void {
    this.#jobs.set(jobId, controller);
  }

  delete(jobId: string): void {
    if (!this.#jobs.delete(jobId) || this.#jobs.size > 0) return;
    for (const resolve of this.#emptied.splice(0)) resolve();
  }

  values(): IterableIterator<AbortController> {
    return this.#jobs.values();
  }

  /** Resolves once no job runs (at once when none does). */
  whenEmpty(): Promise<void> {
    if (this.#jobs.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#emptied.push(resolve));
  }
}
