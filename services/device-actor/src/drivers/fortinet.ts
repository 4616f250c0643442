import type { Driver } from './driver.js';

/**
 * FortiGate (FortiOS): `R1 #` prompt (`R1 $` for read-only admins), nested `config`/`edit`
 * blocks show as `R1 (interface) #`; no configuration mode (lines run at the prompt); paging is
 * left on and answered page by page (turning it off is a configuration change); each `end`
 * writes the configuration, so there is no save and no commit.
 */
export const fortinet: Driver = {
  platform: 'fortinet',
  loginPrompt: /[#$]\s*$/,
  loginConfirmations: [],
  basePrompt(line: string): string {
    return line
      .trim()
      .replace(/[#$]$/, '')
      .trim()
      .replace(/\s*\([^)]*\)$/, '');
  },
  promptPattern(b: string): RegExp {
    return new RegExp(`^${b}(?: \\([^)\\n]*\\))? [#$]\\s*$`);
  },
  enable: null,
  // No paging-off command: `config system console / set output standard / end` would write the
  // stored configuration on every session. The reader answers `--More--` instead.
  pagingOff: [],
  config: {
    enter: null,
    exit: ['end'],
    // `abort` leaves the current block discarding its changes; repeated until the top prompt.
    abort: ['abort'],
    isConfig: (prompt) => / \([^)]*\) [#$]\s*$/.test(prompt),
    exitConfirmations: [],
  },
  commit: null,
  save: 'auto',
  errorPatterns: [
    /^Command fail\./i,
    /^command parse error/i,
    /^Unknown action/i,
    /^value parse error/i,
    /^entry not found/i,
    /^node_check_object fail/i,
  ],
  cleanConfigOutput: (o) => o,
};
