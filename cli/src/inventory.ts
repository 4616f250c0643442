import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { parse as parseYaml } from 'yaml';
import { CliError, ExitCode } from './exit-codes.js';

/** One device of a batch, in the API's device-entry shape (docs/batches.md). */
export interface InventoryDevice {
  /** The device's name in the inventory (Ansible or Nornir host name, CSV `name`): shown with host and port in batch output. */
  name?: string;
  host: string;
  port?: number;
  platform?: string;
  username?: string;
  password?: string;
  enable?: string;
  tags?: Record<string, string>;
  /**
   * The host's own variables, for a config batch's template (only when asked for: see
   * `InventoryOptions.vars`): Ansible's group and host vars without its connection variables
   * (`ansible_*`, `svc_*`), Nornir's `data`. A CSV inventory has none.
   */
  vars?: Record<string, unknown>;
}

export interface InventoryOptions {
  /** Only the hosts of this group (YAML and INI inventories). */
  group?: string;
  /** Give each device its host vars (`InventoryDevice.vars`). Default false. */
  vars?: boolean;
}

/** Variables that say how to reach a host (and may be secrets): never template variables. */
const CONNECTION_VAR = /^(?:ansible|svc)_/;

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
    name?: unknown;
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
  const name = str(fields.name);
  const out: InventoryDevice = name !== undefined && name !== host ? { name, host } : { host };
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
 * device_type), username, password, enable, name (the device's name in batch output); every other column becomes a tag
 * of that name (empty cells are left out). Blank lines and lines starting with `#` are skipped.
 */
export function parseCsvInventory(text: string, source: string): InventoryDevice[] {
  let records: { record: string[]; info: { lines: number } }[];
  try {
    records = parseCsv(text, {
      bom: true,
      comment: '#',
      comment_no_infix: true,
      skip_empty_lines: true,
      trim: true,
      relax_column_count: true,
      // Files edited on several systems mix line ends.
      record_delimiter: ['\r\n', '\n', '\r'],
      info: true,
    }) as unknown as { record: string[]; info: { lines: number } }[];
  } catch (err) {
    const e = err as { code?: string; lines?: number; message: string };
    if (e.code === 'CSV_QUOTE_NOT_CLOSED') {
      throw bad(source, `line ${e.lines ?? '?'}: unterminated quote`);
    }
    throw bad(source, e.message);
  }
  let header: string[] | null = null;
  const devices: InventoryDevice[] = [];
  for (const { record: cells, info } of records) {
    // The line the record ends on (a quoted cell may span lines).
    const lineNo = info.lines;
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
      } else if (name === 'name') {
        fields['name'] = value;
      } else if (value !== '') {
        if (!TAG_RE.test(name) || !TAG_RE.test(value)) {
          throw bad(
            source,
            `line ${lineNo}: tag ${name}=${value} (letters, digits, - _ :, up to 64)`,
          );
        }
        tags[name] = value;
      }
    }
    devices.push(device({ ...fields, tags }, source, `line ${lineNo}`));
  }
  return devices;
}

type Vars = Record<string, unknown>;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A host's variables a template may use: every one but those saying how to reach it. */
function templateVars(vars: Vars): Vars {
  return Object.fromEntries(Object.entries(vars).filter(([k]) => !CONNECTION_VAR.test(k)));
}

