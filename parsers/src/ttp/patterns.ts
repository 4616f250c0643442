// TTP's built-in regex formatters, usable as `{{ x | IP }}` or `re("IP")`.
export const PATTERNS: Readonly<Record<string, string>> = {
  PHRASE: String.raw`(\S+ {1})+?\S+`,
  ROW: String.raw`(\S+ +)+?\S+`,
  ORPHRASE: String.raw`\S+|(\S+ {1})+?\S+`,
  DIGIT: String.raw`\d+`,
  IP: String.raw`(?:[0-9]{1,3}\.){3}[0-9]{1,3}`,
  PREFIX: String.raw`(?:[0-9]{1,3}\.){3}[0-9]{1,3}/[0-9]{1,2}`,
  IPV6: String.raw`(?:[a-fA-F0-9]{1,4}:|:){1,7}(?:[a-fA-F0-9]{1,4}|:?)`,
  PREFIXV6: String.raw`(?:[a-fA-F0-9]{1,4}:|:){1,7}(?:[a-fA-F0-9]{1,4}|:?)/[0-9]{1,3}`,
  _line_: String.raw`.+`,
  WORD: String.raw`\S+`,
  MAC: String.raw`(?:[0-9a-fA-F]{2}(:|\.|\-)){5}([0-9a-fA-F]{2})|(?:[0-9a-fA-F]{4}(:|\.|\-)){2}([0-9a-fA-F]{4})`,
};

export function getPattern(name: string): string | undefined {
  return Object.prototype.hasOwnProperty.call(PATTERNS, name) ? PATTERNS[name] : undefined;
}

/** Python's re.escape (3.7+): escapes only regex-special characters. */
export function pyReEscape(s: string): string {
  return s.replace(/[()[\]{}?*+\-|^$\\.&~# \t\n\r\v\f]/g, (c) => '\\' + c);
}

/**
 * Converts Python-only regex syntax that user templates may contain to its
 * JavaScript equivalent (named groups and backreferences, \Z, \A).
 */
export function pyRegexToJs(src: string): string {
  return src
    .replace(/\(\?P</g, '(?<')
    .replace(/\(\?P=(\w+)\)/g, '\\k<$1>')
    .replace(/\\Z/g, '$(?![\\s\\S])')
    .replace(/\\A/g, '^');
}
