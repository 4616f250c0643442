import type { Driver } from './driver.js';

/**
 * Juniper Junos: `user@host>` operational and `user@host#` configuration prompts, `[edit ...]`
 * printed before each configuration prompt, `set cli screen-length 0`, changes applied by
 * `commit` (which also persists them), `rollback 0` to discard a failed candidate.
 */
export const juniperJunos: Driver = {
  platform: 'juniper_junos',
  loginPrompt: /[>#%]\s*$/,
  loginConfirmations: [],
  basePrompt(line: string): string {
    return line.trim().replace(/[>#%]$/, '');
  },
  promptPattern(b: string): RegExp {
    return new RegExp(`^${b}[>#%]\\s*$`);
  },
  enable: null,
  pagingOff: ['set cli screen-length 0', 'set cli screen-width 511'],
  config: {
    enter: 'configure',
    exit: ['exit configuration-mode'],
    abort: ['rollback 0', 'exit configuration-mode'],
    isConfig: (prompt) => /#\s*$/.test(prompt),
    exitConfirmations: [
      {
        pattern: /Exit with uncommitted changes\?\s*\[yes,no\]\s*(?:\(\w+\))?\s*$/i,
        answer: 'yes\n',
      },
    ],
  },
  commit: { command: 'commit', confirmations: [] },
  save: 'commit',
  // Chassis and cluster contexts (`{master:0}`, `{backup:1}`, `{primary:node0}`,
  // `{secondary:node1}`, `{linecard:1}`) and the configuration path, alone or together.
  contextLines: [
    /^\{(?:master|backup|primary|secondary|linecard|line|hold|ineligible)(?::[\w-]+)?\}(?:\[edit(?: [^\]]*)?\])?$/i,
    /^\[edit(?: [^\]]*)?\]$/,
  ],
  errorPatterns: [
    /^syntax error/i,
    /^unknown command/i,
    /^error:/i,
    /^missing argument/i,
    /^invalid (?:value|interface|ip address|input)/i,
  ],
  cleanConfigOutput(output: string): string {
    return output
      .split('\n')
      .filter(
        (l) => !/^\s*\[edit(?: [^\]]*)?\]\s*$/.test(l) && !/^\{\w+(?::\d+)?\}$/.test(l.trim()),
      )
      .join('\n')
      .replace(/\n+$/, '')
      .replace(/^\n+/, '');
  },
};
