import { before, after, type TestContext } from 'node:test';
import { startDevice, type SimulatedDevice, type StartDeviceOptions } from '@svc/test/support';
import { NatsServerProcess } from '@svc/launcher';
import { NatsPublishFilter } from './nats-publish-filter.js';
import { startInProcessStack, waitHealthy, type InProcessStack } from './stack.js';
import { cleanupForTest, type TestCleanup } from './test-cleanup.js';

/** A NATS server, one simulated device and an in-process stack, shared by a file's tests. */
export interface DeviceStack {
  nats: NatsServerProcess;
  device: SimulatedDevice;
  stack: InProcessStack;
  /** Basic credentials of the device. */
  auth: { basic: { username: string; password: string } };
}

/**
 * Starts a DeviceStack before the file's tests (node:test `before`, at the file's top level)
 * and stops it after them. Its fields are set once `before` has run.
 */
export function deviceStackForFile(
  device: StartDeviceOptions,
  stack: Parameters<typeof startInProcessStack>[1] = {},
): DeviceStack {
  const lab = {} as Partial<DeviceStack>;
  before(async () => {
    lab.nats = await NatsServerProcess.start();
    lab.device = await startDevice(device);
    lab.auth = { basic: { username: lab.device.username, password: lab.device.password } };
    lab.stack = await startInProcessStack(lab.nats.url, stack);
    await waitHealthy(lab.stack.url);
  });
  after(async () => {
    await lab.stack?.stop();
    await lab.device?.stop();
    await lab.nats?.stop();
  });
  return lab as DeviceStack;
}

/** The settings of a test's stack, or how to make them from its device. */
export type StackOptionsOf = StackOptions | ((device: SimulatedDevice) => StackOptions);

type StackOptions = NonNullable<Parameters<typeof startInProcessStack>[1]>;

/** A DeviceStack of one test's own, stopped when that test ends. */
export interface TestDeviceStack extends DeviceStack {
  /**
   * Stops the stack, the device and NATS (strictly, as `cleanupForTest` without
   * `ignoreFailures`); the steps a test adds run before them, the newest first.
   */
  cleanup: TestCleanup;
}

/** A DeviceStack of one test's own (its own settings), stopped when that test ends. */
export async function deviceStackForTest(
  t: TestContext,
  device: StartDeviceOptions,
  stack: StackOptionsOf = {},
): Promise<TestDeviceStack> {
  const cleanup = cleanupForTest(t);
  const nats = cleanup.stopping(await NatsServerProcess.start());
  return labOf(cleanup, nats, device, (d) => optionsOf(stack, d));
}

/**
 * A DeviceStack of one test's own whose services named by `through` (`gateway`, `actor-0`, …)
 * reach NATS through a NatsPublishFilter (`filter`): their publishes to chosen subjects can be
 * dropped, as when the node they were sent to died.
 */
export async function filteredDeviceStackForTest(
  t: TestContext,
  device: StartDeviceOptions,
  through: (service: string) => boolean,
  stack: StackOptionsOf = {},
): Promise<TestDeviceStack & { filter: NatsPublishFilter }> {
  const cleanup = cleanupForTest(t);
  const nats = cleanup.stopping(await NatsServerProcess.start());
  const filter = cleanup.stopping(await NatsPublishFilter.start(nats.url));
  const lab = await labOf(cleanup, nats, device, (d) => ({
    ...optionsOf(stack, d),
    natsUrlOf: (service) => (through(service) ? filter.url : undefined),
  }));
  return { ...lab, filter };
}

function optionsOf(stack: StackOptionsOf, device: SimulatedDevice): StackOptions {
  return typeof stack === 'function' ? stack(device) : stack;
}

async function labOf(
  cleanup: TestCleanup,
  nats: NatsServerProcess,
  deviceOptions: StartDeviceOptions,
  stackOptions: (device: SimulatedDevice) => StackOptions,
): Promise<TestDeviceStack> {
  const device = cleanup.stopping(await startDevice(deviceOptions));
  const auth = { basic: { username: device.username, password: device.password } };
  const options = stackOptions(device);
  const stack = cleanup.stopping(await startInProcessStack(nats.url, options));
  // A stack without actor hosts never reports healthy (no workers); it serves all the same.
  if (options.actors !== 0) await waitHealthy(stack.url);
  return { nats, device, stack, auth, cleanup };
}
