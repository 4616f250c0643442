// A small XML reader with ElementTree's shape (text before the first child,
// tail after each child), enough for TTP templates. Node has no XML parser
// built in and we take no dependencies.

export interface XmlElement {
  tag: string;
  /** Attributes in document order: TTP runs group functions in that order. */
  attrib: Array<[string, string]>;
  text: string;
  tail: string;
  children: XmlElement[];
}

export class XmlSyntaxError extends Error {
  override readonly name = 'XmlSyntaxError';
}

const NAME_RE = /^[A-Za-z_][\w.\-:]*/;

function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#\d+|lt|gt|amp|quot|apos);/g, (_m, e: string) => {
    switch (e) {
      case 'lt':
        return '<';
      case 'gt':
        return '>';
      case 'amp':
        return '&';
      case 'quot':
        return '"';
      case 'apos':
        return "'";
      default:
        return String.fromCodePoint(
          e.startsWith('#x') ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10),
        );
    }
  });
}

class Reader {
  pos = 0;
  constructor(private readonly src: string) {}

  fail(why: string): never {
    throw new XmlSyntaxError(`${why} at offset ${this.pos}`);
  }

  /** Reads text and child elements until `</closeTag>` (or end when closeTag is null). */
  content(parent: XmlElement, closeTag: string | null): void {
    let buf = '';
    let last: XmlElement | null = null;
    const flush = (): void => {
      const txt = decodeEntities(buf);
      if (last) last.tail += txt;
      else parent.text += txt;
      buf = '';
    };
    const src = this.src;
    while (this.pos < src.length) {
      const lt = src.indexOf('<', this.pos);
      if (lt === -1) {
        buf += src.slice(this.pos);
        this.pos = src.length;
        break;
      }
      buf += src.slice(this.pos, lt);
      this.pos = lt;
      if (src.startsWith('<!--', lt)) {
        const end = src.indexOf('-->', lt + 4);
        if (end === -1) this.fail('unterminated comment');
        this.pos = end + 3;
        continue;
      }
      if (src.startsWith('<![CDATA[', lt)) {
        const end = src.indexOf(']]>', lt);
        if (end === -1) this.fail('unterminated CDATA');
        flush();
        const raw = src.slice(lt + 9, end);
        if (last) last.tail += raw;
        else parent.text += raw;
        this.pos = end + 3;
        continue;
      }
      if (src.startsWith('<?', lt)) {
        const end = src.indexOf('?>', lt);
        if (end === -1) this.fail('unterminated processing instruction');
        this.pos = end + 2;
        continue;
      }
      if (src.startsWith('</', lt)) {
        const m = NAME_RE.exec(src.slice(lt + 2));
        const gt = src.indexOf('>', lt);
        if (!m || gt === -1) this.fail('bad closing tag');
        if (m[0] !== closeTag) this.fail(`mismatched closing tag </${m[0]}>`);
        flush();
        this.pos = gt + 1;
        return;
      }
      const m = NAME_RE.exec(src.slice(lt + 1));
      if (!m) this.fail("'<' not starting a tag");
      flush();
      const child = this.element(m[0]);
      parent.children.push(child);
      last = child;
    }
    flush();
    if (closeTag !== null) this.fail(`missing </${closeTag}>`);
  }

  element(tag: string): XmlElement {
    const src = this.src;
    this.pos += 1 + tag.length;
    const el: XmlElement = { tag, attrib: [], text: '', tail: '', children: [] };
    for (;;) {
      while (/\s/.test(src[this.pos] ?? '')) this.pos++;
      if (src.startsWith('/>', this.pos)) {
        this.pos += 2;
        return el;
      }
      if (src[this.pos] === '>') {
        this.pos++;
        this.content(el, tag);
        return el;
      }
      const nm = NAME_RE.exec(src.slice(this.pos));
      if (!nm) this.fail(`bad attribute in <${tag}>`);
      this.pos += nm[0].length;
      while (/\s/.test(src[this.pos] ?? '')) this.pos++;
      if (src[this.pos] !== '=') this.fail(`attribute ${nm[0]} without value`);
      this.pos++;
      while (/\s/.test(src[this.pos] ?? '')) this.pos++;
      const q = src[this.pos];
      if (q !== '"' && q !== "'") this.fail(`unquoted attribute ${nm[0]}`);
      const end = src.indexOf(q, this.pos + 1);
      if (end === -1) this.fail('unterminated attribute value');
      // XML normalises whitespace characters in attribute values to spaces
      const value = decodeEntities(src.slice(this.pos + 1, end).replace(/[\t\n\r]/g, ' '));
      el.attrib.push([nm[0], value]);
      this.pos = end + 1;
    }
  }
}

/** Parses a document that must hold exactly one root element (ElementTree's XML()). */
export function parseXmlDocument(src: string): XmlElement {
  const holder: XmlElement = { tag: '#doc', attrib: [], text: '', tail: '', children: [] };
  new Reader(src).content(holder, null);
  const rootText = holder.text + holder.children.map((c) => c.tail).join('');
  if (holder.children.length !== 1 || rootText.trim() !== '') {
    throw new XmlSyntaxError('document must have exactly one root element');
  }
  const root = holder.children[0] as XmlElement;
  root.tail = '';
  return root;
}

export function getAttr(el: XmlElement, name: string): string | undefined {
  for (const [k, v] of el.attrib) if (k === name) return v;
  return undefined;
}
