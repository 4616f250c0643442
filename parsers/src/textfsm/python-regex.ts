/**
 * Translation of Python `re` patterns (str patterns, Python 3 semantics) to JavaScript.
 *
 * Every pattern is translated twice, lazily: an ASCII variant (`u` flag) that is exact for
 * ASCII-only subjects, and a Unicode variant (`v` flag) where `\w`, `\d`, `\b` follow Python's
 * Unicode definitions, used for subjects holding non-ASCII characters. Device output is nearly
 * always ASCII, and the ASCII variant lets V8 use its fast built-in classes.
 *
 * Python's semantics are reproduced rather than approximated where JavaScript differs:
 * `.` excludes only `\n`, `$` also matches before a final `\n`, `\A`/`\Z`, `{,n}`, `(?P<n>…)`,
 * `(?P=n)`, scoped and global inline flags (case-insensitivity is expanded by hand, because
 * Node 20 has no regexp modifiers), octal escapes and Python's lenient escapes of punctuation.
 * Constructs JavaScript cannot express (possessive quantifiers, atomic groups, conditionals,
 * `\N{…}`) are rejected with a {@link PythonRegexError}.
 */

export class PythonRegexError extends Error {
  override readonly name = 'PythonRegexError';
}

export interface TranslatedRegex {
  source: string;
  flags: string;
  /** Capturing groups, as Python's `pattern.groups` counts them. */
  groupCount: number;
  /** Named groups in order of definition (Python's `groupdict()` order). */
  groupNames: string[];
  /** Named group → Python group number. */
  groupNumbers: ReadonlyMap<string, number>;
  /** Quantified atoms that may iterate more than once and hold capturing groups. */
  repeats: Repeat[];
}

/**
 * A quantified atom (`(…)+`, `(?:…){2,}`) that holds capturing groups. JavaScript resets those
 * groups at each iteration, Python keeps the value of the last iteration a group took part in;
 * the table lets {@link PythonRegex} recover Python's value after a match.
 */
export interface Repeat {
  /** Helper group names in the instrumented variant: `__w<id>` the whole repetition, `__l<id>` its last iteration. */
  id: number;
  /** Python numbers of the first and last capturing group inside the atom. */
  firstGroup: number;
  lastGroup: number;
  /** The atom's Python source and the flags in force where it stands. */
  atom: string;
  flags: Flags;
  lazy: boolean;
}

/**
 * How a pattern is translated: `plain` is the matching variant; `instrument` names every
 * group `__g<n>` and wraps each {@link Repeat} in helper groups (used with the `d` flag to find
 * iteration spans); `shadow` names every group `__h<n>`, so the earlier iterations of a replay
 * keep their back-references without clashing with the captured last one.
 */
type Mode = 'plain' | 'instrument' | 'shadow';

interface TranslateOptions {
  mode: Mode;
  /** Python number of the group before the first one of this (sub)pattern. */
  groupOffset: number;
  /** Flags in force, for a sub-pattern cut out of a larger one. */
  flags?: Flags;
}

interface Flags {
  i: boolean;
  m: boolean;
  s: boolean;
  x: boolean;
  a: boolean;
}

const FLAG_CHARS = 'aiLmsux';
const OUTSIDE_SPECIAL = new Set('^$\\.*+?()[]{}|/');
const WORD_U = '\\p{L}\\p{N}_';
const IDENT = /^[_\p{ID_Start}][\p{ID_Continue}]*$/u;

function hex(cp: number): string {
  return cp.toString(16).toUpperCase();
}

/** A code point as a literal outside a character class. */
function literalOutside(cp: number): string {
  const ch = String.fromCodePoint(cp);
  if (OUTSIDE_SPECIAL.has(ch)) return '\\' + ch;
  if (cp < 0x20 || cp === 0x7f) return `\\x${hex(cp).padStart(2, '0')}`;
  return ch;
}

/** A code point as a literal inside a class; safe in both `u` and `v` mode. */
function literalInClass(cp: number): string {
  if ((cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a)) {
    return String.fromCodePoint(cp);
  }
  if (cp < 0x80) return `\\x${hex(cp).padStart(2, '0')}`;
  return String.fromCodePoint(cp);
}

function singleCodePoint(s: string): number | undefined {
  const cp = s.codePointAt(0);
  return cp !== undefined && String.fromCodePoint(cp).length === s.length ? cp : undefined;
}

