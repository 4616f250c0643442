/** Runs `fn` again through store outages (a cluster electing a leader) for up to `forMs`. */
export async function retryTransient<T>(fn: () => Promise<T>, forMs = 30_000): Promise<T> {
  const deadline = Date.now() + forMs;
  for (let pause = 100; ; pause = Math.min(pause * 2, 2000)) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}
