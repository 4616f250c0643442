import { ciscoLike, keepOutput, type Driver } from './driver.js';

/** Arista EOS: a Cisco-like CLI; `write memory` prints `Copy completed successfully.` */
export const aristaEos: Driver = {
  platform: 'arista_eos',
  loginPrompt: ciscoLike.loginPrompt,
  loginConfirmations: [],
  basePrompt: ciscoLike.basePrompt,
  promptPattern: ciscoLike.promptPattern,
  enable: { command: 'enable', isEnabled: ciscoLike.isEnabled, passwordPrompt: /[Pp]assword:\s*$/ },
  pagingOff: ['terminal length 0', 'terminal width 32767'],
  config: {
    enter: 'configure terminal',
    exit: ['end'],
    abort: ['end'],
    isConfig: ciscoLike.isConfig,
    exitConfirmations: [],
  },
  // EOS has commit only inside named configuration sessions, which jobs do not use.
  commit: null,
  save: { command: 'write memory', confirmations: [] },
  errorPatterns: [
    /^%\s*Invalid input/i,
    /^%\s*Incomplete command/i,
    /^%\s*Ambiguous command/i,
    /^%\s*Unrecognized command/i,
    /^%\s*Error/i,
  ],
  cleanConfigOutput: keepOutput,
};
