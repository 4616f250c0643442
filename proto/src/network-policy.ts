import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';
import { Type } from 'typebox';
import { canonicalHost, canonicalIp } from './device-address.js';
import { ConfigError } from './errors.js';

/**
 * Where the service may connect: the reachability policy of device networks (per context) and
 * of webhook targets. Every check runs on the canonical, resolved address the connection then
 * uses, so a name that resolves somewhere else later cannot lead it elsewhere.
 */

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** A network the service never reaches unless a setting names a network inside it. */
interface SpecialRange {
  name: string;
  cidr: Cidr;
}

function ranges(list: readonly [string, string][]): SpecialRange[] {
  return list.map(([name, cidr]) => ({ name, cidr: ipaddr.parseCIDR(cidr) }));
}

/** Refused for devices by default: the service's own host, cloud metadata, no-address forms. */
export const DEVICE_REFUSED_RANGES: readonly SpecialRange[] = ranges([
  ['unspecified', '0.0.0.0/8'],
  ['loopback', '127.0.0.0/8'],
  ['link-local', '169.254.0.0/16'],
  ['multicast', '224.0.0.0/4'],
  ['broadcast', '255.255.255.255/32'],
  ['unspecified', '::/128'],
  ['loopback', '::1/128'],
  ['link-local', 'fe80::/10'],
  ['multicast', 'ff00::/8'],
]);

/** Refused for webhooks by default: the above and every private network. */
export const WEBHOOK_REFUSED_RANGES: readonly SpecialRange[] = [
  ...DEVICE_REFUSED_RANGES,
  ...ranges([
    ['private', '10.0.0.0/8'],
    ['private', '172.16.0.0/12'],
    ['private', '192.168.0.0/16'],
    ['shared (CGNAT)', '100.64.0.0/10'],
    ['reserved', '240.0.0.0/4'],
    ['unique-local', 'fc00::/7'],
  ]),
];

/** The settings of the policy (spread into the gateway's and the actor's schemas). */
export const ReachabilitySettings = {
  DEVICE_NETWORKS_ALLOW: Type.Array(Type.String(), {
    default: [],
    description:
      'Device networks jobs may reach, comma-separated `[context=]pattern` (CIDR, address, host-name glob like `*.lab.example.com`, or `*` for any address not otherwise refused); empty: any. Loopback, link-local, unspecified and multicast addresses are refused unless an entry names a network inside them (e.g. `127.0.0.0/8`).',
  }),
  DEVICE_NETWORKS_DENY: Type.Array(Type.String(), {
    default: [],
    description:
      'Device networks jobs may never reach, comma-separated `[context=]pattern` (CIDR, address or host-name glob); wins over DEVICE_NETWORKS_ALLOW.',
  }),
  WEBHOOK_ALLOW_NETWORKS: Type.Array(Type.String(), {
    default: [],
    description:
      'Webhook target networks allowed although loopback, link-local, private, unique-local or otherwise special, comma-separated CIDRs (e.g. `127.0.0.0/8`).',
  }),
};

interface NetEntry {
  context: string | null;
  text: string;
  cidr: Cidr | null;
  /** Host-name glob; null for networks. */
  name: RegExp | null;
  /** `*`: any address not otherwise refused. */
  any: boolean;
}

const CONTEXT_PREFIX = /^([A-Za-z0-9_-]+)=(.*)$/;
const NAME_GLOB = /^[a-z0-9*]([a-z0-9*.-]*[a-z0-9*])?$/;

function parseEntry(raw: string, setting: string, problems: string[]): NetEntry | null {
  const m = CONTEXT_PREFIX.exec(raw.trim());
  const context = m ? m[1]! : null;
  const text = (m ? m[2]! : raw).trim().toLowerCase();
  const base = { context, text, cidr: null, name: null, any: false };
  if (text === '*') return { ...base, any: true };
  if (text.includes('/')) {
    try {
      return { ...base, cidr: ipaddr.parseCIDR(text) };
    } catch {
      problems.push(`${setting}: ${JSON.stringify(raw)} is not a valid CIDR network`);
      return null;
    }
  }
  const literal = canonicalIp(text);
  if (literal !== null) {
    const addr = ipaddr.parse(literal);
    return { ...base, cidr: [addr, addr.kind() === 'ipv4' ? 32 : 128] };
  }
  if (NAME_GLOB.test(text)) {
    const source = text.replace(/[.-]/g, (c) => `\\${c}`).replace(/\*/g, '[a-z0-9.-]*');
    return { ...base, name: new RegExp(`^${source}$`) };
  }
  problems.push(
    `${setting}: ${JSON.stringify(raw)} is neither a CIDR network, an address nor a host-name pattern`,
  );
  return null;
}

