import { ciscoLike, keepOutput, type Driver } from './driver.js';

/** Aruba AOS-CX: administrators land at `#`; `no page`; `write memory`. */
export const arubaAoscx: Driver = {
  platform: 'aruba_aoscx',
  loginPrompt: ciscoLike.loginPrompt,
  loginConfirmations: [],
  basePrompt: ciscoLike.basePrompt,
  promptPattern: ciscoLike.promptPattern,
  enable: { command: 'enable', isEnabled: ciscoLike.isEnabled, passwordPrompt: /[Pp]assword:\s*$/ },
  pagingOff: ['no page'],
  config: {
    enter: 'configure terminal',
    exit: ['end'],
    abort: ['end'],
    isConfig: ciscoLike.isConfig,
    exitConfirmations: [],
  },
  commit: null,
  save: { command: 'write memory', confirmations: [] },
  errorPatterns: [
    /^Invalid input:/i,
    /^%\s*Invalid input/i,
    /^%?\s*Command incomplete/i,
    /^Ambiguous command/i,
    /^Incomplete command/i,
  ],
  cleanConfigOutput: keepOutput,
};
