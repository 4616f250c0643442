import { keepOutput, type Driver } from './driver.js';

/**
 * Huawei VRP: `<R1>` user view, `[R1]` / `[R1-GigabitEthernet0/0/1]` system views,
 * `screen-length 0 temporary`, `system-view` / `return`, `save` asking `[Y/N]`, errors as
 * `Error: Unrecognized command found at '^' position.`
 */
export const huawei: Driver = {
  platform: 'huawei',
  loginPrompt: /[>\]]\s*$/,
  loginConfirmations: [],
  basePrompt(line: string): string {
    return line
      .trim()
      .replace(/^[<[][~*]*/, '')
      .replace(/[>\]]$/, '');
  },
  promptPattern(b: string): RegExp {
    return new RegExp(`^(?:<${b}>|\\[[~*]*${b}(?:-[^\\]\\n]*)?\\])\\s*$`);
  },
  enable: null,
  pagingOff: ['screen-length 0 temporary'],
  config: {
    enter: 'system-view',
    exit: ['return'],
    abort: ['return'],
    isConfig: (prompt) => /^\[/.test(prompt.trim()),
    exitConfirmations: [],
  },
  commit: null,
  save: {
    command: 'save',
    confirmations: [
      { pattern: /\[Y\/N\]\s*:?\s*$/i, answer: 'y\n' },
      { pattern: /file name.*\]\s*:?\s*$/i, answer: '\n' },
    ],
  },
  errorPatterns: [/^\s*Error:/],
  cleanConfigOutput: keepOutput,
};
