import type { UserPattern } from '@svc/proto';

/**
 * Terminal emulation for the device layer: the byte stream of an interactive shell turned into
 * the text a person would see, and a linear search of user patterns in it.
 */

/** Matches one complete escape sequence at the current position (sticky). */
const ESCAPE_SEQUENCE =
  // eslint-disable-next-line no-control-regex -- terminal escapes are control characters by definition
  /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[0-9=<>]|[@-Z\\-_])/y;
/** A prefix of an escape sequence that may be completed by the next chunk. */
// eslint-disable-next-line no-control-regex -- as above
const PARTIAL_ESCAPE = /^\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*|[()])?$/;

/**
 * Incremental terminal-to-text conversion. Strips ANSI escapes (`ESC E`, "next line", becomes a
 * newline as ProCurve uses it; `ESC [ n D`, cursor back, erases like n backspaces), applies
 * backspaces, turns `\r\n` (and `\r\r\n`) into `\n`, and
 * treats a lone `\r` as "back to column 0", which devices use to wipe a paging prompt. Input that
 * could be the start of a longer sequence is held back until the next chunk decides it.
 *
 * Reading is linear in the output: every edit a terminal makes (CR, backspace, cursor back)
 * reaches only the current line, so finished lines are kept as pieces (one per chunk) that are
 * joined once, when the whole text is read; the readers look at the current line
 * ({@link lastLine}) and at the text that arrived since their last look ({@link since}).
 * {@link scanned} counts every character processed or handed to a reader.
 */
export class TerminalText {
  /** Finished lines (each ending in `\n`), one piece per chunk; joined on demand. */
  private pieces: string[] = [];
  private doneLength = 0;
  /** Whether a finished line holds anything but white space. */
  private doneHasText = false;
  /** The current, unterminated line. */
  private line = '';
  private pending = '';
  /** Characters processed by {@link push} or handed to readers since creation. */
  scanned = 0;
  /** Chunks pushed since creation. */
  chunks = 0;

  /** The normalised text accumulated so far (joins the pieces once). */
  get value(): string {
    const done = this.joined();
    this.scanned += done.length + this.line.length;
    return done + this.line;
  }

  /** Length of {@link value}, without building it. */
  get length(): number {
    return this.doneLength + this.line.length;
  }

  /** Length of the finished lines: the position just past the last `\n` (0 when none). */
  get finishedLength(): number {
    return this.doneLength;
  }

  /** The current, unterminated line (what a prompt or a question is). */
  get lastLine(): string {
    this.scanned += this.line.length;
    return this.line;
  }

  /** The last finished line without its `\n` ('' when none). */
  lastFinishedLine(): string {
    const piece = this.pieces[this.pieces.length - 1];
    if (piece === undefined) return '';
    // Pieces start at a line start: the line is inside the last piece.
    const out = piece.slice(piece.lastIndexOf('\n', piece.length - 2) + 1, piece.length - 1);
    this.scanned += out.length;
    return out;
  }

  /** Whether some finished line holds anything but white space. */
  get hasText(): boolean {
    return this.doneHasText;
  }

  /** The text from position `from` to the end, built from the last pieces only. */
  since(from: number): string {
    const start = Math.max(0, from);
    let out: string;
    let at = this.doneLength;
    if (start < at) {
      const parts: string[] = [];
      for (let i = this.pieces.length - 1; i >= 0 && at > start; i--) {
        const piece = this.pieces[i] ?? '';
        at -= piece.length;
        parts.push(at < start ? piece.slice(start - at) : piece);
      }
      out = parts.reverse().join('') + this.line;
    } else {
      out = this.line.slice(start - at);
    }
    this.scanned += out.length;
    return out;
  }

  /** The first `n` characters at most, built from the first pieces only. */
  prefix(n: number): string {
    const parts: string[] = [];
    let got = 0;
    for (const piece of this.pieces) {
      if (got >= n) break;
      parts.push(piece.length <= n - got ? piece : piece.slice(0, n - got));
      got += piece.length;
    }
    if (got < n) parts.push(this.line.slice(0, n - got));
    const out = parts.join('');
    this.scanned += out.length;
    return out;
  }