/** Code points Python's IGNORECASE treats as equal to `cp` (simple case mapping). */
function caseVariants(cp: number, asciiOnly: boolean): number[] {
  if (asciiOnly && cp >= 0x80) return [cp];
  const out = new Set<number>([cp]);
  const ch = String.fromCodePoint(cp);
  for (const v of [ch.toLowerCase(), ch.toUpperCase()]) {
    const c = singleCodePoint(v);
    if (c === undefined) continue;
    out.add(c);
    const back = singleCodePoint(String.fromCodePoint(c).toLowerCase());
    if (back !== undefined) out.add(back);
  }
  if (asciiOnly) for (const c of out) if (c >= 0x80) out.delete(c);
  return [...out];
}

type ClassItem =
  | { kind: 'char'; cp: number }
  | { kind: 'range'; lo: number; hi: number }
  | { kind: 'class'; esc: 'd' | 'D' | 'w' | 'W' | 's' | 'S' };

class Translator {
  private pos = 0;
  private groupCount = 0;
  private readonly groupNames: string[] = [];
  private readonly repeats: Repeat[] = [];
  private readonly namedNumbers = new Map<string, number>();
  private readonly openGroups = new Set<number>();
  private readonly openNamed = new Set<string>();
  private needsIgnoreCaseFlag = false;
  private readonly globalFlags: Flags;

  constructor(
    private readonly src: string,
    private readonly unicode: boolean,
    private readonly options: TranslateOptions = { mode: 'plain', groupOffset: 0 },
  ) {
    this.globalFlags = options.flags ?? prescanGlobalFlags(src);
  }

  /** How a Python group opens in the output, by mode. */
  private openCapture(n: number, name: string | undefined): string {
    switch (this.options.mode) {
      case 'plain':
        return name === undefined ? '(' : `(?<${name}>`;
      case 'instrument':
        return `(?<__g${this.options.groupOffset + n}>`;
      case 'shadow':
        return `(?<__h${this.options.groupOffset + n}>`;
    }
  }

  /** A back-reference to Python group `n` (local number), by mode. */
  private backref(n: number, name: string | undefined): string {
    switch (this.options.mode) {
      case 'plain':
        return name === undefined ? `(?:\\${n})` : `(?:\\k<${name}>)`;
      case 'instrument':
        return `(?:\\k<__g${this.options.groupOffset + n}>)`;
      case 'shadow':
        return `(?:\\k<__h${this.options.groupOffset + n}>)`;
    }
  }

  translate(): TranslatedRegex {
    const source = this.parseAlternation(this.globalFlags);
    if (this.pos < this.src.length) throw this.error('unbalanced parenthesis');
    if (this.needsIgnoreCaseFlag && !this.globalFlags.i) {
      throw this.error('a backreference under a scoped (?i:...) flag cannot be translated');
    }
    const flags = (this.unicode ? 'v' : 'u') + (this.needsIgnoreCaseFlag ? 'i' : '');
    return {
      source,
      flags,
      groupCount: this.groupCount,
      groupNames: this.groupNames,
      groupNumbers: this.namedNumbers,
      repeats: this.repeats,
    };
  }

  private error(message: string): PythonRegexError {
    return new PythonRegexError(`${message} at position ${this.pos}`);
  }

  private peek(offset = 0): string | undefined {
    return this.src[this.pos + offset];
  }

  private parseAlternation(flags: Flags): string {
    const branches = [this.parseSequence(flags)];
    while (this.peek() === '|') {
      this.pos++;
      branches.push(this.parseSequence(flags));
    }
    return branches.join('|');
  }

