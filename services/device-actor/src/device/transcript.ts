import type { Transcript, TranscriptEntry } from '@svc/proto';
import { redactValues } from './redaction.js';
import { maskSecretSyntax } from './secret-syntax.js';

/** Where a session's bytes are reported as they pass (set on the SSH session of one job). */
export interface SessionTap {
  sent(data: string): void;
  received(data: string): void;
}

/**
 * Terminal control sequences (CSI, OSC, other ESC pairs) and control characters other than
 * tab, line feed and carriage return: noise in a transcript, and escapes that would grow its
 * JSON six-fold.
 */
const CONTROL =
  // eslint-disable-next-line no-control-regex
  /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g;

interface Entry {
  at: string;
  dir: 'sent' | 'received';
  data: string;
}

/**
 * A job's device session as it passes: received chunks are joined until the next send, so each
 * device answer is one entry (and a secret echoed in two chunks is still redacted whole).
 * Bounded: the first half of the cap is kept from the start, the second half is a window on
 * the end (where the failing exchange is), and what falls between is counted, not kept.
 */
export class TranscriptRecorder implements SessionTap {
  private readonly head: Entry[] = [];
  private headChars = 0;
  private headFull = false;
  private readonly tail: Entry[] = [];
  private tailChars = 0;
  private omitted = 0;
  private readonly half: number;

  constructor(
    private readonly maxChars: number,
    private readonly secrets: readonly (string | null | undefined)[],
    private readonly now: () => Date = () => new Date(),
  ) {
    this.half = Math.floor(maxChars / 2);
  }

  get isEmpty(): boolean {
    return this.head.length === 0;
  }

  sent(data: string): void {
    this.add('sent', data);
  }

  received(data: string): void {
    this.add('received', data);
  }

  private add(dir: Entry['dir'], raw: string): void {
    const data = raw.replace(CONTROL, '');
    if (data === '') return;
    if (!this.headFull) {
      const last = this.head.at(-1);
      const room = this.half - this.headChars;
      const taken = data.slice(0, room);
      if (last && last.dir === dir) last.data += taken;
      else this.head.push({ at: this.now().toISOString(), dir, data: taken });
      this.headChars += taken.length;
      if (taken.length === data.length) return;
      this.headFull = true;
      this.tail.push({ at: this.now().toISOString(), dir, data: data.slice(room) });
      this.tailChars += data.length - room;
    } else {
      const last = this.tail.at(-1);
      if (last && last.dir === dir) last.data += data;
      else this.tail.push({ at: this.now().toISOString(), dir, data });
      this.tailChars += data.length;
    }
    // Keep the window on the end within its half.
    while (this.tailChars > this.half && this.tail.length > 0) {
      const first = this.tail[0]!;
      const excess = this.tailChars - this.half;
      if (first.data.length <= excess) {
        this.tail.shift();
        this.tailChars -= first.data.length;
        this.omitted += first.data.length;
      } else {
        first.data = first.data.slice(excess);
        this.tailChars -= excess;
        this.omitted += excess;
      }
    }
  }

  /**
   * The transcript as stored: redacted (the secrets given at construction and `more`, such as
   * key passphrases and jump-host credentials known only later, and every secret the syntax of
   * `platform`'s family shows; unknown or absent: every family's), in order, with what the cap
   * dropped.
   */
  toTranscript(
    jobId: string,
    more: readonly string[] = [],
    platform: string | null = null,
  ): Transcript {
    const secrets = [...this.secrets, ...more];
    const redact = (e: Entry): TranscriptEntry => ({
      at: e.at,
      dir: e.dir,
      data: maskSecretSyntax(redactValues(e.data, secrets), platform),
    });
    const entries = [...this.head, ...this.tail].map(redact);
    return {
      job_id: jobId,
      entries,
      truncated: this.omitted > 0,
      omitted_chars: this.omitted,
      max_chars: this.maxChars,
    };
  }
}
