// Templates carry Python-literal syntax in three places: function arguments
// (`set(False)`, `re(r"\S+")`), `<vars>`/`<lookup>` bodies (`a = {"x": 1}`) and
// group attributes (`to_int="mtu, intlist=True"`). TTP evaluates them with
// Python's eval, resolving unknown bare names to their own spelling; this module
// parses the literal subset safely instead of evaluating anything.
import { TtpErrorCode, TtpTemplateError } from './errors.js';
import { IpValue } from './ip-value.js';

/** One `name(args, kw=value)` item of a `|`-separated chain. */
export interface CallSpec {
  name: string;
  args: unknown[];
  kwargs: Record<string, unknown>;
}

type Token =
  | { t: 'str'; v: string }
  | { t: 'num'; v: number }
  | { t: 'name'; v: string }
  | { t: 'op'; v: string }
  | { t: 'nl' }
  | { t: 'eof' };

const SIMPLE_ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '0': '\0',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
};

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  let depth = 0;
  while (i < src.length) {
    const c = src[i] as string;
    if (c === '#') {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    if (c === '\n') {
      // newlines only separate statements outside brackets, as in Python
      if (depth === 0) out.push({ t: 'nl' });
      i++;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\\') {
      i++;
      continue;
    }
    const strStart = /^([rRuUbBfF]{0,2})(['"])/.exec(src.slice(i, i + 4));
    const prevIsWord = i > 0 && /\w/.test(src[i - 1] as string);
    if (strStart && !(prevIsWord && strStart[1] !== '')) {
      const prefix = (strStart[1] ?? '').toLowerCase();
      const quote = strStart[2] as string;
      i += prefix.length;
      const triple = src.startsWith(quote.repeat(3), i);
      const delim = triple ? quote.repeat(3) : quote;
      i += delim.length;
      let value = '';
      const raw = prefix.includes('r');
      while (i < src.length && !src.startsWith(delim, i)) {
        const ch = src[i] as string;
        if (ch === '\\' && i + 1 < src.length) {
          const nx = src[i + 1] as string;
          if (raw) {
            value += ch + nx;
          } else if (nx in SIMPLE_ESCAPES) {
            value += SIMPLE_ESCAPES[nx];
          } else if (nx === '\n') {
            value += '';
          } else {
            // Python keeps unknown escapes such as "\d" verbatim
            value += ch + nx;
          }
          i += 2;
          continue;
        }
        value += ch;
        i++;
      }
      i += delim.length;
      out.push({ t: 'str', v: value });
      continue;
    }
    const num = /^(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?/.exec(src.slice(i));
    if (num) {
      out.push({ t: 'num', v: Number(num[0]) });
      i += num[0].length;
      continue;
    }
    const name = /^[A-Za-z_][\w.]*/.exec(src.slice(i));
    if (name) {
      out.push({ t: 'name', v: name[0] });
      i += name[0].length;
      continue;
    }
    if ('([{'.includes(c)) depth++;
    if (')]}'.includes(c)) depth = Math.max(0, depth - 1);
    out.push({ t: 'op', v: c });
    i++;
  }
  out.push({ t: 'eof' });
  return out;
}

class LiteralParser {
  private pos = 0;
  constructor(
    private readonly toks: Token[],
    private readonly source: string,
  ) {}

  peek(): Token {
    return this.toks[this.pos] ?? { t: 'eof' };
  }
  next(): Token {
    const tok = this.peek();
    this.pos++;
    return tok;
  }
  isOp(v: string): boolean {
    const tok = this.peek();
    return tok.t === 'op' && tok.v === v;
  }
  expectOp(v: string): void {
    if (!this.isOp(v)) this.fail(`expected '${v}'`);
    this.pos++;
  }
  fail(why: string): never {
    throw new TtpTemplateError(
      TtpErrorCode.InvalidTemplate,
      `cannot parse '${this.source}': ${why}`,
    );
  }

  expr(): unknown {
    const tok = this.next();
    switch (tok.t) {
      case 'str': {
        let v = tok.v;
        // adjacent string literals concatenate
        while (this.peek().t === 'str') v += (this.next() as { v: string }).v;
        return v;
      }
      case 'num':
        return tok.v;
      case 'name':
        return resolveName(tok.v);
      case 'op':
        if (tok.v === '-' || tok.v === '+') {
          const n = this.expr();
          if (typeof n !== 'number') this.fail('sign before non-number');
          return tok.v === '-' ? -n : n;
        }
        if (tok.v === '[') return this.sequence(']');
        if (tok.v === '(') {
          const items = this.sequence(')', true);
          return items;
        }
        if (tok.v === '{') return this.dictOrSet();
        return this.fail(`unexpected '${tok.v}'`);
      case 'nl':
      case 'eof':
        return this.fail('unexpected end');
    }
  }

  private sequence(close: string, paren = false): unknown {
    const items: unknown[] = [];
    let sawComma = false;
    while (!this.isOp(close)) {
      items.push(this.expr());
      if (this.isOp(',')) {
        this.pos++;
        sawComma = true;
      } else break;
    }
    this.expectOp(close);
    // `(x)` is just x in Python, `(x,)` a tuple
    if (paren && items.length === 1 && !sawComma) return items[0];
    return items;
  }

  private dictOrSet(): unknown {
    const obj: Record<string, unknown> = {};
    const setItems: unknown[] = [];
    let isSet = false;
    while (!this.isOp('}')) {
      const key = this.expr();
      if (this.isOp(':')) {
        this.pos++;
        obj[pyStr(key)] = this.expr();
      } else {
        isSet = true;
        setItems.push(key);
      }
      if (this.isOp(',')) this.pos++;
      else break;
    }
    this.expectOp('}');
    return isSet ? setItems : obj;
  }

  callArgs(): { args: unknown[]; kwargs: Record<string, unknown> } {
    const args: unknown[] = [];
    const kwargs: Record<string, unknown> = {};
    while (this.peek().t !== 'eof') {
      const tok = this.peek();
      const after = this.toks[this.pos + 1];
      if (tok.t === 'name' && after?.t === 'op' && after.v === '=') {
        this.pos += 2;
        kwargs[tok.v] = this.expr();
      } else {
        args.push(this.expr());
      }
      if (this.isOp(',')) this.pos++;
      else break;
    }
    if (this.peek().t !== 'eof') this.fail('trailing input');
    return { args, kwargs };
  }

  /** A whole text that is one expression, such as a dict literal over several lines. */
  expression(): unknown {
    while (this.peek().t === 'nl') this.pos++;
    const value = this.expr();
    while (this.peek().t === 'nl') this.pos++;
    if (this.peek().t !== 'eof') this.fail('trailing input');
    return value;
  }

  /** True when the text starts with `name =`, as assignment statements do. */
  startsWithAssignment(): boolean {
    let i = this.pos;
    while (this.toks[i]?.t === 'nl') i++;
    const first = this.toks[i];
    const second = this.toks[i + 1];
    return first?.t === 'name' && second?.t === 'op' && second.v === '=';
  }

  assignments(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    while (this.peek().t !== 'eof') {
      if (this.peek().t === 'nl') {
        this.pos++;
        continue;
      }
      const name = this.next();
      if (name.t !== 'name') this.fail('expected a variable name');
      this.expectOp('=');
      out[name.v] = this.expr();
      const end = this.peek();
      if (end.t !== 'nl' && end.t !== 'eof') this.fail('expected end of line');
    }
    return out;
  }
}

function resolveName(name: string): unknown {
  if (name === 'True' || name === 'true') return true;
  if (name === 'False' || name === 'false') return false;
  if (name === 'None') return null;
  // TTP resolves unknown names to their spelling: set(up) means set("up")
  return name;
}

/** Parses the text between the parentheses of a call into args and kwargs. */
export function parseCallArgs(src: string): { args: unknown[]; kwargs: Record<string, unknown> } {
  return new LiteralParser(tokenize(src), src).callArgs();
}

/**
 * TTP's python loader: `name = literal` statements give a dict of names; a text without
 * assignments is evaluated as one expression (a dict literal is the whole table).
 */
export function parsePythonData(src: string): unknown {
  const parser = new LiteralParser(tokenize(src), src);
  return parser.startsWithAssignment() ? parser.assignments() : parser.expression();
}

/** Splits on `sep` outside quotes and brackets. */
export function splitTopLevel(line: string, sep: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote = '';
  let cur = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (quote) {
      if (c === '\\') {
        cur += c + (line[i + 1] ?? '');
        i++;
        continue;
      }
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if ('([{'.includes(c)) {
      depth++;
    } else if (')]}'.includes(c)) {
      depth--;
    } else if (c === sep && depth === 0) {
      parts.push(cur);
      cur = '';
      continue;
    }
    cur += c;
  }
  parts.push(cur);
  return parts;
}

/** TTP's get_attributes: `"name | fn | fn(1, k=2)"` to a list of calls. */
export function parseChain(line: string): CallSpec[] {
  return splitTopLevel(line, '|').map((raw) => {
    const item = raw.trim();
    const m = /^(\S+?)\s?(\((.*)\))?$/s.exec(item);
    if (!m) return { name: item, args: [], kwargs: {} };
    const name = m[1] as string;
    const options = m[3];
    if (options === undefined || options.trim() === '') return { name, args: [], kwargs: {} };
    return { name, ...parseCallArgs(options) };
  });
}

/** Python's str() for the values a template can produce. */
export function pyStr(v: unknown): string {
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return pyNumStr(v);
  if (v instanceof IpValue) return v.toString();
  return pyRepr(v);
}

function pyNumStr(n: number): string {
  return String(n);
}

/** Python's repr() for plain data, used by the jinja2 `{{ _data_ }}` formatter. */
export function pyRepr(v: unknown): string {
  if (typeof v === 'string') {
    const q = v.includes("'") && !v.includes('"') ? '"' : "'";
    const body = v
      .replace(/\\/g, '\\\\')
      .replace(/\n/g, '\\n')
      .replace(/\t/g, '\\t')
      .replace(/\r/g, '\\r');
    return q + (q === "'" ? body.replace(/'/g, "\\'") : body) + q;
  }
  if (Array.isArray(v)) return '[' + v.map(pyRepr).join(', ') + ']';
  if (v !== null && typeof v === 'object') {
    if (v instanceof IpValue) return `'${v.toString()}'`;
    return (
      '{' +
      Object.entries(v as Record<string, unknown>)
        .map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`)
        .join(', ') +
      '}'
    );
  }
  return pyStr(v);
}
