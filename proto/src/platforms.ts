/**
 * Device platform identifiers, the same names as the Python device-driver library operators
 * already use. The gateway rejects any other value; the device actor has a driver for each.
 */
export const PLATFORMS = [
  'cisco_ios',
  'cisco_xe',
  'cisco_xr',
  'cisco_nxos',
  'cisco_asa',
  'arista_eos',
  'juniper_junos',
  'hp_procurve',
  'aruba_aoscx',
  'huawei',
  'fortinet',
  'paloalto_panos',
  'linux',
  'huawei_vrpv8',
  'hp_comware',
  'dell_force10',
  'ubiquiti_edgeswitch',
  'extreme_exos',
  'vyos',
  'mikrotik_routeros',
  'broadcom_icos',
  'brocade_netiron',
  'brocade_fastiron',
  'ruckus_fastiron',
  'eltex',
  'dlink_ds',
  'allied_telesis_awplus',
  'avaya_vsp',
  'aruba_os',
  'ipinfusion_ocnos',
  'ericsson_ipos',
  'alcatel_aos',
  'zyxel_os',
  'juniper_screenos',
  'checkpoint_gaia',
  'ciena_saos',
  'yamaha',
  'ubiquiti_edgerouter',
  'cisco_ftd',
  'alcatel_sros',
  'cisco_s300',
  'dell_powerconnect',
  'avaya_ers',
  'huawei_smartax',
] as const;
export type Platform = (typeof PLATFORMS)[number];

/** Fingerprints the device over a separate session and picks the platform. */
export const AUTODETECT = 'autodetect';

export const DEFAULT_PLATFORM: Platform = 'cisco_ios';

export function isPlatform(value: string): value is Platform {
  return (PLATFORMS as readonly string[]).includes(value);
}