function inCidr(addr: ipaddr.IPv4 | ipaddr.IPv6, cidr: Cidr): boolean {
  return addr.kind() === cidr[0].kind() && addr.match(cidr);
}

/** Whether network `inner` lies inside `outer`. */
function within(inner: Cidr, outer: Cidr): boolean {
  return inner[1] >= outer[1] && inCidr(inner[0], outer);
}

export type Reachability = { allowed: true } | { allowed: false; reason: string };

/** What `os.networkInterfaces()` returns, as far as the policy reads it. */
export type InterfaceReader = () => Record<
  string,
  readonly { address: string; internal: boolean }[] | undefined
>;

/**
 * The addresses of this host's interfaces, loopback excluded (loopback is its own refused
 * range, which an allow entry may lift for a laptop demo or tests). Read at every check: the
 * call is cheap, and an address added later (DHCP, a new interface) is refused at once.
 */
function hostAddresses(read: InterfaceReader): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(read())) {
    for (const i of list ?? []) {
      if (i.internal) continue;
      const canonical = canonicalInterfaceAddress(i.address);
      if (canonical !== null) out.add(canonical);
    }
  }
  return out;
}

/**
 * The canonical form of an interface's address, remembered: the same few addresses come back at
 * every check (the interfaces are still read every time), and parsing them was a third of what a
 * check cost. Bounded: a host whose addresses churn starts the memory again.
 */
function canonicalInterfaceAddress(raw: string): string | null {
  let canonical = canonicalOfInterface.get(raw);
  if (canonical === undefined) {
    if (canonicalOfInterface.size >= 1024) canonicalOfInterface.clear();
    canonical = canonicalIp(raw.split('%')[0]!);
    canonicalOfInterface.set(raw, canonical);
  }
  return canonical;
}
const canonicalOfInterface = new Map<string, string | null>();

export interface AddressPolicyOptions {
  allow: readonly string[];
  deny?: readonly string[];
  refused: readonly SpecialRange[];
  /** A non-empty allow-list is the only way in (devices); else it only lifts refusals. */
  strict: boolean;
  allowSetting: string;
  denySetting?: string;
  /**
   * This host's interfaces (default `os.networkInterfaces`): their addresses are refused unless
   * an allow entry names the address itself; null: none are refused (tests of other rules).
   */
  interfaces?: InterfaceReader | null;
}

/**
 * One reachability policy. Order: a deny entry refuses; an address in a refused range is refused
 * unless an allow network inside that range contains it (a host-name entry never lifts it: the
 * name could resolve anywhere); then, when `strict` and allow entries exist for the context, the
 * address or name must match one (or `*` be listed). Bad entries are reported all at once.
 */
export class AddressPolicy {
  private readonly allow: NetEntry[];
  private readonly deny: NetEntry[];

  constructor(private readonly options: AddressPolicyOptions) {
    const problems: string[] = [];
    const parse = (list: readonly string[], setting: string) =>
      list.flatMap((raw) => parseEntry(raw, setting, problems) ?? []);
    this.allow = parse(options.allow, options.allowSetting);
    this.deny = parse(options.deny ?? [], options.denySetting ?? 'deny');
    if (problems.length > 0) throw new ConfigError(problems);
  }