  private parseSequence(flags: Flags): string {
    const parts: string[] = [];
    // What the last item was decides whether a quantifier may follow it.
    let last: 'none' | 'atom' | 'anchor' | 'assertion' | 'quantified' = 'none';
    // Where the last item started (source position, group count), to spot repeated captures.
    let lastStart = this.pos;
    let lastGroups = this.groupCount;
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === '|' || c === ')') break;
      if (flags.x && /[ \t\n\r\v\f]/.test(c)) {
        this.pos++;
        continue;
      }
      if (flags.x && c === '#') {
        while (this.pos < this.src.length && this.src[this.pos] !== '\n') this.pos++;
        continue;
      }
      const quantPos = this.pos;
      const quant = this.readQuantifier();
      if (quant !== undefined) {
        if (last === 'none' || last === 'anchor') throw this.error('nothing to repeat');
        if (last === 'quantified') throw this.error('multiple repeat');
        if (this.peek() === '?') {
          this.pos++;
          quant.text += '?';
        } else if (this.peek() === '+') {
          throw this.error('possessive quantifiers are not supported in JavaScript');
        }
        const prev = parts.pop() ?? '';
        if (last === 'atom' && quant.max > 1 && this.groupCount > lastGroups) {
          const atom = this.src.slice(lastStart, quantPos);
          parts.push(this.repeated(prev, quant.text, atom, lastGroups, flags));
        } else {
          // JavaScript refuses a quantified lookaround; a group around it means the same.
          parts.push((last === 'assertion' ? `(?:${prev})` : prev) + quant.text);
        }
        last = 'quantified';
        continue;
      }
      const start = this.pos;
      const groupsBefore = this.groupCount;
      const item = this.parseItem(flags);
      if (item === undefined) continue;
      parts.push(item.text);
      last = item.kind;
      lastStart = start;
      lastGroups = groupsBefore;
    }
    return parts.join('');
  }

  /** Records a repeated atom holding captures; the instrumented variant wraps it in helpers. */
  private repeated(
    atom: string,
    quant: string,
    source: string,
    groupsBefore: number,
    flags: Flags,
  ): string {
    const id = this.repeats.length;
    const offset = this.options.groupOffset;
    this.repeats.push({
      id,
      firstGroup: offset + groupsBefore + 1,
      lastGroup: offset + this.groupCount,
      atom: source,
      flags: { ...flags },
      lazy: quant.endsWith('?'),
    });
    if (this.options.mode !== 'instrument') return atom + quant;
    return `(?<__w${id}>(?:(?<__l${id}>${atom}))${quant})`;
  }

  /** Reads `*`, `+`, `?` or a Python `{m,n}` quantifier at the cursor, if any. */
  private readQuantifier(): { text: string; max: number } | undefined {
    const c = this.peek();
    if (c === '*' || c === '+' || c === '?') {
      this.pos++;
      return { text: c, max: c === '?' ? 1 : Infinity };
    }
    if (c !== '{') return undefined;
    const m = /^\{(\d*)(?:(,)(\d*))?\}/.exec(this.src.slice(this.pos));
    // Python reads `{}` and anything not shaped like a quantifier as a literal brace.
    if (m === null || m[0] === '{}') return undefined;
    this.pos += m[0].length;
    const lo = m[1] ?? '';
    const hi = m[3] ?? '';
    const min = lo === '' ? 0 : Number(lo);
    if (m[2] === undefined) return { text: `{${min}}`, max: min };
    if (hi === '') return { text: `{${min},}`, max: Infinity };
    if (Number(hi) < min) throw this.error('min repeat greater than max repeat');
    return { text: `{${min},${Number(hi)}}`, max: Number(hi) };
  }

  private parseItem(
    flags: Flags,
  ): { text: string; kind: 'atom' | 'anchor' | 'assertion' } | undefined {
    const c = this.peek() as string;
    switch (c) {
      case '(':
        return this.parseGroup(flags);
      case '[':
        this.pos++;
        return { text: this.parseClass(flags), kind: 'atom' };
      case '\\':
        return this.parseEscape(flags);
      case '.':
        this.pos++;
        return { text: flags.s ? '[\\s\\S]' : '[^\\n]', kind: 'atom' };
      case '^':
        this.pos++;
        return { text: flags.m ? '(?<![^\\n])' : '^', kind: 'anchor' };
      case '$':
        this.pos++;
        // Python's `$` also matches just before a newline that ends the subject.
        return { text: flags.m ? '(?![^\\n])' : '(?:$|(?=\\n$))', kind: 'anchor' };
      default: {
        const cp = this.src.codePointAt(this.pos) as number;
        this.pos += cp > 0xffff ? 2 : 1;
        return { text: this.literal(cp, flags), kind: 'atom' };
      }
    }
  }

  private literal(cp: number, flags: Flags): string {
    if (flags.i) {
      const variants = caseVariants(cp, flags.a);
      if (variants.length > 1) return '[' + variants.map(literalInClass).join('') + ']';
    }
    return literalOutside(cp);
  }

  private parseGroup(flags: Flags): { text: string; kind: 'atom' | 'assertion' } | undefined {
    this.pos++; // (
    if (this.peek() !== '?') {
      const n = ++this.groupCount;
      this.openGroups.add(n);
      const inner = this.parseAlternation(flags);
      this.expect(')');
      this.openGroups.delete(n);
      return { text: `${this.openCapture(n, undefined)}${inner})`, kind: 'atom' };
    }
    this.pos++; // ?
    const c = this.peek();
    if (c === ':') {
      this.pos++;
      const inner = this.parseAlternation(flags);
      this.expect(')');
      return { text: `(?:${inner})`, kind: 'atom' };
    }
    if (c === 'P') {
      this.pos++;
      const d = this.peek();
      if (d === '<') {
        this.pos++;
        const name = this.readName('>');
        if (this.groupNames.includes(name))
          throw this.error(`redefinition of group name '${name}'`);
        const n = ++this.groupCount;
        this.groupNames.push(name);
        this.namedNumbers.set(name, n);
        this.openGroups.add(n);
        this.openNamed.add(name);
        const inner = this.parseAlternation(flags);
        this.expect(')');
        this.openGroups.delete(n);
        this.openNamed.delete(name);
        return { text: `${this.openCapture(n, name)}${inner})`, kind: 'atom' };
      }
      if (d === '=') {
        this.pos++;
        const name = this.readName(')');
        const index = this.groupNames.indexOf(name);
        if (index < 0) throw this.error(`unknown group name '${name}'`);
        if (this.isOpenNamed(name)) throw this.error('cannot refer to an open group');
        if (flags.i) this.needsIgnoreCaseFlag = true;
        return { text: this.backref(this.namedNumbers.get(name) ?? 0, name), kind: 'atom' };
      }
      throw this.error(`unknown extension ?P${d ?? ''}`);
    }
    if (c === '=' || c === '!') {
      this.pos++;
      const inner = this.parseAlternation(flags);
      this.expect(')');
      return { text: `(?${c}${inner})`, kind: 'assertion' };
    }
    if (c === '<') {
      const d = this.peek(1);
      if (d === '=' || d === '!') {
        this.pos += 2;
        const inner = this.parseAlternation(flags);
        this.expect(')');
        return { text: `(?<${d}${inner})`, kind: 'assertion' };
      }
      throw this.error(`unknown extension ?<${d ?? ''}`);
    }
    if (c === '#') {
      const end = this.src.indexOf(')', this.pos);
      if (end < 0) throw this.error('missing ), unterminated comment');
      this.pos = end + 1;
      return undefined;
    }
    if (c === '>') throw this.error('atomic groups (?>...) are not supported in JavaScript');
    if (c === '(')
      throw this.error('conditional groups (?(...)...) are not supported in JavaScript');
    if (c !== undefined && (FLAG_CHARS.includes(c) || c === '-')) {
      const on = this.readFlagLetters();
      let off = '';
      if (this.peek() === '-') {
        this.pos++;
        off = this.readFlagLetters();
        if (off === '') throw this.error('missing flag');
      }
      const end = this.peek();
      if (end === ')') {
        if (off !== '') throw this.error('cannot turn off global flags');
        this.pos++;
        return undefined; // applied globally by prescanGlobalFlags
      }
      if (end !== ':') throw this.error('missing -, : or )');
      this.pos++;
      const scoped: Flags = { ...flags };
      for (const f of on) setFlag(scoped, f, true, { pos: this.pos });
      for (const f of off) setFlag(scoped, f, false, { pos: this.pos });
      const inner = this.parseAlternation(scoped);
      this.expect(')');
      return { text: `(?:${inner})`, kind: 'atom' };
    }
    throw this.error(`unknown extension ?${c ?? ''}`);
  }

  private readFlagLetters(): string {
    let out = '';
    while (this.peek() !== undefined && FLAG_CHARS.includes(this.peek() as string)) {
      out += this.peek();
      this.pos++;
    }
    return out;
  }

  private isOpenNamed(name: string): boolean {
    return this.openNamed.has(name);
  }

  private readName(terminator: string): string {
    const end = this.src.indexOf(terminator, this.pos);
    if (end < 0) throw this.error(`missing ${terminator}, unterminated name`);
    const name = this.src.slice(this.pos, end);
    if (!IDENT.test(name)) throw this.error(`bad character in group name '${name}'`);
    this.pos = end + 1;
    return name;
  }

  private expect(ch: string): void {
    if (this.peek() !== ch) throw this.error(`missing ${ch}, unterminated subpattern`);
    this.pos++;
  }

  private parseEscape(flags: Flags): { text: string; kind: 'atom' | 'anchor' } {
    this.pos++; // backslash
    const c = this.peek();
    if (c === undefined) throw this.error('bad escape (end of pattern)');
    this.pos++;
    switch (c) {
      case 'A':
        return { text: '(?<![\\s\\S])', kind: 'anchor' };
      case 'Z':
        return { text: '(?![\\s\\S])', kind: 'anchor' };
      case 'b':
        return { text: this.wordBoundary(flags, false), kind: 'anchor' };
      case 'B':
        return { text: this.wordBoundary(flags, true), kind: 'anchor' };
      case 'd':
      case 'D':
      case 'w':
      case 'W':
      case 's':
      case 'S':
        return { text: this.classEscapeOutside(c, flags), kind: 'atom' };
      default:
    }
    if (c >= '0' && c <= '9') {
      this.pos--;
      const ref = this.readDigitsEscape(false);
      if (ref.kind === 'char') return { text: this.literal(ref.cp, flags), kind: 'atom' };
      if (ref.group > this.groupCount) throw this.error(`invalid group reference ${ref.group}`);
      if (this.openGroups.has(ref.group)) throw this.error('cannot refer to an open group');
      if (flags.i) this.needsIgnoreCaseFlag = true;
      return { text: this.backref(ref.group, undefined), kind: 'atom' };
    }
    this.pos--;
    const cp = this.readCharEscape(false);
    return { text: this.literal(cp, flags), kind: 'atom' };
  }

  private wordBoundary(flags: Flags, negated: boolean): string {
    if (!this.unicode || flags.a) return negated ? '\\B' : '\\b';
    const w = `[${WORD_U}]`;
    return negated
      ? `(?:(?<=${w})(?=${w})|(?<!${w})(?!${w}))`
      : `(?:(?<=${w})(?!${w})|(?<!${w})(?=${w}))`;
  }

  private classEscapeOutside(c: 'd' | 'D' | 'w' | 'W' | 's' | 'S', flags: Flags): string {
    if (!this.unicode || flags.a || c === 's' || c === 'S') return '\\' + c;
    switch (c) {
      case 'd':
        return '\\p{Nd}';
      case 'D':
        return '\\P{Nd}';
      case 'w':
        return `[${WORD_U}]`;
      case 'W':
        return `[^${WORD_U}]`;
    }
  }

  /** `\0`..`\9` escapes: an octal character or a group reference, as Python decides. */
  private readDigitsEscape(
    inClass: boolean,
  ): { kind: 'char'; cp: number } | { kind: 'group'; group: number } {
    const isOct = (ch: string | undefined): boolean => ch !== undefined && ch >= '0' && ch <= '7';
    const isDig = (ch: string | undefined): boolean => ch !== undefined && ch >= '0' && ch <= '9';
    const first = this.peek() as string;
    if (first === '0' || inClass) {
      if (!isOct(first)) throw this.error(`bad escape \\${first}`);
      let digits = first;
      this.pos++;
      while (digits.length < 3 && isOct(this.peek())) {
        digits += this.peek();
        this.pos++;
      }
      return this.octal(digits);
    }
    let digits = first;
    this.pos++;
    if (isDig(this.peek())) {
      digits += this.peek();
      this.pos++;
      if (isOct(digits[0]) && isOct(digits[1]) && isOct(this.peek())) {
        digits += this.peek();
        this.pos++;
        return this.octal(digits);
      }
    }
    return { kind: 'group', group: Number(digits) };
  }

  private octal(digits: string): { kind: 'char'; cp: number } {
    const cp = parseInt(digits, 8);
    if (cp > 0o377) throw this.error(`octal escape value \\${digits} outside of range 0-0o377`);
    return { kind: 'char', cp };
  }

  /** A single-character escape (not a class, anchor or reference); returns its code point. */
  private readCharEscape(inClass: boolean): number {
    const c = this.peek() as string;
    this.pos++;
    const simple: Record<string, number> = { a: 7, f: 12, n: 10, r: 13, t: 9, v: 11 };
    if (inClass && c === 'b') return 8;
    const known = simple[c];
    if (known !== undefined) return known;
    if (c === 'x' || c === 'u' || c === 'U') {
      const len = c === 'x' ? 2 : c === 'u' ? 4 : 8;
      const digits = this.src.slice(this.pos, this.pos + len);
      if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(digits)) {
        throw this.error(`incomplete escape \\${c}${digits}`);
      }
      this.pos += len;
      const cp = parseInt(digits, 16);
      if (cp > 0x10ffff) throw this.error(`bad escape \\${c}${digits}`);
      return cp;
    }
    if (c === 'N') throw this.error('named Unicode escapes \\N{...} are not supported');
    if (/^[A-Za-z0-9]$/.test(c)) throw this.error(`bad escape \\${c}`);
    // Python takes any other escaped character literally (`\:`, `\-`, `\ `, …).
    const cp = this.src.codePointAt(this.pos - 1) as number;
    if (cp > 0xffff) this.pos++;
    return cp;
  }

  private parseClass(flags: Flags): string {
    let negated = false;
    if (this.peek() === '^') {
      negated = true;
      this.pos++;
    }
    const items: ClassItem[] = [];
    let first = true;
    for (;;) {
      const c = this.peek();
      if (c === undefined) throw this.error('unterminated character set');
      if (c === ']' && !first) {
        this.pos++;
        break;
      }
      first = false;
      const atom = this.readClassAtom();
      if (this.peek() === '-' && this.peek(1) !== undefined && this.peek(1) !== ']') {
        if (atom.kind === 'class') throw this.error('bad character range');
        this.pos++;
        const hiAtom = this.readClassAtom();
        if (hiAtom.kind !== 'char' || atom.kind !== 'char') throw this.error('bad character range');
        if (hiAtom.cp < atom.cp) throw this.error('bad character range');
        items.push({ kind: 'range', lo: atom.cp, hi: hiAtom.cp });
        continue;
      }
      items.push(atom);
    }
    return this.emitClass(items, negated, flags);
  }

  private readClassAtom(): ClassItem {
    const c = this.peek() as string;
    if (c !== '\\') {
      const cp = this.src.codePointAt(this.pos) as number;
      this.pos += cp > 0xffff ? 2 : 1;
      return { kind: 'char', cp };
    }
    this.pos++;
    const e = this.peek();
    if (e === undefined) throw this.error('bad escape (end of pattern)');
    if (e === 'd' || e === 'D' || e === 'w' || e === 'W' || e === 's' || e === 'S') {
      this.pos++;
      return { kind: 'class', esc: e };
    }
    if (e >= '0' && e <= '9') {
      const ref = this.readDigitsEscape(true);
      if (ref.kind === 'group') throw this.error('bad escape in class');
      return { kind: 'char', cp: ref.cp };
    }
    if (e === 'A' || e === 'Z' || e === 'B') throw this.error(`bad escape \\${e}`);
    return { kind: 'char', cp: this.readCharEscape(true) };
  }

  private emitClass(items: ClassItem[], negated: boolean, flags: Flags): string {
    const parts: string[] = [];
    const extra = new Set<number>();
    for (const item of items) {
      switch (item.kind) {
        case 'char':
          parts.push(literalInClass(item.cp));
          if (flags.i) for (const v of caseVariants(item.cp, flags.a)) extra.add(v);
          break;
        case 'range':
          parts.push(`${literalInClass(item.lo)}-${literalInClass(item.hi)}`);
          if (flags.i) {
            for (let cp = item.lo; cp <= item.hi; cp++) {
              for (const v of caseVariants(cp, flags.a)) {
                if (v < item.lo || v > item.hi) extra.add(v);
              }
            }
          }
          break;
        case 'class':
          parts.push(this.classEscapeInClass(item.esc, flags));
          break;
      }
    }
    for (const cp of [...extra].sort((a, b) => a - b)) parts.push(literalInClass(cp));
    return `[${negated ? '^' : ''}${parts.join('')}]`;
  }

  private classEscapeInClass(c: 'd' | 'D' | 'w' | 'W' | 's' | 'S', flags: Flags): string {
    if (!this.unicode || flags.a || c === 's' || c === 'S') return '\\' + c;
    switch (c) {
      case 'd':
        return '\\p{Nd}';
      case 'D':
        return '\\P{Nd}';
      case 'w':
        return WORD_U;
      case 'W':
        return `[^${WORD_U}]`; // a nested class: the Unicode variant compiles with the `v` flag
    }
  }
}

