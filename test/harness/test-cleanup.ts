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
 * before it (a host stopping without NATS waits on its timeouts). Every step runs even when one
 * fails (a failed stop must not leave a nats-server behind); the first failure then fails the
 * test, unless `ignoreFailures` (for tests that stop some of what they started themselves, or
 * cut it off from NATS).
 */
export function cleanupForTest(
  t: TestContext,
  options: { ignoreFailures?: boolean } = {},
): TestCleanup {
  const steps: (() => unknown)[] = [];
  t.after(async () => {
    const failures: unknown[] = [];
    for (const step of steps.reverse()) {
      try {
        await step();
      } catch (e) {
        failures.push(e);
      }
    }
    if (failures.length > 0 && !options.ignoreFailures) throw failures[0];
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
