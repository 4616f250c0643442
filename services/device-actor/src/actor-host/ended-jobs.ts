/**
 * The jobs this host saw end lately, bounded (the oldest forgotten first). A device's next job
 * names the one placed before it (`Headers.after`), which almost always ended here: keeping a
 * device's order then costs no read of the store.
 */
export class EndedJobs {
  readonly #ids = new Set<string>();

  constructor(private readonly limit = 4096) {}

  add(jobId: string): void {
    this.#ids.delete(jobId);
    this.#ids.add(jobId);
    if (this.#ids.size > this.limit) this.#ids.delete(this.#ids.values().next().value!);
  }

  has(jobId: string): boolean {
    return this.#ids.has(jobId);
  }
}
