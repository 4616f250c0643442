import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { CliError, ExitCode } from './exit-codes.js';

/** One device of a batch, in the API's device-entry shape (docs/batches.md). */
export interface InventoryDevice {
  host: string;
  port?: number;
  platform?: string;
  username?: string;
  password?: string;
  enable?: string;
  tags?: Record<string, string>;
}

/**
 * Platform names other tools use, mapped to ours: Ansible's `ansible_network_os` (short and
 * collection forms) and NAPALM's driver names, which Nornir inventories usually carry.
 */
const PLATFORM_ALIASES: Record<string, string> = {
  ios: 'cisco_ios',
  'cisco.ios.ios': 'cisco_ios',
  iosxe: 'cisco_xe',
  iosxr: 'cisco_xr',
  'cisco.iosxr.iosxr': 'cisco_xr',
  nxos: 'cisco_nxos',
  nxos_ssh: 'cisco_nxos',
  'cisco.nxos.nxos': 'cisco_nxos',
  asa: 'cisco_asa',
  'cisco.asa.asa': 'cisco_asa',
  eos: 'arista_eos',
  'arista.eos.eos': 'arista_eos',
  junos: 'juniper_junos',
  'junipernetworks.junos.junos': 'juniper_junos',
  'juniper.device': 'juniper_junos',
  aoscx: 'aruba_aoscx',
  'arubanetworks.aoscx.aoscx': 'aruba_aoscx',
  ce: 'huawei',
  'community.network.ce': 'huawei',
  fortios: 'fortinet',
  'fortinet.fortios.fortios': 'fortinet',
  panos: 'paloalto_panos',
  'paloaltonetworks.panos.panos': 'paloalto_panos',
  aruba: 'aruba_os',
  'community.network.aruba': 'aruba_os',
  ironware: 'brocade_netiron',
  'community.network.ironware': 'brocade_netiron',
  icx: 'ruckus_fastiron',
  'community.network.icx': 'ruckus_fastiron',
  edgeos: 'ubiquiti_edgerouter',
  'community.network.edgeos': 'ubiquiti_edgerouter',
  voss: 'avaya_vsp',
  'community.network.voss': 'avaya_vsp',
  // The community NAPALM driver for Nokia SR OS.
  sros: 'alcatel_sros',
};

export function normalizePlatform(name: string): string {
  const key = name.trim();
  return PLATFORM_ALIASES[key] ?? PLATFORM_ALIASES[key.toLowerCase()] ?? key;
}

/** Tag keys and values as the API takes them (SPEC limits). */
const TAG_RE = /^[A-Za-z0-9_:-]{1,64}$/;

function bad(source: string, msg: string): CliError {
  return new CliError(ExitCode.usage, `inventory ${source}: ${msg}`);
}

/** A YAML or CSV scalar as text; a list or mapping where a scalar belongs is no value. */
function scalar(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim();
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

function portOf(value: unknown, source: string, where: string): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const n = Number(scalar(value) ?? NaN);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    throw bad(source, `${where}: port ${JSON.stringify(value)} is not 1 to 65535`);
  }
  return n;
}

function str(value: unknown): string | undefined {
  const s = scalar(value);
  return s === '' ? undefined : s;
}

function device(
  fields: {
    host?: unknown;
    port?: unknown;
    platform?: unknown;
    username?: unknown;
    password?: unknown;
    enable?: unknown;
    tags?: Record<string, string>;
  },
  source: string,
  where: string,
): InventoryDevice {
  const host = str(fields.host);
  if (!host) throw bad(source, `${where}: no host`);
  const out: InventoryDevice = { host };
  const port = portOf(fields.port, source, where);
  if (port !== undefined) out.port = port;
  const platform = str(fields.platform);
  if (platform) out.platform = normalizePlatform(platform);
  for (const k of ['username', 'password', 'enable'] as const) {
    const v = str(fields[k]);
    if (v !== undefined) out[k] = v;
  }
  if (fields.tags && Object.keys(fields.tags).length > 0) out.tags = fields.tags;
  return out;
}

