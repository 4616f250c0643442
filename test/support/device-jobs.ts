import type { DeviceJob } from '@svc/device-actor';
import type { SimulatedDevice } from './device-sim.js';

/** A device-layer job for a simulated device, with short timeouts; `over` changes any field. */
export function jobFor(dev: SimulatedDevice, over: Partial<DeviceJob> = {}): DeviceJob {
  return {
    jobId: `job-${Math.random().toString(16).slice(2)}`,
    kind: 'command',
    host: dev.host,
    address: over.address ?? over.host ?? dev.host,
    port: dev.port,
    platform: dev.platform,
    username: dev.username,
    password: dev.password,
    enable: dev.enable,
    commands: [],
    connTimeoutMs: 5000,
    readTimeoutMs: 5000,
    expectString: null,
    saveConfig: false,
    commit: false,
    textfsmTemplate: null,
    ttpTemplate: null,
    signal: new AbortController().signal,
    ...over,
  };
}
