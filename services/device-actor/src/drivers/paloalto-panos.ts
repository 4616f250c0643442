import type { Driver } from './driver.js';

/**
 * Palo Alto PAN-OS: `admin@PA-VM>` operational, `admin@PA-VM#` configuration (after
 * `configure`, with `[edit]` lines), `set cli pager off`, no enable, `commit` persists the
 * candidate. PAN-OS candidates outlive the session, so a failed job runs `revert config`.
 */
export const paloaltoPanos: Driver = {
  platform: 'paloalto_panos',
  loginPrompt: /[>#]\s*$/,
  loginConfirmations: [],
  basePrompt(line: string): string {
    return line
      .trim()
      .replace(/[>#]$/, '')
      .replace(/\([^)]*\)$/, '');
  },
  promptPattern(b: string): RegExp {
    return new RegExp(`^${b}(?:\\([^)\\n]*\\))?[>#]\\s*$`);
  },
  enable: null,
  pagingOff: ['set cli pager off'],
  config: {
    enter: 'configure',
    exit: ['exit'],
    abort: ['revert config', 'exit'],
    isConfig: (prompt) => /#\s*$/.test(prompt),
    exitConfirmations: [{ pattern: /uncommitted changes.*\[yes\/no\]\s*:?\s*$/i, answer: 'yes\n' }],
  },
  commit: { command: 'commit', confirmations: [] },
  save: 'commit',
  errorPatterns: [
    /^Invalid syntax\.?/i,
    /^Unknown command:/i,
    /^Validation Error:/i,
    /^Server error/i,
    /^Commit failed/i,
  ],
  cleanConfigOutput(output: string): string {
    return output
      .split('\n')
      .filter((l) => !/^\s*\[edit(?: [^\]]*)?\]\s*$/.test(l))
      .join('\n')
      .replace(/\n+$/, '')
      .replace(/^\n+/, '');
  },
};