function setFlag(flags: Flags, f: string, value: boolean, t: { pos: number }): void {
  switch (f) {
    case 'i':
    case 'm':
    case 's':
    case 'x':
    case 'a':
      flags[f] = value;
      return;
    case 'u':
      return;
    default:
      throw new PythonRegexError(`bad inline flag ${f} at position ${t.pos}`);
  }
}

/**
 * Collects `(?flags)` groups. Python before 3.11 applied them to the whole pattern wherever
 * they stood (3.11 requires them first); templates in the wild rely on the former.
 */
function prescanGlobalFlags(src: string): Flags {
  const flags: Flags = { i: false, m: false, s: false, x: false, a: false };
  let inClass = false;
  let classStart = -1;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (
        c === ']' &&
        i > classStart + 1 &&
        !(i === classStart + 2 && src[classStart + 1] === '^')
      ) {
        inClass = false;
      }
      continue;
    }
    if (c === '[') {
      inClass = true;
      classStart = i;
      continue;
    }
    if (c === '(' && src[i + 1] === '?') {
      if (src[i + 2] === '#') {
        const end = src.indexOf(')', i);
        if (end < 0) break;
        i = end;
        continue;
      }
      const m = /^\(\?([aiLmsux]+)\)/.exec(src.slice(i, i + 12));
      if (m?.[1] !== undefined) {
        for (const f of m[1]) {
          if (f === 'L') throw new PythonRegexError('cannot use LOCALE flag with a str pattern');
          setFlag(flags, f, true, { pos: i });
        }
      }
    }
  }
  return flags;
}