/** Splits one CSV line (RFC 4180 quoting; a quoted field may not span lines here). */
function csvFields(line: string, source: string, lineNo: number): string[] {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    let field = '';
    if (line[i] === '"') {
      i++;
      for (;;) {
        if (i >= line.length) throw bad(source, `line ${lineNo}: unterminated quote`);
        if (line[i] === '"') {
          if (line[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += line[i++];
      }
      if (i < line.length && line[i] !== ',')
        throw bad(source, `line ${lineNo}: text after a quote`);
    } else {
      const end = line.indexOf(',', i);
      field = end === -1 ? line.slice(i) : line.slice(i, end);
      i = end === -1 ? line.length : end;
    }
    out.push(field.trim());
    if (i >= line.length) return out;
    i++; // the comma
  }
}

const CSV_COLUMNS: Record<string, keyof InventoryDevice> = {
  host: 'host',
  hostname: 'host',
  ip: 'host',
  address: 'host',
  port: 'port',
  platform: 'platform',
  device_type: 'platform',
  username: 'username',
  password: 'password',
  enable: 'enable',
};

/**
 * CSV with a header row. Known columns: host (or hostname, ip, address), port, platform (or
 * device_type), username, password, enable; `name` is ignored; every other column becomes a tag
 * of that name (empty cells are left out). Blank lines and lines starting with `#` are skipped.
 */
export function parseCsvInventory(text: string, source: string): InventoryDevice[] {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  let header: string[] | null = null;
  const devices: InventoryDevice[] = [];
  for (const [idx, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const cells = csvFields(line, source, idx + 1);
    if (!header) {
      header = cells.map((c) => c.toLowerCase());
      if (!header.some((h) => CSV_COLUMNS[h] === 'host')) {
        throw bad(source, 'the header row needs a host (or hostname, ip, address) column');
      }
      continue;
    }
    const fields: Record<string, unknown> = {};
    const tags: Record<string, string> = {};
    for (const [i, name] of header.entries()) {
      const value = cells[i] ?? '';
      const known = CSV_COLUMNS[name];
      if (known) {
        if (fields[known] === undefined || fields[known] === '') fields[known] = value;
      } else if (name !== 'name' && value !== '') {
        if (!TAG_RE.test(name) || !TAG_RE.test(value)) {
          throw bad(
            source,
            `line ${idx + 1}: tag ${name}=${value} (letters, digits, - _ :, up to 64)`,
          );
        }
        tags[name] = value;
      }
    }
    devices.push(device({ ...fields, tags }, source, `line ${idx + 1}`));
  }
  return devices;
}

type Vars = Record<string, unknown>;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The device of an Ansible host from its merged variables (host vars over group vars). */
function ansibleDevice(name: string, vars: Vars, source: string): InventoryDevice {
  return device(
    {
      host: vars['ansible_host'] ?? vars['ansible_ssh_host'] ?? name,
      port: vars['ansible_port'] ?? vars['ansible_ssh_port'],
      platform: vars['svc_platform'] ?? vars['ansible_network_os'] ?? vars['platform'],
      username: vars['ansible_user'] ?? vars['ansible_ssh_user'],
      password: vars['ansible_password'] ?? vars['ansible_ssh_pass'],
      enable: vars['ansible_become_password'] ?? vars['ansible_become_pass'],
    },
    source,
    `host ${name}`,
  );
}

/**
 * The Ansible YAML inventory: `all` (or top-level groups) with `hosts`, `vars` and `children`,
 * group variables inherited by their hosts, a host listed in several groups taken once.
 * `group` keeps the hosts under that group only.
 */
export function parseAnsibleInventory(
  doc: unknown,
  source: string,
  group?: string,
): InventoryDevice[] {
  if (!isObject(doc)) throw bad(source, 'not a YAML mapping');
  const hosts = new Map<string, Vars>();
  let groupFound = group === undefined;
  const walk = (name: string, node: unknown, inherited: Vars, selected: boolean, depth: number) => {
    if (depth > 32) throw bad(source, 'groups nested too deep (a cycle?)');
    if (node === null || node === undefined) return;
    if (!isObject(node)) throw bad(source, `group ${name} is not a mapping`);
    const vars = { ...inherited, ...(isObject(node['vars']) ? node['vars'] : {}) };
    const inGroup = selected || name === group;
    if (name === group) groupFound = true;
    const groupHosts = node['hosts'];
    if (isObject(groupHosts) && inGroup) {
      for (const [host, hv] of Object.entries(groupHosts)) {
        const prev = hosts.get(host) ?? {};
        hosts.set(host, { ...vars, ...prev, ...(isObject(hv) ? hv : {}) });
      }
    }
    const children = node['children'];
    if (isObject(children)) {
      for (const [child, cn] of Object.entries(children)) walk(child, cn, vars, inGroup, depth + 1);
    }
  };
  for (const [name, node] of Object.entries(doc)) walk(name, node, {}, group === undefined, 0);
  if (!groupFound) throw bad(source, `no group ${group ?? ''}`);
  return [...hosts.entries()].map(([name, vars]) => ansibleDevice(name, vars, source));
}

/**
 * Nornir's SimpleInventory hosts file: `name: {hostname, port, platform, username, password,
 * groups, data}`. `connection_options.netmiko.extras.secret` is the enable secret, and
 * `data.tags` (a mapping) the tags. `group` keeps the hosts listing that group.
 */
export function parseNornirHosts(doc: unknown, source: string, group?: string): InventoryDevice[] {
  if (!isObject(doc)) throw bad(source, 'not a YAML mapping');
  const out: InventoryDevice[] = [];
  for (const [name, node] of Object.entries(doc)) {
    const h = isObject(node) ? node : {};
    const groups = Array.isArray(h['groups']) ? h['groups'].map(scalar) : [];
    if (group !== undefined && !groups.includes(group)) continue;
    const netmiko = (h['connection_options'] as Vars | undefined)?.['netmiko'];
    const extras = isObject(netmiko) && isObject(netmiko['extras']) ? netmiko['extras'] : {};
    const data = isObject(h['data']) ? h['data'] : {};
    const tags: Record<string, string> = {};
    if (isObject(data['tags'])) {
      for (const [k, v] of Object.entries(data['tags'])) {
        const text = scalar(v);
        if (text !== undefined) tags[k] = text;
      }
    }
    out.push(
      device(
        {
          host: h['hostname'] ?? name,
          port: h['port'],
          platform: h['platform'],
          username: h['username'],
          password: h['password'],
          enable: extras['secret'],
          tags,
        },
        source,
        `host ${name}`,
      ),
    );
  }
  return out;
}

/** An Ansible inventory has groups with hosts/children/vars; a Nornir one has host entries. */
function looksAnsible(doc: Record<string, unknown>): boolean {
  if ('all' in doc) return true;
  return Object.values(doc).some(
    (v) => isObject(v) && ('hosts' in v || 'children' in v) && !('hostname' in v),
  );
}

/**
 * The devices named by `--hosts`: `@FILE` reads an inventory (CSV by its `.csv` name, otherwise
 * YAML: Ansible or Nornir by shape), anything else is a comma-separated list of hosts.
 */
export function loadInventory(
  spec: string,
  options: { group?: string; cwd?: string } = {},
): InventoryDevice[] {
  let devices: InventoryDevice[];
  if (spec.startsWith('@')) {
    const path = spec.slice(1);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new CliError(ExitCode.usage, `inventory ${path}: ${(err as Error).message}`);
    }
    if (extname(path).toLowerCase() === '.csv') {
      if (options.group !== undefined) throw bad(path, '--group applies to YAML inventories');
      devices = parseCsvInventory(text, path);
    } else {
      let doc: unknown;
      try {
        doc = parseYaml(text);
      } catch (err) {
        throw bad(path, (err as Error).message);
      }
      if (!isObject(doc)) throw bad(path, 'not a YAML mapping (or a CSV file without .csv)');
      devices = looksAnsible(doc)
        ? parseAnsibleInventory(doc, path, options.group)
        : parseNornirHosts(doc, path, options.group);
    }
  } else {
    devices = spec
      .split(',')
      .map((h) => h.trim())
      .filter((h) => h !== '')
      .map((h) => parseHostPort(h));
  }
  if (devices.length === 0) throw new CliError(ExitCode.usage, `no devices in ${spec}`);
  return devices;
}

/** `host`, `host:port`, `[v6]:port` or a bare IPv6 address. */
export function parseHostPort(text: string): InventoryDevice {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (v6) {
    const port = portOf(v6[2], 'argument', text);
    return port === undefined ? { host: v6[1]! } : { host: v6[1]!, port };
  }
  const parts = text.split(':');
  if (parts.length === 2) {
    return { host: parts[0]!, port: portOf(parts[1], 'argument', text)! };
  }
  return { host: text };
}
