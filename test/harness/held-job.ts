import type { Faults, SimulatedDevice } from '@svc/test/support';
import { waitUntil } from './wait.js';

/**
 * Sets `faults` on the device (a `hang` or `hold` matching `command`), submits `command` and
 * waits until the device has received it: the job is running there, its command unanswered,
 * and the device's jobs submitted after it wait behind it. `reached` names the wait. Resolves
 * with the job's id.
 */
export async function submitHeldJob(
  device: SimulatedDevice,
  faults: Faults,
  command: string,
  submit: (command: string) => Promise<string>,
  reached = 'the first job to reach the device',
): Promise<string> {
  await device.setFaults(faults);
  const id = await submit(command);
  await waitUntil(() => device.stats.commands.some((c) => c.command === command), reached);
  return id;
}
