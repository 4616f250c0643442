import { before, after, type TestContext } from 'node:test';
import { startDevice, type SimulatedDevice, type StartDeviceOptions } from '@svc/test/support';
import { NatsServerProcess } from '@svc/launcher';
import { NatsPublishFilter } from './nats-publish-filter.js';
import { startInProcessStack, waitHealthy, type InProcessStack } from './stack.js';

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

/** A DeviceStack of one test's own (its own settings), stopped when that test ends. */
export async function deviceStackForTest(
  t: TestContext,
  device: StartDeviceOptions,
  stack: Parameters<typeof startInProcessStack>[1] = {},
): Promise<DeviceStack> {
  const nats = await NatsServerProcess.start();
  return labOf(t, nats, device, stack, () => Promise.resolve());
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
  stack: Parameters<typeof startInProcessStack>[1] = {},
): Promise<DeviceStack & { filter: NatsPublishFilter }> {
  const nats = await NatsServerProcess.start();
  const filter = await NatsPublishFilter.start(nats.url);
  const lab = await labOf(
    t,
    nats,
    device,
    { ...stack, natsUrlOf: (service) => (through(service) ? filter.url : undefined) },
    () => filter.stop(),
  );
  return { ...lab, filter };
}

async function labOf(
  t: TestContext,
  nats: NatsServerProcess,
  device: StartDeviceOptions,
  stack: Parameters<typeof startInProcessStack>[1],
  stopBeforeNats: () => Promise<void>,
): Promise<DeviceStack> {
  const lab: Partial<DeviceStack> = { nats };
  t.after(async () => {
    await lab.stack?.stop();
    await lab.device?.stop();
    await stopBeforeNats();
    await nats.stop();
  });
  lab.device = await startDevice(device);
  lab.auth = { basic: { username: lab.device.username, password: lab.device.password } };
  lab.stack = await startInProcessStack(nats.url, stack);
  // A stack without actor hosts never reports healthy (no workers); it serves all the same.
  if (stack?.actors !== 0) await waitHealthy(lab.stack.url);
  return lab as DeviceStack;
}
