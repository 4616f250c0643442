// Stand-in for Python's ipaddress objects that to_ip/to_net return. Templates
// chain attribute lookups on them (`to_ip | network | to_str`), and results
// serialise them as their string form.

export type IpKind = 'address' | 'interface' | 'network';

function parseV4(s: string): bigint | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  let n = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return null;
    const v = Number(p);
    if (v > 255) return null;
    n = (n << 8n) | BigInt(v);
  }
  return n;
}

function parseV6(s: string): bigint | null {
  if (!/^[0-9a-fA-F:.]+$/.test(s)) return null;
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const toGroups = (h: string): number[] | null => {
    if (h === '') return [];
    const out: number[] = [];
    for (const g of h.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = toGroups(halves[0] ?? '');
  const tail = halves.length === 2 ? toGroups(halves[1] ?? '') : [];
  if (!head || !tail) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  let n = 0n;
  for (const g of groups) n = (n << 16n) | BigInt(g);
  return n;
}

function formatV4(n: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join('.');
}

function formatV6(n: bigint): string {
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((n >> BigInt(i * 16)) & 0xffffn));
  // compress the longest run of zero groups (length >= 2), as Python does
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart === -1) return hex.join(':');
  const left = hex.slice(0, bestStart).join(':');
  const right = hex.slice(bestStart + bestLen).join(':');
  return `${left}::${right}`;
}

export class IpValue {
  constructor(
    readonly kind: IpKind,
    readonly version: 4 | 6,
    readonly addr: bigint,
    readonly prefixlen: number,
  ) {}

  get maxPrefixlen(): number {
    return this.version === 4 ? 32 : 128;
  }

  private maskBits(): bigint {
    const max = BigInt(this.maxPrefixlen);
    const all = (1n << max) - 1n;
    return (all << (max - BigInt(this.prefixlen))) & all;
  }

  private fmt(n: bigint): string {
    return this.version === 4 ? formatV4(n) : formatV6(n);
  }

  get ip(): IpValue {
    return new IpValue('address', this.version, this.addr, this.maxPrefixlen);
  }

  get network(): IpValue {
    return new IpValue('network', this.version, this.addr & this.maskBits(), this.prefixlen);
  }

  get netmask(): IpValue {
    return new IpValue('address', this.version, this.maskBits(), this.maxPrefixlen);
  }

  get hostmask(): IpValue {
    const all = (1n << BigInt(this.maxPrefixlen)) - 1n;
    return new IpValue('address', this.version, all ^ this.maskBits(), this.maxPrefixlen);
  }

  get withPrefixlen(): string {
    return `${this.fmt(this.addr)}/${this.prefixlen}`;
  }

  get withNetmask(): string {
    return `${this.fmt(this.addr)}/${this.fmt(this.maskBits())}`;
  }

  /** Attribute lookup as a template function (`network`, `ip`, ...). */
  attribute(name: string): unknown {
    switch (name) {
      case 'ip':
        return this.ip;
      case 'network':
        return this.network;
      case 'netmask':
        return this.netmask;
      case 'hostmask':
        return this.hostmask;
      case 'with_prefixlen':
        return this.withPrefixlen;
      case 'with_netmask':
        return this.withNetmask;
      case 'version':
        return this.version;
      case 'prefixlen':
        return this.prefixlen;
      case 'max_prefixlen':
        return this.maxPrefixlen;
      case 'compressed':
      case 'exploded':
        return this.toString();
      default:
        return undefined;
    }
  }

  toString(): string {
    if (this.kind === 'address') return this.fmt(this.addr);
    return `${this.fmt(this.addr)}/${this.prefixlen}`;
  }

  toJSON(): string {
    return this.toString();
  }
}

function prefixFromMask(mask: string, version: 4 | 6): number | null {
  if (/^\d+$/.test(mask)) {
    const n = Number(mask);
    return n <= (version === 4 ? 32 : 128) ? n : null;
  }
  const m = version === 4 ? parseV4(mask) : parseV6(mask);
  if (m === null) return null;
  const bits = m.toString(2).padStart(version === 4 ? 32 : 128, '0');
  if (/^1*0*$/.test(bits)) return bits.indexOf('0') === -1 ? bits.length : bits.indexOf('0');
  // Python accepts host masks (0.0.0.255) too
  if (/^0*1*$/.test(bits)) return bits.indexOf('1') === -1 ? bits.length : bits.indexOf('1');
  return null;
}

/** Parses an address, or `addr/len`, `addr/mask`; throws like Python's ValueError. */
export function parseIp(text: string, kind: IpKind, version?: 4 | 6): IpValue {
  const [addrPart, maskPart] = text.split('/', 2) as [string, string | undefined];
  const tryVersions: Array<4 | 6> = version ? [version] : [4, 6];
  for (const v of tryVersions) {
    const n = v === 4 ? parseV4(addrPart) : parseV6(addrPart);
    if (n === null) continue;
    const max = v === 4 ? 32 : 128;
    let prefix = max;
    if (maskPart !== undefined) {
      const p = prefixFromMask(maskPart, v);
      if (p === null) throw new RangeError(`invalid netmask in '${text}'`);
      prefix = p;
    }
    if (kind === 'address' && maskPart !== undefined) {
      throw new RangeError(`'${text}' is not an address`);
    }
    const value = new IpValue(kind, v, n, prefix);
    if (kind === 'network' && value.network.addr !== n) {
      throw new RangeError(`'${text}' has host bits set`);
    }
    return value;
  }
  throw new RangeError(`'${text}' does not appear to be an IP address`);
}
