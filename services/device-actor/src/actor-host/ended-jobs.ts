/**
 * The jobs this host saw end lately, bounded (the oldest forgotten first). A device's next job
 * names the one placed before it (`Headers.after`), which almost always ended here: keeping a
 * device's order then costs no read of the store.
 */
export class EndedJobs {
  readonly #ids = new Set<string>();

  /**
   * 32k ids (≈ 3 MiB): at 500 jobs/s a device's previous job is still known a minute later, so a
   * fleet of thousands of devices with a job each every few seconds costs no read.
   */
  constructor(private readonly limit = 32_768) {}

  add(jobId: string): void {
    this.#ids.delete(jobId);
    this.#ids.add(jobId);
    if (this.#ids.size > this.limit) this.#ids.delete(this.#ids.values().next().value!);
  }

  has(jobId: string): boolean {
    return this.#ids.has(jobId);
  }
}
