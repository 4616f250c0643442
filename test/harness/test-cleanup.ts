import type { TestContext } from 'node:test';

/** What undoes a test's set-up, run as the test ends: the newest step first. */
export interface TestCleanup {
  /** Adds a step (most often: stop what was just started). */
  push(step: () => unknown): void;
  /** Adds a step stopping `running`, and returns `running`. */
  stopping<T extends { stop(): Promise<unknown> }>(running: T): T;
}

/**
 * A TestCleanup run by `t.after`. Newest first, because each step may rely on what was set up
 * before it (a host stopping without NATS waits on its timeouts). A step that fails ends the
 * clean-up with its error, unless `ignoreFailures`: then the older steps still run (for tests
 * that stop some of what they started themselves, or cut it off from NATS).
 */
export function cleanupForTest(
  t: TestContext,
  options: { ignoreFailures?: boolean } = {},
): TestCleanup {
  const steps: (() => unknown)[] = [];
  t.after(async () => {
    for (const step of steps.reverse()) {
      try {
        await step();
      } catch (e) {
        if (!options.ignoreFailures) throw e;
      }
    }
  });
  return {
    push(step) {
      steps.push(step);
    },
    stopping(running) {
      steps.push(() => running.stop());
      return running;
    },
  };
}