  /**
   * Whether `address` (the resolved, canonical address) may be reached for a job of `context`
   * that named it `host`.
   */
  check(context: string, host: string, address: string): Reachability {
    const literal = canonicalIp(address);
    if (literal === null) return { allowed: false, reason: `${address} is not an IP address` };
    const addr = ipaddr.parse(literal);
    const name = canonicalIp(host) === null ? canonicalHost(host) : null;
    const forContext = (e: NetEntry) => e.context === null || e.context === context;
    const matches = (e: NetEntry) =>
      (e.cidr !== null && inCidr(addr, e.cidr)) ||
      (e.name !== null && name !== null && e.name.test(name));
    const shown = name !== null ? `${host} (${literal})` : literal;
    const denied = this.deny.filter(forContext).find(matches);
    if (denied) {
      return {
        allowed: false,
        reason: `${shown} is refused by ${this.options.denySetting} (${denied.text})`,
      };
    }
    const allow = this.allow.filter(forContext);
    // The service's own host: a port scan of it through a job would tell open ports from
    // closed ones. Only an entry naming the address itself lifts this (not `*`, not a network).
    const read =
      this.options.interfaces === undefined ? networkInterfaces : this.options.interfaces;
    if (read !== null && hostAddresses(read).has(literal)) {
      const full = addr.kind() === 'ipv4' ? 32 : 128;
      const named = allow.some(
        (e) => e.cidr !== null && e.cidr[1] === full && inCidr(addr, e.cidr),
      );
      if (!named) {
        return {
          allowed: false,
          reason: `${shown} is an address of this host, refused unless ${this.options.allowSetting} lists that address`,
        };
      }
    }
    const special = this.options.refused.find((r) => inCidr(addr, r.cidr));
    if (special) {
      const lifted = allow.some(
        (e) => e.cidr !== null && within(e.cidr, special.cidr) && inCidr(addr, e.cidr),
      );
      if (!lifted) {
        return {
          allowed: false,
          reason: `${shown} is a ${special.name} address, refused unless ${this.options.allowSetting} lists a network inside ${special.cidr[0].toString()}/${special.cidr[1]}`,
        };
      }
      return { allowed: true };
    }
    if (!this.options.strict || allow.length === 0) return { allowed: true };
    if (allow.some((e) => e.any || matches(e))) return { allowed: true };
    return {
      allowed: false,
      reason: `${shown} is not in ${this.options.allowSetting} of context ${context}`,
    };
  }
}

/** The device networks policy from the settings. Throws ConfigError listing every bad entry. */
export function deviceNetworkPolicy(
  config: {
    DEVICE_NETWORKS_ALLOW: readonly string[];
    DEVICE_NETWORKS_DENY: readonly string[];
  },
  host: Pick<AddressPolicyOptions, 'interfaces'> = {},
): AddressPolicy {
  return new AddressPolicy({
    allow: config.DEVICE_NETWORKS_ALLOW,
    deny: config.DEVICE_NETWORKS_DENY,
    refused: DEVICE_REFUSED_RANGES,
    strict: true,
    allowSetting: 'DEVICE_NETWORKS_ALLOW',
    denySetting: 'DEVICE_NETWORKS_DENY',
    ...host,
  });
}

/** The webhook target policy from the settings. */
export function webhookNetworkPolicy(
  config: { WEBHOOK_ALLOW_NETWORKS: readonly string[] },
  host: Pick<AddressPolicyOptions, 'interfaces'> = {},
): AddressPolicy {
  return new AddressPolicy({
    allow: config.WEBHOOK_ALLOW_NETWORKS,
    refused: WEBHOOK_REFUSED_RANGES,
    strict: false,
    allowSetting: 'WEBHOOK_ALLOW_NETWORKS',
    ...host,
  });
}

/**
 * The start checks of `ReachabilitySettings` for a service's settings loader: each policy built
 * once, so that a bad entry stops the start (a ConfigError listing every one), not a job.
 */
export const reachabilityChecks: readonly ((
  values: Readonly<{
    DEVICE_NETWORKS_ALLOW?: readonly string[];
    DEVICE_NETWORKS_DENY?: readonly string[];
    WEBHOOK_ALLOW_NETWORKS?: readonly string[];
  }>,
) => void)[] = [
  (c) => {
    deviceNetworkPolicy({
      DEVICE_NETWORKS_ALLOW: c.DEVICE_NETWORKS_ALLOW ?? [],
      DEVICE_NETWORKS_DENY: c.DEVICE_NETWORKS_DENY ?? [],
    });
  },
  (c) => {
    webhookNetworkPolicy({ WEBHOOK_ALLOW_NETWORKS: c.WEBHOOK_ALLOW_NETWORKS ?? [] });
  },
];
