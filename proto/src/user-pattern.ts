import { RE2JS } from 're2js';

/**
 * Most instructions a user pattern may compile to. Matching is linear in the output but its
 * constant grows with the program: `[^x]{1000}` is about 1000 instructions, and its first search
 * of 100 KB took 0.4 s (bench/src/regex-bench.ts). At this bound the slowest measured search of
 * 100 KB stays in the tens of milliseconds; prompt-like patterns are 5 to 50 instructions.
 */
export const MAX_PATTERN_PROGRAM = 200;

/** Why a pattern cannot be used, phrased for the person who wrote it. */
export class PatternError extends Error {
  override readonly name = 'PatternError';
}

/** Where a pattern matched: `text.slice(index, end)`. */
export interface PatternMatch {
  index: number;
  end: number;
}

/**
 * A regular expression supplied by a user (`expect_string`), matched in linear time by an RE2
 * engine (re2js, pure JavaScript): whatever the pattern and the device output, a search costs
 * time proportional to the output, so no pattern can stall the event loop the way a backtracking
 * `RegExp` can (`^(.|.)*Z` took seconds on one line). Constructs that need backtracking
 * (backreferences, lookahead, lookbehind, possessive quantifiers) are refused at compile time,
 * and so is a pattern whose program is larger than {@link MAX_PATTERN_PROGRAM}.
 *
 * Syntax is RE2's, which is JavaScript's for everyday patterns; differences: `\s` and `\d` are
 * ASCII only, and flags are inline (`(?i)`, `(?m)`, `(?s)`).
 */
export class UserPattern {
  private constructor(
    readonly source: string,
    private readonly re: RE2JS,
  ) {}

  /** Compiles `source`, or throws a {@link PatternError} that says why it cannot be used. */
  static compile(source: string): UserPattern {
    let re: RE2JS;
    try {
      re = RE2JS.compile(source);
    } catch (err) {
      const why = err instanceof Error ? err.message.replace(/^error parsing regexp: /, '') : '';
      throw new PatternError(
        `not a supported regular expression (${why}); RE2 syntax: no backreferences or lookaround`,
      );
    }
    const size = programSize(re);
    if (size > MAX_PATTERN_PROGRAM) {
      throw new PatternError(
        `pattern too complex: it compiles to ${size} instructions, at most ${MAX_PATTERN_PROGRAM} (use smaller repeat counts)`,
      );
    }
    return new UserPattern(source, re);
  }

  /** The reason `source` cannot be used, or null when it can. */
  static problem(source: string): string | null {
    try {
      UserPattern.compile(source);
      return null;
    } catch (err) {
      return err instanceof PatternError ? err.message : String(err);
    }
  }

  /** The leftmost match in `text`, or null. */
  find(text: string): PatternMatch | null {
    // The boolean search runs on the engine's DFA, much faster than a search that reports the
    // match position (measured 10-25x on 100 KB); most calls find nothing while output streams in.
    if (!this.re.test(text)) return null;
    const m = this.re.matcher(text);
    if (!m.find()) return null;
    return { index: m.start(), end: m.end() };
  }
}

function programSize(re: RE2JS): number {
  // The compiled program's instruction list (typed `any` by the package).
  const prog = re.re2().prog as { inst?: unknown[] } | undefined;
  return prog?.inst?.length ?? 0;
}