/** The device of an Ansible host from its merged variables (host vars over group vars). */
function ansibleDevice(name: string, vars: Vars, source: string): InventoryDevice {
  return device(
    {
      name,
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

/** Ansible's groups as `ansible-inventory` builds them: hosts, vars and children by name. */
class AnsibleGroups {
  readonly groups = new Map<string, { hosts: string[]; vars: Vars; children: Set<string> }>();
  /** Host variables, and the order hosts were first seen in. */
  readonly hostVars = new Map<string, Vars>();

  constructor(private readonly source: string) {
    this.group('all');
    this.group('ungrouped');
  }

  group(name: string) {
    let g = this.groups.get(name);
    if (!g) {
      g = { hosts: [], vars: {}, children: new Set() };
      this.groups.set(name, g);
      if (name !== 'all') this.groups.get('all')?.children.add(name);
    }
    return g;
  }

  addHost(group: string, host: string, vars: Vars): void {
    const g = this.group(group);
    if (!g.hosts.includes(host)) g.hosts.push(host);
    this.hostVars.set(host, { ...(this.hostVars.get(host) ?? {}), ...vars });
  }

  addChild(parent: string, child: string): void {
    this.group(child);
    this.group(parent).children.add(child);
  }

  /** Each group's depth below `all` (the longest path, as Ansible counts it). */
  #depths(): Map<string, number> {
    const depth = new Map<string, number>([['all', 0]]);
    const visit = (name: string, d: number, path: Set<string>) => {
      if (path.has(name)) throw bad(this.source, `group ${name} is its own descendant`);
      if ((depth.get(name) ?? -1) >= d && name !== 'all') return;
      depth.set(name, d);
      const next = new Set(path).add(name);
      for (const c of this.groups.get(name)?.children ?? []) visit(c, d + 1, next);
    };
    visit('all', 0, new Set());
    return depth;
  }

  /**
   * The devices, hosts in the order first seen. A host's variables: its groups' and their
   * ancestors' vars, shallower groups first and by name within a depth (so a child group wins
   * over its parent), then its own. `only`: the hosts of that group and its descendants;
   * `withVars`: each device carries its variables but the connection ones.
   */
  devices(only?: string, withVars = false): InventoryDevice[] {
    if (only !== undefined && !this.groups.has(only)) throw bad(this.source, `no group ${only}`);
    const depth = this.#depths();
    const parents = new Map<string, string[]>();
    for (const [name, g] of this.groups) {
      for (const c of g.children) parents.set(c, [...(parents.get(c) ?? []), name]);
    }
    const ancestors = (name: string, out = new Set<string>()): Set<string> => {
      if (out.has(name)) return out;
      out.add(name);
      for (const p of parents.get(name) ?? []) ancestors(p, out);
      return out;
    };
    const out: InventoryDevice[] = [];
    for (const [host, own] of this.hostVars) {
      const direct = [...this.groups].filter(([, g]) => g.hosts.includes(host)).map(([n]) => n);
      const all = new Set<string>();
      for (const g of direct) ancestors(g, all);
      all.add('all');
      if (only !== undefined && !all.has(only)) continue;
      const ordered = [...all].sort(
        (a, b) => (depth.get(a) ?? 0) - (depth.get(b) ?? 0) || a.localeCompare(b),
      );
      const vars: Vars = {};
      for (const g of ordered) Object.assign(vars, this.groups.get(g)?.vars);
      const merged = { ...vars, ...own };
      const found = ansibleDevice(host, merged, this.source);
      if (withVars) found.vars = templateVars(merged);
      out.push(found);
    }
    return out;
  }
}

/**
 * The Ansible YAML inventory: top-level groups (usually `all`) with `hosts`, `vars` and
 * `children`; a group named in several places is one group (its hosts, vars and children
 * merged), as `ansible-inventory --list` reads it. `group` keeps the hosts under that group.
 */
export function parseAnsibleInventory(
  doc: unknown,
  source: string,
  group?: string,
  withVars = false,
): InventoryDevice[] {
  if (!isObject(doc)) throw bad(source, 'not a YAML mapping');
  const model = new AnsibleGroups(source);
  const walk = (name: string, node: unknown, depth: number) => {
    if (depth > 32) throw bad(source, 'groups nested too deep (a cycle?)');
    const g = model.group(name);
    if (node === null || node === undefined) return;
    if (!isObject(node)) throw bad(source, `group ${name} is not a mapping`);
    if (isObject(node['vars'])) Object.assign(g.vars, node['vars']);
    const groupHosts = node['hosts'];
    if (isObject(groupHosts)) {
      for (const [host, hv] of Object.entries(groupHosts)) {
        model.addHost(name, host, isObject(hv) ? hv : {});
      }
    }
    const children = node['children'];
    if (isObject(children)) {
      for (const [child, cn] of Object.entries(children)) {
        model.addChild(name, child);
        walk(child, cn, depth + 1);
      }
    }
  };
  for (const [name, node] of Object.entries(doc)) walk(name, node, 0);
  return model.devices(group, withVars);
}

/** One `key=value` token list of an INI host line or vars line (quotes as shlex reads them). */
function iniTokens(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote: string | null = null;
  let any = false;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = null;
      else cur += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      any = true;
    } else if (ch === '#') {
      break; // the rest is a comment
    } else if (/\s/.test(ch)) {
      if (cur !== '' || any) out.push(cur);
      cur = '';
      any = false;
    } else cur += ch;
  }
  if (cur !== '' || any) out.push(cur);
  return out;
}

