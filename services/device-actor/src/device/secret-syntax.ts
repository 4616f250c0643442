/**
 * Secrets by syntax, per platform family, as configuration-backup tools filter them: each rule
 * matches the words that introduce a secret (group 1) and the secret itself (group 2), which
 * becomes `***`. Rules stay on one line (horizontal space only), so a prompt at the end of a
 * line never takes the next line for its value. Used on transcripts only: a job's outputs stay
 * what the device printed.
 */

export type SecretFamily = 'ios' | 'junos' | 'vrp';

/**
 * Words that stand where a value might and are not one (a level, a hash or encoding type, a
 * VRP `cipher` keyword, a short type number before the value), and a value already masked by
 * an earlier rule.
 */
const NOT_VALUE =
  '(?!\\*\\*\\*|\\d{1,2}[ \\t]+\\S|(?:level|sha512|sha256|md5|cipher|irreversible-cipher|simple|plain|ascii|hex|address|local|remote|read|write)\\b)';
/** Horizontal space; a token; a Junos value (quoted, or up to `;`). */
const H = '[ \\t]+';
const T = `${NOT_VALUE}(\\S+)`;
const JT = `${NOT_VALUE}("[^"\\r\\n]*"|[^\\s;"]+)`;

const rule = (source: string): RegExp => new RegExp(source, 'gim');

/** IOS, IOS-XE, NX-OS, IOS-XR and EOS forms. */
const IOS: readonly RegExp[] = [
  // enable secret|password [level N] [type] value
  rule(`^([ \\t]*enable${H}(?:secret|password)(?:${H}level${H}\\d+)?(?:${H}\\d{1,2})?${H})${T}`),
  // username NAME ... secret|password [type|sha512] value
  rule(
    `^([ \\t]*username${H}\\S+(?:${H}(?!secret\\b|password\\b)\\S+)*?${H}(?:secret|password)(?:${H}(?:\\d{1,2}|sha512|sha256|md5))?${H})${T}`,
  ),
  // tacacs-server / radius-server ... key [type] value (on the host line too)
  rule(`^([ \\t]*(?:tacacs-server|radius-server)\\b[^\\r\\n]*?${H}key(?:${H}\\d{1,2})?${H})${T}`),
  // key 0|6|7 value (tacacs/radius server sub-modes, key chains, routing protocols)
  rule(`(\\bkey${H}[067]${H})${T}`),
  rule(`(\\bkey-string(?:${H}\\d{1,2})?${H})${T}`),
  rule(`^([ \\t]*crypto${H}isakmp${H}key(?:${H}\\d{1,2})?${H})${T}`),
  rule(`(\\bpre-shared-key${H}address${H}\\S+(?:${H}\\S+)?${H}key(?:${H}\\d{1,2})?${H})${T}`),
  rule(
    `(\\bpre-shared-key(?!${H}address\\b)(?:${H}(?:local|remote))?(?:${H}(?:\\d{1,2}|ascii|hex))?${H})${T}`,
  ),
  rule(`^([ \\t]*snmp-server${H}community${H})${T}`),
  rule(
    `^([ \\t]*snmp-server${H}host${H}\\S+(?:${H}vrf${H}\\S+)?(?:${H}(?:informs|traps))?(?:${H}version${H}(?:1|2c|3(?:${H}(?:auth|noauth|priv))?))?${H})${T}`,
  ),
  // SNMPv3 users: auth ALG value, priv [ALG [bits]] value
  rule(`^([ \\t]*snmp-server${H}user${H}[^\\r\\n]*?\\bauth${H}\\S+${H})${T}`),
  rule(
    `^([ \\t]*snmp-server${H}user${H}[^\\r\\n]*?\\bpriv${H}(?:(?:aes|des|3des|aes-?128|aes-?192|aes-?256)(?:${H}\\d{3})?${H})?)${T}`,
  ),
  rule(`(\\bwpa-psk${H}(?:ascii|hex)(?:${H}\\d)?${H})${T}`),
  rule(`(\\bmessage-digest-key${H}\\d+${H}md5(?:${H}\\d)?${H})${T}`),
  rule(`(\\bauthentication-key(?:${H}\\d+)?(?:${H}md5)?(?:${H}\\d)?${H})${T}`),
  // password|secret [type] value, anywhere (line passwords, neighbors, sub-modes)
  rule(`(\\b(?:password|secret)(?:${H}\\d{1,2})?${H})${T}`),
];

/** Junos: `$9$` strings wherever they stand, and the statements that hold secrets. */
const JUNOS: readonly RegExp[] = [
  rule(
    `(\\b(?:encrypted-password|authentication-key|secret|simple-password|ascii-text|hex-value|authentication-password|privacy-password|plain-text-password-value)${H})${JT}`,
  ),
  rule(`(\\bcommunity${H})${JT}`),
  rule(`()("\\$9\\$[^"\\r\\n]*"|\\$9\\$[^\\s;"]+)`),
];

/** Huawei VRP (and Comware): cipher values and the `%^%#…%^%#` / `%$%$…%$%$` forms. */
const VRP: readonly RegExp[] = [
  rule(`(\\b(?:irreversible-cipher|cipher)${H})${T}`),
  rule(`(\\bpassword${H}(?:simple|plain)${H})${T}`),
  rule(`(\\bcommunity${H}(?:read|write)${H}(?!cipher\\b))${T}`),
  rule(`(\\bpin${H}verify(?:${H}auto)?${H})${T}`),
  rule(`()(%\\^%#[^\\r\\n]*?%\\^%#|%\\$%\\$[^\\r\\n]*?%\\$%\\$)`),
];

/** Every platform: `password=`, `secret=` and their kin, and the common `keyword value` forms. */
const GENERIC: readonly RegExp[] = [
  rule(
    `(\\b(?:password|passwd|secret|token|api[-_]?key|psk)[ \\t]*[=:][ \\t]*)("[^"\\r\\n]*"|'[^'\\r\\n]*'|[^\\s&;,"']+)`,
  ),
  rule(
    `(\\b(?:password|secret|passphrase|pre-shared-key|key-string|community|authentication-key|auth-key)(?:${H}\\d{1,2})?${H})${T}`,
  ),
];

const RULES: Record<SecretFamily, readonly RegExp[]> = { ios: IOS, junos: JUNOS, vrp: VRP };

/** The families whose syntax a platform speaks; unknown platforms (and autodetect) get all. */
export function familiesOf(platform: string | null | undefined): SecretFamily[] {
  const p = (platform ?? '').toLowerCase();
  if (p.startsWith('cisco_') || p.startsWith('arista_')) return ['ios'];
  if (p.startsWith('juniper_')) return ['junos'];
  if (p.startsWith('huawei') || p === 'hp_comware') return ['vrp'];
  return ['ios', 'junos', 'vrp'];
}

/** `text` with every secret its platform's syntax shows replaced by `***`. */
export function maskSecretSyntax(text: string, platform: string | null | undefined): string {
  let out = text;
  for (const family of familiesOf(platform)) {
    for (const r of RULES[family]) out = out.replace(r, '$1***');
  }
  for (const r of GENERIC) out = out.replace(r, '$1***');
  return out;
}
