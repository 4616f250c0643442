import type { Driver } from './driver.js';

/**
 * A Linux shell: `$`/`#` prompt that changes with the working directory (`user@host:~$`), no
 * paging (commands are not run through a pager on a dumb request), no configuration mode,
 * commit or save: config jobs run their lines as shell commands.
 */
export const linux: Driver = {
  platform: 'linux',
  loginPrompt: /[$#]\s*$/,
  loginConfirmations: [],
  basePrompt(line: string): string {
    const bare = line.trim().replace(/[$#]$/, '');
    const colon = bare.indexOf(':');
    return colon >= 0 ? bare.slice(0, colon) : bare;
  },
  promptPattern(b: string): RegExp {
    return new RegExp(`^${b}[^\\n]*[$#]\\s*$`);
  },
  enable: null,
  pagingOff: [],
  config: {
    enter: null,
    exit: [],
    abort: [],
    isConfig: () => false,
    exitConfirmations: [],
  },
  commit: null,
  save: 'none',
  errorPatterns: [
    /: command not found$/,
    /: No such file or directory$/,
    /: Permission denied$/,
    /^-?\w*sh: /,
  ],
  cleanConfigOutput: (o) => o,
};
