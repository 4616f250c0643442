import { ciscoLike, keepOutput, type Driver } from './driver.js';

/**
 * HP ProCurve / ArubaOS-Switch: "Press any key to continue" after login, `no page`, an enable
 * that asks for a user name and a password, errors as `Invalid input: <word>`, heavy use of
 * ANSI cursor sequences (handled by the terminal reader).
 */
export const hpProcurve: Driver = {
  platform: 'hp_procurve',
  loginPrompt: ciscoLike.loginPrompt,
  loginConfirmations: [{ pattern: /Press any key to continue/i, answer: '\n' }],
  basePrompt: ciscoLike.basePrompt,
  promptPattern: ciscoLike.promptPattern,
  enable: {
    command: 'enable',
    isEnabled: ciscoLike.isEnabled,
    usernamePrompt: /Username:\s*$/i,
    passwordPrompt: /Password:\s*$/i,
  },
  pagingOff: ['no page'],
  config: {
    enter: 'configure terminal',
    exit: ['end'],
    abort: ['end'],
    // Submodes drop the word "config": `R1(config)#`, `R1(eth-1)#`, `R1(vlan-10)#`.
    isConfig: (prompt) => /\([^)]*\)#\s*$/.test(prompt),
    exitConfirmations: [],
  },
  commit: null,
  save: { command: 'write memory', confirmations: [] },
  errorPatterns: [
    /^Invalid input:/i,
    /^Ambiguous input:/i,
    /^Incomplete input:/i,
    /^Unknown command/i,
  ],
  cleanConfigOutput: keepOutput,
};
