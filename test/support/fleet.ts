import { startDevice, type Faults, type SimulatedDevice } from './device-sim.js';

export interface StartFleetOptions {
  count: number;
  /** Default cisco_ios. */
  platform?: string;
  commandLatencyMs?: number;
  faults?: Faults;
  username?: string;
  password?: string;
  enable?: string;
  /** Devices started at once; keeps a 1000-device fleet from opening 1000 listeners in one tick. Default 50. */
  concurrency?: number;
}

export interface Fleet {
  devices: SimulatedDevice[];
  stop(): Promise<void>;
}

/**
 * Starts `count` simulated devices, hostnames R1..Rn, each with its own host key (a shared key
 * would make them one device to the service's guards).
 */
export async function startFleet(options: StartFleetOptions): Promise<Fleet> {
  const devices: SimulatedDevice[] = [];
  const concurrency = options.concurrency ?? 50;
  const stop = async (): Promise<void> => {
    await Promise.all(devices.map((d) => d.stop()));
  };
  try {
    for (let i = 0; i < options.count; i += concurrency) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(concurrency, options.count - i) }, (_, j) =>
          startDevice({
            platform: options.platform ?? 'cisco_ios',
            hostname: `R${i + j + 1}`,
            ...(options.commandLatencyMs !== undefined
              ? { commandLatencyMs: options.commandLatencyMs }
              : {}),
            ...(options.faults !== undefined ? { faults: options.faults } : {}),
            ...(options.username !== undefined ? { username: options.username } : {}),
            ...(options.password !== undefined ? { password: options.password } : {}),
            ...(options.enable !== undefined ? { enable: options.enable } : {}),
          }),
        ),
      );
      devices.push(...batch);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { devices, stop };
}