export function translatePythonRegex(pattern: string, unicode: boolean): TranslatedRegex {
  return new Translator(pattern, unicode).translate();
}

const ASCII_ONLY = /^\p{ASCII}*$/u;

/** One compiled variant (ASCII or Unicode) of a pattern, with its lazily built instrumentation. */
interface Variant {
  regex: RegExp;
  instrumented?: { regex: RegExp; repeats: Repeat[] } | null;
}

/**
 * A Python pattern compiled for JavaScript, with Python's `re.match` behaviour
 * (anchored at the start of the subject).
 *
 * A capturing group inside a repeated atom differs between the two engines: JavaScript resets
 * it at every iteration, Python keeps the value of the last iteration in which the group took
 * part (`(?:(a)|b)+` on `ab`: Python `a`, JavaScript undefined). When such a group comes back
 * unset, its Python value is recovered by replaying the iterations: an instrumented variant
 * (helper groups, `d` flag) gives each repetition's span and last iteration; the earlier
 * iterations are re-matched, last first, until one in which the group took part. Without
 * back-references in play the continuation after an iteration boundary does not depend on how
 * the boundary was reached, so the replay finds the same iterations the match went through.
 */
export class PythonRegex {
  readonly groupCount: number;
  readonly groupNames: readonly string[];
  /** Python group number → group name, for groups a repeat may reset. */
  private readonly repeatedGroups: ReadonlyMap<number, string | undefined>;
  private readonly ascii: Variant;
  private unicodeVariant: Variant | undefined;

