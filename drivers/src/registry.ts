import { PLATFORMS, type DriverDescription, type Platform } from '@svc/proto';
import { BUILTIN_DRIVERS } from './builtin-drivers.js';
import type { Driver } from './driver.js';
import { compileDriver } from './compile.js';

/** One compiled driver per built-in platform id; the type makes a missing one a compile error. */
export const DRIVERS: Readonly<Record<Platform, Driver>> = Object.fromEntries(
  PLATFORMS.map((p) => [p, compileDriver(BUILTIN_DRIVERS[p])]),
) as Record<Platform, Driver>;

/** Drivers from SVC_DRIVERS_DIR, installed at start by {@link installUserDrivers}. */
const userDrivers = new Map<string, { driver: Driver; description: DriverDescription }>();

/**
 * Installs validated user driver descriptions (replacing any installed before). The loader in
 * `@svc/proto` refuses built-in ids, so a user file never changes a built-in driver.
 */
export function installUserDrivers(descriptions: readonly DriverDescription[]): void {
  userDrivers.clear();
  for (const d of descriptions)
    userDrivers.set(d.platform, { driver: compileDriver(d), description: d });
}

/** The user driver descriptions installed, in file order. */
export function userDriverDescriptions(): DriverDescription[] {
  return [...userDrivers.values()].map((u) => u.description);
}

export function getDriver(platform: string): Driver | undefined {
  if (Object.hasOwn(DRIVERS, platform)) return DRIVERS[platform as Platform];
  return userDrivers.get(platform)?.driver;
}
