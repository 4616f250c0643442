/**
 * Resolves when `work` does or after `ms`, whichever comes first: a wait bounded by a grace (a
 * scrape's catch-up, a stopping host's running jobs). The timer is cleared, so that it never
 * holds the process open past the wait.
 */
export async function withinMs(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