  constructor(readonly pattern: string) {
    const t = translatePythonRegex(pattern, false);
    this.groupCount = t.groupCount;
    this.groupNames = t.groupNames;
    this.ascii = { regex: compile(t) };
    const repeated = new Map<number, string | undefined>();
    if (t.repeats.length > 0) {
      const names = new Map([...t.groupNumbers].map(([name, n]) => [n, name] as const));
      for (const r of t.repeats) {
        for (let g = r.firstGroup; g <= r.lastGroup; g++) repeated.set(g, names.get(g));
      }
    }
    this.repeatedGroups = repeated;
  }

  /** Python's `re.match(pattern, subject)`: anchored at index 0, not at the end. */
  match(subject: string, subjectIsAscii = ASCII_ONLY.test(subject)): RegExpExecArray | null {
    const variant = subjectIsAscii ? this.ascii : this.unicodeRegex();
    variant.regex.lastIndex = 0;
    const m = variant.regex.exec(subject);
    if (m === null || this.repeatedGroups.size === 0) return m;
    for (const [g, name] of this.repeatedGroups) {
      if (m[g] !== undefined) continue;
      const value = this.recover(variant, !subjectIsAscii, subject, g);
      if (value === undefined) continue;
      m[g] = value;
      if (name !== undefined && m.groups !== undefined) m.groups[name] = value;
    }
    return m;
  }