  push(chunk: string): void {
    const s = this.pending + chunk;
    this.pending = '';
    this.scanned += s.length;
    this.chunks++;
    let line = this.line;
    const finished: string[] = [];
    // Start of a run of printable characters not yet added to `line` (-1: none).
    let run = -1;
    let i = 0;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if ((c >= 0x20 && c !== 0x7f) || c === 0x09) {
        if (run < 0) run = i;
        continue;
      }
      if (run >= 0) {
        line += s.slice(run, i);
        run = -1;
      }
      if (c === 0x0a) {
        finished.push(line + '\n');
        line = '';
      } else if (c === 0x1b) {
        ESCAPE_SEQUENCE.lastIndex = i;
        const m = ESCAPE_SEQUENCE.exec(s);
        if (m === null) {
          const rest = s.slice(i);
          if (PARTIAL_ESCAPE.test(rest)) {
            this.pending = rest;
            break;
          }
          continue; // a stray ESC: drop it
        }
        if (m[0] === '\x1bE') {
          finished.push(line + '\n');
          line = '';
        }
        const back = m[0].endsWith('D') ? /^.\[(\d*)D$/.exec(m[0]) : null;
        if (back !== null) {
          // Cursor back n columns: what follows overwrites, so it erases like n backspaces
          // (Huawei and Comware wipe `---- More ----` with ESC[16D, spaces, ESC[16D).
          line = line.slice(0, Math.max(0, line.length - Number(back[1] || '1')));
        }
        i += m[0].length - 1;
      } else if (c === 0x0d) {
        let j = i;
        while (s.charCodeAt(j) === 0x0d) j++;
        if (j === s.length) {
          this.pending = s.slice(i);
          break;
        }
        if (s.charCodeAt(j) !== 0x0a) line = '';
        i = j - 1;
      } else if (c === 0x08) {
        if (line.length > 0) line = line.slice(0, -1);
      }
      // other control characters (NUL, BEL, ...) carry no text
    }
    if (run >= 0) line += s.slice(run, i);
    if (finished.length > 0) {
      const piece = finished.join('');
      this.pieces.push(piece);
      this.doneLength += piece.length;
      if (!this.doneHasText && /\S/.test(piece)) this.doneHasText = true;
    }
    this.line = line;
  }

  /** Drops the first `n` characters (text already handed out, e.g. a command's echo). */
  consume(n: number): void {
    if (n <= 0) return;
    if (n >= this.doneLength) {
      this.line = this.line.slice(n - this.doneLength);
      this.reset();
      return;
    }
    let left = n;
    while (left > 0) {
      const piece = this.pieces[0] ?? '';
      if (piece.length <= left) {
        this.pieces.shift();
        left -= piece.length;
      } else {
        this.pieces[0] = piece.slice(left);
        left = 0;
      }
    }
    this.doneLength -= n;
    this.doneHasText = this.pieces.some((p) => /\S/.test(p));
  }

  /** Removes the current, unterminated line (a paging or confirmation prompt). */
  dropLastLine(): void {
    this.line = '';
  }

  clear(): void {
    this.line = '';
    this.pending = '';
    this.reset();
  }

  private reset(): void {
    this.pieces = [];
    this.doneLength = 0;
    this.doneHasText = false;
  }

  private joined(): string {
    if (this.pieces.length > 1) this.pieces = [this.pieces.join('')];
    return this.pieces[0] ?? '';
  }
}

/**
 * Finds a user pattern (expect_string) in streaming output in linear time: each look searches
 * only what arrived since the last one, plus {@link EXPECT_OVERLAP} characters before it, so a
 * match split across chunks is still seen. A match longer than the overlap that straddles two
 * looks is not. The window starts one character early, so `\b` keeps its sense and a pattern
 * anchored with `^` (start of output) rarely matches a window's start by accident.
 */
export class OutputScanner {
  private searchedTo = 0;

  constructor(private readonly pattern: UserPattern) {}

  /** The end (a position in `text.value`) of the first match, or null. */
  find(text: TerminalText): number | null {
    const from = Math.max(0, this.searchedTo - EXPECT_OVERLAP - 1);
    this.searchedTo = text.length;
    const window = text.since(from);
    const m = this.pattern.find(window);
    return m === null ? null : from + m.end;
  }

  /** Forget what was searched (the text was consumed or cleared). */
  reset(): void {
    this.searchedTo = 0;
  }
}

/** Characters searched again before new output (a match split across chunks). */
export const EXPECT_OVERLAP = 8192;

/** Applies {@link TerminalText} to a whole string at once. */
export function normalizeTerminalText(raw: string): string {
  const t = new TerminalText();
  t.push(raw);
  // A trailing lone CR is pending by design; at end of input it has nothing left to erase.
  return t.value;
}
