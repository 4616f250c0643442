import { isPlatform, type Platform } from '@svc/proto';
import type { Driver } from './driver.js';
import { ciscoAsa, ciscoIos, ciscoNxos, ciscoXe, ciscoXr } from './cisco.js';
import { aristaEos } from './arista-eos.js';
import { juniperJunos } from './juniper-junos.js';
import { hpProcurve } from './hp-procurve.js';
import { arubaAoscx } from './aruba-aoscx.js';
import { huawei } from './huawei.js';
import { fortinet } from './fortinet.js';
import { paloaltoPanos } from './paloalto-panos.js';
import { linux } from './linux.js';

/** One driver per platform id of `PLATFORMS`; the type makes a missing one a compile error. */
export const DRIVERS: Readonly<Record<Platform, Driver>> = {
  cisco_ios: ciscoIos,
  cisco_xe: ciscoXe,
  cisco_xr: ciscoXr,
  cisco_nxos: ciscoNxos,
  cisco_asa: ciscoAsa,
  arista_eos: aristaEos,
  juniper_junos: juniperJunos,
  hp_procurve: hpProcurve,
  aruba_aoscx: arubaAoscx,
  huawei,
  fortinet,
  paloalto_panos: paloaltoPanos,
  linux,
};

export function getDriver(platform: string): Driver | undefined {
  return isPlatform(platform) ? DRIVERS[platform] : undefined;
}