  private recover(
    variant: Variant,
    unicode: boolean,
    subject: string,
    group: number,
  ): string | undefined {
    if (variant.instrumented === undefined) {
      try {
        const t = new Translator(this.pattern, unicode, { mode: 'instrument', groupOffset: 0 });
        const r = t.translate();
        variant.instrumented = {
          regex: new RegExp(r.source, r.flags + 'dy'),
          repeats: r.repeats,
        };
      } catch {
        // a pattern the replay cannot express keeps JavaScript's value
        variant.instrumented = null;
      }
    }
    const inst = variant.instrumented;
    if (inst === null) return undefined;
    inst.regex.lastIndex = 0;
    const m = inst.regex.exec(subject);
    if (m === null) return undefined;
    try {
      return valueIn(m, inst.repeats, group, subject, unicode);
    } catch {
      return undefined;
    }
  }

  private unicodeRegex(): Variant {
    this.unicodeVariant ??= { regex: compile(translatePythonRegex(this.pattern, true)) };
    return this.unicodeVariant;
  }
}

/**
 * Python's value of `group` in an instrumented match: its own value, else the value from the
 * latest earlier iteration, searching the repeats that hold it from the innermost out.
 */
function valueIn(
  m: RegExpExecArray,
  repeats: readonly Repeat[],
  group: number,
  subject: string,
  unicode: boolean,
): string | undefined {
  const own = m.groups?.[`__g${group}`];
  if (own !== undefined) return own;
  // Repeats are recorded inner first, so this order goes from the latest iterations back.
  for (const r of repeats) {
    if (group < r.firstGroup || group > r.lastGroup) continue;
    const whole = m.indices?.groups?.[`__w${r.id}`];
    const last = m.indices?.groups?.[`__l${r.id}`];
    if (whole === undefined || last === undefined) continue;
    const found = earlierIterations(r, whole[0], last[0], group, subject, unicode);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Replays the iterations of `r` between `start` and `end` (the start of an iteration already
 * searched), last first, until one in which `group` took part.
 */
function earlierIterations(
  r: Repeat,
  start: number,
  end: number,
  group: number,
  subject: string,
  unicode: boolean,
): string | undefined {
  const offset = r.firstGroup - 1;
  const before = new Translator(r.atom, unicode, {
    mode: 'shadow',
    groupOffset: offset,
    flags: r.flags,
  }).translate();
  const atom = new Translator(r.atom, unicode, {
    mode: 'instrument',
    groupOffset: offset,
    flags: r.flags,
  }).translate();
  const lazy = r.lazy ? '?' : '';
  let limit = end;
  while (limit > start) {
    // The iterations before `limit`, the last of them captured; the lookbehind pins the end.
    const source =
      `(?:${before.source})*${lazy}(?<__last>${atom.source})` + `(?<=^[\\s\\S]{${limit}})`;
    const flags = before.flags.includes('i') || atom.flags.includes('i') ? 'i' : '';
    const re = new RegExp(source, (unicode ? 'v' : 'u') + flags + 'dy');
    re.lastIndex = start;
    const m = re.exec(subject);
    const lastStart = m?.indices?.groups?.['__last']?.[0];
    if (m === null || lastStart === undefined) return undefined;
    const found = valueIn(m, atom.repeats, group, subject, unicode);
    if (found !== undefined) return found;
    limit = lastStart;
  }
  return undefined;
}

export function isAscii(s: string): boolean {
  return ASCII_ONLY.test(s);
}

function compile(t: TranslatedRegex): RegExp {
  try {
    return new RegExp(t.source, t.flags + 'y');
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new PythonRegexError(`cannot be expressed in JavaScript (${reason})`);
  }
}