/**
 * Ansible's INI inventory (its default format): host lines `name key=value …` before any
 * section (group `ungrouped`) or under `[group]`, `[group:vars]` with `key=value` lines,
 * `[group:children]` with group names; `;` and `#` start comments. Read as
 * `ansible-inventory --list` reads it (see AnsibleGroups). `group` keeps that group's hosts.
 */
export function parseAnsibleIniInventory(
  text: string,
  source: string,
  group?: string,
  withVars = false,
): InventoryDevice[] {
  const model = new AnsibleGroups(source);
  let section = 'ungrouped';
  let kind: 'hosts' | 'vars' | 'children' = 'hosts';
  for (const [idx, raw] of text
    .replace(/^\uFEFF/, '')
    .split(/\r?\n/)
    .entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[([^\]:]+)(?::(vars|children))?\]$/.exec(line);
    if (header) {
      section = header[1]!.trim();
      kind = (header[2] as 'vars' | 'children' | undefined) ?? 'hosts';
      model.group(section);
      continue;
    }
    if (line.startsWith('[')) throw bad(source, `line ${idx + 1}: bad section ${line}`);
    if (kind === 'children') {
      model.addChild(section, line.split(/\s+/)[0]!);
      continue;
    }
    if (kind === 'vars') {
      const eq = line.indexOf('=');
      if (eq <= 0) throw bad(source, `line ${idx + 1}: expected key=value`);
      const value = iniTokens(line.slice(eq + 1).trim());
      model.group(section).vars[line.slice(0, eq).trim()] = value.join(' ');
      continue;
    }
    const [host, ...pairs] = iniTokens(line);
    if (!host) continue;
    const vars: Vars = {};
    for (const pair of pairs) {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw bad(source, `line ${idx + 1}: ${pair} is not key=value`);
      vars[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
    model.addHost(section, host, vars);
  }
  return model.devices(group, withVars);
}

/**
 * Nornir's SimpleInventory hosts file: `name: {hostname, port, platform, username, password,
 * groups, data}`. `connection_options.netmiko.extras.secret` is the enable secret, and
 * `data.tags` (a mapping) the tags. `group` keeps the hosts listing that group.
 */
export function parseNornirHosts(
  doc: unknown,
  source: string,
  group?: string,
  withVars = false,
): InventoryDevice[] {
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
    const found = device(
      {
        name,
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
    );
    // Nornir's host data is what its templates read as the host's variables.
    if (withVars) found.vars = templateVars(data);
    out.push(found);
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
export function loadInventory(spec: string, options: InventoryOptions = {}): InventoryDevice[] {
  const withVars = options.vars === true;
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
    } else if (extname(path).toLowerCase() === '.ini') {
      devices = parseAnsibleIniInventory(text, path, options.group, withVars);
    } else {
      let doc: unknown;
      let yamlError: Error | null = null;
      try {
        doc = parseYaml(text);
      } catch (err) {
        yamlError = err as Error;
      }
      const yamlFile = ['.yml', '.yaml'].includes(extname(path).toLowerCase());
      if (isObject(doc)) {
        devices = looksAnsible(doc)
          ? parseAnsibleInventory(doc, path, options.group, withVars)
          : parseNornirHosts(doc, path, options.group, withVars);
      } else if (!yamlFile) {
        // Not a YAML mapping: Ansible's default INI format (files named `hosts`, `inventory`).
        devices = parseAnsibleIniInventory(text, path, options.group, withVars);
      } else {
        throw bad(path, yamlError?.message ?? 'not a YAML mapping');
      }
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
