/**
 * Paging prompts: what a device prints when output fills its screen, and the key that moves on.
 */

/** A paging prompt and the key that moves past it. */
export interface Pager {
  pattern: RegExp;
  answer: string;
}

/**
 * Paging prompts seen on the supported platforms, matched against the last (unterminated)
 * line only. Drivers turn paging off at login; these are the fallback when that did not work.
 */
export const PAGERS: readonly Pager[] = [
  // IOS/NX-OS/EOS ` --More-- `, ASA `<--- More --->`, Huawei `  ---- More ----`, FortiOS `--More--`
  { pattern: /^\s*<?-{2,}\s*more\s*-{2,}>?\s*$/i, answer: ' ' },
  // ProCurve / AOS-CX `-- MORE --, next page: Space, next line: Enter, quit: Control-C`
  { pattern: /^\s*-{2,}\s*more\s*-{2,},\s*next page:.*$/i, answer: ' ' },
  // Junos `---(more)---`, `---(more 45%)---`
  { pattern: /^\s*-{2,}\s*\(\s*more(?:\s+\d+%)?\s*\)\s*-{2,}\s*$/i, answer: ' ' },
  // less at the end of its input (PAN-OS): space would not leave it
  { pattern: /^\s*(?:lines\s+\d+-\d+(?:\/\d+)?\s*)?\(END\)\s*$/, answer: 'q' },
  // less in the middle of its input (PAN-OS `lines 1-40 `)
  { pattern: /^\s*lines\s+\d+-\d+(?:\/\d+)?\s*$/, answer: ' ' },
];

/** Returns the pager whose prompt is `line`, if any. */
export function matchPager(line: string): Pager | undefined {
  if (line.length === 0 || line.length > 120) return undefined;
  return PAGERS.find((p) => p.pattern.test(line));
}
