import { ciscoLike, keepOutput, type Confirmation, type Driver } from './driver.js';

/**
 * Cisco IOS, IOS-XE, IOS-XR, NX-OS and ASA. Facts from Cisco's command references and the
 * public netmiko drivers: IOS/XE/ASA log in at `>` and need `enable`; NX-OS and XR log in
 * privileged; XR and (optionally) nothing else here has a commit; paging off is
 * `terminal length 0` except on ASA (`terminal pager 0`, which needs enable first).
 */

/** Errors the Cisco CLIs print, each starting with '%' (ASA prefixes `ERROR: `). */
export const CISCO_ERRORS: readonly RegExp[] = [
  /^%\s*Invalid input/i,
  /^%\s*Incomplete command/i,
  /^%\s*Ambiguous command/i,
  /^%\s*Unknown command/i,
  /^%\s*Unrecognized command/i,
  /^%\s*Invalid (?:command|parameter)/i,
  /^%\s*Bad (?:mask|IP address|secrets)/i,
  /^%\s*Error/i,
  /^ERROR:/,
  /^Command rejected:/,
];

/** Save confirmations of `copy running-config startup-config` and `write memory`. */
const SAVE_CONFIRMATIONS: readonly Confirmation[] = [
  { pattern: /Destination filename \[[^\]]*\]\?\s*$/, answer: '\n' },
  { pattern: /\[confirm\]\s*$/, answer: '\n' },
];

const iosBase = {
  loginPrompt: ciscoLike.loginPrompt,
  loginConfirmations: [],
  basePrompt: ciscoLike.basePrompt,
  promptPattern: ciscoLike.promptPattern,
  enable: {
    command: 'enable',
    isEnabled: ciscoLike.isEnabled,
    passwordPrompt: /[Pp]assword:\s*$/,
  },
  pagingOff: ['terminal length 0', 'terminal width 511'],
  config: {
    enter: 'configure terminal',
    exit: ['end'],
    abort: ['end'],
    isConfig: ciscoLike.isConfig,
    exitConfirmations: [],
  },
  commit: null,
  errorPatterns: CISCO_ERRORS,
  cleanConfigOutput: keepOutput,
} as const;

export const ciscoIos: Driver = {
  ...iosBase,
  platform: 'cisco_ios',
  save: { command: 'write memory', confirmations: SAVE_CONFIRMATIONS },
};

export const ciscoXe: Driver = {
  ...iosBase,
  platform: 'cisco_xe',
  save: { command: 'copy running-config startup-config', confirmations: SAVE_CONFIRMATIONS },
};

export const ciscoXr: Driver = {
  ...iosBase,
  platform: 'cisco_xr',
  // XR users land in privileged exec; there is no enable.
  enable: null,
  config: {
    enter: 'configure terminal',
    exit: ['end'],
    // `abort` discards the target configuration and leaves configuration mode in one step.
    abort: ['abort'],
    isConfig: ciscoLike.isConfig,
    exitConfirmations: [
      // `end` with uncommitted changes asks; the job commits explicitly, so answer "no".
      { pattern: /Uncommitted changes found.*\?\s*(?:\[cancel\])?:?\s*$/i, answer: 'no\n' },
    ],
  },
  commit: { command: 'commit', confirmations: [] },
  // Leaving without a commit discards the target configuration.
  commitRequired: true,
  // The commit writes the persistent configuration: there is no separate save.
  save: 'commit',
  errorPatterns: [
    ...CISCO_ERRORS,
    /^%\s*Failed to commit/i,
    /^%\s*This command is not authorized/i,
  ],
};

export const ciscoNxos: Driver = {
  ...iosBase,
  platform: 'cisco_nxos',
  enable: null,
  save: { command: 'copy running-config startup-config', confirmations: SAVE_CONFIRMATIONS },
};

export const ciscoAsa: Driver = {
  ...iosBase,
  platform: 'cisco_asa',
  pagingOff: ['terminal pager 0'],
  save: { command: 'write memory', confirmations: SAVE_CONFIRMATIONS },
};
