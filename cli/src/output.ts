import { stringify as toYaml } from 'yaml';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** Where a command writes: results to `out` (stdout), progress and messages to `err` (stderr). */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Whether stderr is a terminal (progress lines are drawn only then). */
  errIsTty: boolean;
  /** Whether stdout is a terminal (diffs are coloured only then). */
  outIsTty?: boolean;
}

/** A value as JSON or YAML; `table` is the caller's own rendering. */
export function structured(value: unknown, format: Exclude<OutputFormat, 'table'>): string {
  return format === 'json' ? JSON.stringify(value, null, 2) + '\n' : toYaml(value);
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'string') return v.replace(/\s+/g, ' ');
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** Rows under a header, columns padded to their widest cell. */
export function table(columns: string[], rows: Record<string, unknown>[]): string {
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (parts: string[]) =>
    parts
      .map((p, i) => (i === parts.length - 1 ? p : p.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n') + '\n';
}

/** `key: value` lines for one record. */
export function fields(record: Record<string, unknown>, keys?: string[]): string {
  const ks = keys ?? Object.keys(record);
  const width = Math.max(...ks.map((k) => k.length));
  return ks.map((k) => `${(k + ':').padEnd(width + 1)} ${cell(record[k])}`).join('\n') + '\n';
}

/** Writes `value` in the chosen format, using `asTable` for `table`. */
export function emit(io: Io, format: OutputFormat, value: unknown, asTable: () => string): void {
  io.out(format === 'table' ? asTable() : structured(value, format));
}

/**
 * One progress line on stderr, redrawn in place, only on a terminal: scripts that capture
 * stderr get no control characters.
 */
export class Progress {
  private drawn = false;
  private readonly started = Date.now();

  constructor(private readonly io: Io) {}

  update(text: string): void {
    if (!this.io.errIsTty) return;
    const secs = ((Date.now() - this.started) / 1000).toFixed(1);
    this.io.err(`\r\x1b[2K${text} (${secs}s)`);
    this.drawn = true;
  }

  done(): void {
    if (this.drawn) this.io.err('\r\x1b[2K');
    this.drawn = false;
  }
}
