import type { DriverDescription } from './driver-description.js';
import type { Platform } from './platforms.js';

/**
 * The built-in drivers as data (the same shape as a user driver file in SVC_DRIVERS_DIR).
 * Facts from each vendor's public command references and the trusted driver library's public
 * platform behaviour: prompts, paging-off commands, enable, configuration mode, commit, save,
 * error lines, confirmations and context lines.
 */

/** `R1>`, `R1#`, `R1(config-if)#`: IOS and the CLIs modelled on it. */
const CISCO_PROMPT = {
  login: '[>#]\\s*$',
  base: '^(.*?)(?:\\([^)]*\\))?[>#]$',
  any: '^{base}(?:\\([^)\\n]*\\))?[>#]\\s*$',
};
const CISCO_ENABLE = {
  command: 'enable',
  enabledPrompt: '#\\s*$',
  passwordPrompt: '[Pp]assword:\\s*$',
};
const CISCO_CONFIG = {
  enter: 'configure terminal',
  exit: ['end'],
  abort: ['end'],
  prompt: '\\(config[^)]*\\)#\\s*$',
  // `banner motd #` then free text up to the delimiter, with no prompt between the lines.
  textEntry: "End with the character '(.)'\\.?\\s*$",
};

/** Errors the Cisco CLIs print, each starting with '%' (ASA prefixes `ERROR: `). */
const CISCO_ERRORS = [
  '(?i)^%\\s*Invalid input',
  '(?i)^%\\s*Incomplete command',
  '(?i)^%\\s*Ambiguous command',
  '(?i)^%\\s*Unknown command',
  '(?i)^%\\s*Unrecognized command',
  '(?i)^%\\s*Invalid (?:command|parameter)',
  '(?i)^%\\s*Bad (?:mask|IP address|secrets)',
  '(?i)^%\\s*Error',
  '^ERROR:',
  '^Command rejected:',
];

/** Questions of `copy running-config startup-config` and `write memory`. */
const CISCO_SAVE_CONFIRMATIONS = [
  { pattern: 'Destination filename \\[[^\\]]*\\]\\?\\s*$', answer: '\n' },
  { pattern: '\\[confirm\\]\\s*$', answer: '\n' },
];

/** `<R1>` user view, `[R1]` / `[~R1]` / `[R1-GigabitEthernet0/0/1]` system views (VRP, Comware). */
const VRP_PROMPT = {
  login: '[>\\]]\\s*$',
  base: '^(?:[<[][~*]*)?(.*?)[>\\]]$',
  any: '^(?:<{base}>|\\[[~*]*{base}(?:-[^\\]\\n]*)?\\])\\s*$',
};

/** `[edit]`, `[edit interfaces ge-0/0/1]` above a configuration prompt. */
const EDIT_BANNER = '^\\[edit(?: [^\\]]*)?\\]$';

const ios: DriverDescription = {
  platform: 'cisco_ios',
  name: 'Cisco IOS',
  prompt: CISCO_PROMPT,
  enable: CISCO_ENABLE,
  pagingOff: ['terminal length 0', 'terminal width 511'],
  config: CISCO_CONFIG,
  commit: null,
  save: { command: 'write memory', confirmations: CISCO_SAVE_CONFIRMATIONS },
  errors: CISCO_ERRORS,
  fingerprint: {
    probe: 'show version',
    pattern: 'Cisco IOS Software|Cisco Internetwork Operating System',
  },
};

export const BUILTIN_DRIVERS: Readonly<Record<Platform, DriverDescription>> = {
  cisco_ios: ios,
  cisco_xe: {
    ...ios,
    platform: 'cisco_xe',
    name: 'Cisco IOS XE',
    save: {
      command: 'copy running-config startup-config',
      confirmations: CISCO_SAVE_CONFIRMATIONS,
    },
    fingerprint: { probe: 'show version', pattern: 'Cisco IOS[ -]XE Software|IOS-XE' },
  },
  cisco_xr: {
    ...ios,
    platform: 'cisco_xr',
    name: 'Cisco IOS XR',
    // XR users land in privileged exec; there is no enable.
    enable: null,
    config: {
      ...CISCO_CONFIG,
      // `abort` discards the target configuration and leaves configuration mode in one step.
      abort: ['abort'],
      exitConfirmations: [
        // `end` with uncommitted changes asks; the job commits explicitly, so answer "no".
        {
          pattern: '(?i)Uncommitted changes found.*\\?\\s*(?:\\[cancel\\])?:?\\s*$',
          answer: 'no\n',
        },
      ],
    },
    // Leaving without a commit discards the target configuration; the commit also persists.
    commit: {
      command: 'commit',
      required: true,
      confirmations: [
        // Asked when other sessions committed meanwhile; the job asked for this commit.
        { pattern: '(?i)Do you wish to proceed with this commit anyway\\?.*$', answer: 'yes\n' },
      ],
    },
    save: 'commit',
    errors: [
      ...CISCO_ERRORS,
      '(?i)^%\\s*Failed to commit',
      '(?i)^%\\s*This command is not authorized',
    ],
    fingerprint: { probe: 'show version', pattern: 'Cisco IOS XR Software|IOS-XR' },
  },
  cisco_nxos: {
    ...ios,
    platform: 'cisco_nxos',
    name: 'Cisco NX-OS',
    enable: null,
    save: {
      command: 'copy running-config startup-config',
      confirmations: CISCO_SAVE_CONFIRMATIONS,
    },
    fingerprint: { probe: 'show version', pattern: 'Cisco Nexus Operating System|NX-OS' },
  },
  cisco_asa: {
    ...ios,
    platform: 'cisco_asa',
    name: 'Cisco ASA',
    pagingOff: ['terminal pager 0'],
    fingerprint: { probe: 'show version', pattern: 'Cisco Adaptive Security Appliance' },
  },
  arista_eos: {
    platform: 'arista_eos',
    name: 'Arista EOS',
    prompt: CISCO_PROMPT,
    enable: CISCO_ENABLE,
    pagingOff: ['terminal length 0', 'terminal width 32767'],
    config: CISCO_CONFIG,
    // EOS has commit only inside named configuration sessions, which jobs do not use.
    commit: null,
    save: { command: 'write memory' },
    errors: [
      '(?i)^%\\s*Invalid input',
      '(?i)^%\\s*Incomplete command',
      '(?i)^%\\s*Ambiguous command',
      '(?i)^%\\s*Unrecognized command',
      '(?i)^%\\s*Error',
    ],
    fingerprint: { probe: 'show version', pattern: 'Arista' },
  },
  juniper_junos: {
    platform: 'juniper_junos',
    name: 'Juniper Junos',
    prompt: { login: '[>#%]\\s*$', base: '^(.*?)[>#%]$', any: '^{base}[>#%]\\s*$' },
    enable: null,
    pagingOff: ['set cli screen-length 0', 'set cli screen-width 511'],
    config: {
      enter: 'configure',
      exit: ['exit configuration-mode'],
      abort: ['rollback 0', 'exit configuration-mode'],
      prompt: '#\\s*$',
      exitConfirmations: [
        {
          pattern: '(?i)Exit with uncommitted changes\\?\\s*\\[yes,no\\]\\s*(?:\\(\\w+\\))?\\s*$',
          answer: 'yes\n',
        },
      ],
    },
    // The shared candidate outlives the session: a change without a commit is left in it.
    commit: { command: 'commit', required: true },
    save: 'commit',
    errors: [
      '(?i)^syntax error',
      '(?i)^unknown command',
      '(?i)^error:',
      '(?i)^missing argument',
      '(?i)^invalid (?:value|interface|ip address|input)',
    ],
    // Chassis and cluster contexts (`{master:0}`, `{backup:1}`, `{primary:node0}`,
    // `{secondary:node1}`, `{linecard:1}`) and the configuration path, alone or together.
    contextLines: [
      '(?i)^\\{(?:master|backup|primary|secondary|linecard|line|hold|ineligible)(?::[\\w-]+)?\\}(?:\\[edit(?: [^\\]]*)?\\])?$',
      EDIT_BANNER,
    ],
    configNoise: [EDIT_BANNER, '^\\{\\w+(?::\\d+)?\\}$'],
    fingerprint: { probe: 'show version', pattern: 'JUNOS|Junos:' },
  },
  hp_procurve: {
    platform: 'hp_procurve',
    name: 'HP ProCurve / ArubaOS-Switch',
    prompt: CISCO_PROMPT,
    loginConfirmations: [{ pattern: '(?i)Press any key to continue', answer: '\n' }],
    enable: {
      ...CISCO_ENABLE,
      usernamePrompt: '(?i)Username:\\s*$',
      passwordPrompt: '(?i)Password:\\s*$',
    },
    pagingOff: ['no page'],
    // Submodes drop the word "config": `R1(config)#`, `R1(eth-1)#`, `R1(vlan-10)#`.
    config: { ...CISCO_CONFIG, prompt: '\\([^)]*\\)#\\s*$' },
    commit: null,
    save: { command: 'write memory' },
    errors: [
      '(?i)^Invalid input:',
      '(?i)^Ambiguous input:',
      '(?i)^Incomplete input:',
      '(?i)^Unknown command',
    ],
    fingerprint: { probe: 'show version', pattern: 'Image stamp:.*\\/code\\/build' },
  },
  aruba_aoscx: {
    platform: 'aruba_aoscx',
    name: 'Aruba AOS-CX',
    prompt: CISCO_PROMPT,
    enable: CISCO_ENABLE,
    pagingOff: ['no page'],
    config: CISCO_CONFIG,
    commit: null,
    save: { command: 'write memory' },
    errors: [
      '(?i)^Invalid input:',
      '(?i)^%\\s*Invalid input',
      '(?i)^%?\\s*Command incomplete',
      '(?i)^Ambiguous command',
      '(?i)^Incomplete command',
    ],
    fingerprint: { probe: 'show version', pattern: 'ArubaOS-CX|AOS-CX' },
  },
  huawei: {
    platform: 'huawei',
    name: 'Huawei VRP',
    prompt: VRP_PROMPT,
    enable: null,
    pagingOff: ['screen-length 0 temporary'],
    config: { enter: 'system-view', exit: ['return'], abort: ['return'], prompt: '^\\[' },
    commit: null,
    save: {
      command: 'save',
      confirmations: [
        { pattern: '(?i)\\[Y\\/N\\]\\s*:?\\s*$', answer: 'y\n' },
        { pattern: '(?i)file name.*\\]\\s*:?\\s*$', answer: '\n' },
      ],
    },
    errors: ['^\\s*Error:'],
    fingerprint: {
      probe: 'display version',
      pattern: 'Huawei Versatile Routing Platform|VRP \\(R\\) software',
    },
  },
  fortinet: {
    platform: 'fortinet',
    name: 'Fortinet FortiOS',
    prompt: {
      login: '[#$]\\s*$',
      base: '^(.*?)(?:\\s*\\([^)]*\\))?\\s*[#$]$',
      any: '^{base}(?: \\([^)\\n]*\\))? [#$]\\s*$',
    },
    enable: null,
    // No paging-off command: `config system console / set output standard / end` would write
    // the stored configuration on every session. The reader answers `--More--` instead.
    pagingOff: [],
    config: {
      enter: null,
      exit: ['end'],
      // `abort` leaves the current block discarding its changes; repeated until the top prompt.
      abort: ['abort'],
      prompt: ' \\([^)]*\\) [#$]\\s*$',
    },
    commit: null,
    save: 'auto',
    errors: [
      '(?i)^Command fail\\.',
      '(?i)^command parse error',
      '(?i)^Unknown action',
      '(?i)^value parse error',
      '(?i)^entry not found',
      '(?i)^node_check_object fail',
    ],
    fingerprint: { probe: 'get system status', pattern: 'Version: Forti(?:Gate|OS)' },
  },
  paloalto_panos: {
    platform: 'paloalto_panos',
    name: 'Palo Alto PAN-OS',
    prompt: CISCO_PROMPT,
    enable: null,
    pagingOff: ['set cli pager off'],
    config: {
      enter: 'configure',
      exit: ['exit'],
      // PAN-OS candidates outlive the session, so a failed job runs `revert config`.
      abort: ['revert config', 'exit'],
      prompt: '#\\s*$',
      exitConfirmations: [
        { pattern: '(?i)uncommitted changes.*\\[yes\\/no\\]\\s*:?\\s*$', answer: 'yes\n' },
      ],
    },
    // The candidate outlives the session: a change without a commit is left in it.
    commit: { command: 'commit', required: true },
    save: 'commit',
    errors: [
      '(?i)^Invalid syntax\\.?',
      '(?i)^Unknown command:',
      '(?i)^Validation Error:',
      '(?i)^Server error',
      '(?i)^Commit failed',
    ],
    configNoise: [EDIT_BANNER],
    fingerprint: { probe: 'show system info', pattern: '(?i)sw-version:|family: (?:vm|pa)' },
  },
  linux: {
    platform: 'linux',
    name: 'Linux shell',
    // The prompt changes with the working directory (`user@host:~$`): the base is before ':'.
    prompt: { login: '[$#]\\s*$', base: '^([^:]*?)(?::.*)?[$#]$', any: '^{base}[^\\n]*[$#]\\s*$' },
    enable: null,
    pagingOff: [],
    config: { enter: null, exit: [], abort: [], prompt: null },
    commit: null,
    save: 'none',
    errors: [
      ': command not found$',
      ': No such file or directory$',
      ': Permission denied$',
      '^-?\\w*sh: ',
    ],
    fingerprint: { probe: 'uname -a', pattern: '^Linux \\S+ \\d' },
  },
  huawei_vrpv8: {
    platform: 'huawei_vrpv8',
    name: 'Huawei VRP V8 (two-stage commit)',
    prompt: VRP_PROMPT,
    enable: null,
    pagingOff: ['screen-length 0 temporary'],
    config: {
      enter: 'system-view',
      exit: ['return'],
      // `abort` discards the uncommitted candidate and returns to the user view.
      abort: ['abort'],
      prompt: '^\\[',
      exitConfirmations: [
        // `return` with a candidate asks; the job commits explicitly, so answer "no".
        {
          pattern:
            '(?i)Uncommitted configurations found.*\\[Y\\(yes\\)/N\\(no\\)/C\\(cancel\\)\\]\\s*:?\\s*$',
          answer: 'n\n',
        },
      ],
    },
    // Changes stay in a candidate until `commit`; leaving without it discards them.
    commit: { command: 'commit', required: true },
    save: {
      command: 'save',
      confirmations: [
        { pattern: '(?i)\\[Y\\/N\\]\\s*:?\\s*$', answer: 'y\n' },
        { pattern: '(?i)file name.*\\]\\s*:?\\s*$', answer: '\n' },
      ],
    },
    errors: ['^\\s*Error:'],
    fingerprint: { probe: 'display version', pattern: 'VRP \\(R\\) software, Version 8\\.' },
  },
  hp_comware: {
    platform: 'hp_comware',
    name: 'HPE Comware',
    prompt: VRP_PROMPT,
    enable: null,
    pagingOff: ['screen-length disable'],
    config: { enter: 'system-view', exit: ['return'], abort: ['return'], prompt: '^\\[' },
    commit: null,
    save: {
      // `save force` writes the next-startup file without asking.
      command: 'save force',
    },
    errors: [
      '^\\s*% (?:Unrecognized|Incomplete|Ambiguous) command found',
      '^\\s*% (?:Wrong parameter|Too many parameters) found',
      '(?i)^\\s*% Invalid',
    ],
    fingerprint: { probe: 'display version', pattern: 'Comware Software' },
  },
  dell_force10: {
    platform: 'dell_force10',
    name: 'Dell Networking OS9 (Force10)',
    prompt: CISCO_PROMPT,
    enable: CISCO_ENABLE,
    pagingOff: ['terminal length 0'],
    config: {
      enter: 'configure',
      exit: ['end'],
      abort: ['end'],
      prompt: '\\(conf[^)]*\\)#\\s*$',
    },
    commit: null,
    save: {
      command: 'copy running-config startup-config',
      confirmations: [{ pattern: '(?i)\\[confirm yes/no\\]:?\\s*$', answer: 'yes\n' }],
    },
    errors: ['(?i)^%\\s*Error', '(?i)^%\\s*Invalid input', '(?i)^%\\s*Incomplete command'],
    fingerprint: {
      probe: 'show version',
      pattern: 'Dell (?:Real Time )?Operating System|Force10 Operating System',
    },
  },
  ubiquiti_edgeswitch: {
    platform: 'ubiquiti_edgeswitch',
    name: 'Ubiquiti EdgeSwitch',
    // `(UBNT EdgeSwitch) >`, `(UBNT EdgeSwitch) #`, `(UBNT EdgeSwitch) (Config)#`.
    prompt: {
      login: '[>#]\\s*$',
      base: '^(\\([^)]*\\))',
      any: '^{base} ?(?:\\([^)\\n]*\\))?\\s?[>#]\\s*$',
    },
    enable: CISCO_ENABLE,
    pagingOff: ['terminal length 0'],
    config: {
      enter: 'configure',
      exit: ['end'],
      abort: ['end'],
      prompt: '\\) ?\\([^)]*\\) ?#\\s*$',
    },
    commit: null,
    save: {
      command: 'write memory',
      confirmations: [
        { pattern: '(?i)Are you sure you want to save\\?.*\\(y/n\\)\\s*$', answer: 'y\n' },
      ],
    },
    errors: [
      '(?i)^%\\s*Invalid input',
      '(?i)^Command not found',
      '(?i)^An invalid interface',
      '(?i)^Error:',
    ],
    pagers: [{ pattern: '(?i)^--More-- or \\(q\\)uit\\s*$', answer: ' ' }],
    fingerprint: { probe: 'show version', pattern: 'EdgeSwitch' },
  },
  extreme_exos: {
    platform: 'extreme_exos',
    name: 'Extreme Networks EXOS',
    // `SW1.1 #`, `* SW1.7 #`: a command counter, and `*` while the configuration is unsaved.
    prompt: {
      login: '[>#]\\s*$',
      base: '^(?:\\* )?(.*?)\\.\\d+ [>#]$',
      any: '^(?:\\* )?{base}\\.\\d+ [>#]\\s*$',
    },
    enable: null,
    pagingOff: ['disable clipaging'],
    config: { enter: null, exit: [], abort: [], prompt: null },
    commit: null,
    save: {
      command: 'save configuration',
      confirmations: [
        { pattern: '(?i)Do you want to save configuration.*\\(y/N\\)\\s*$', answer: 'y\n' },
      ],
    },
    errors: ['(?i)^%%?\\s*Invalid input', '(?i)^%%?\\s*Incomplete command', '(?i)^Error:'],
    pagers: [{ pattern: '(?i)^Press <SPACE> to continue or <Q> to quit:\\s*$', answer: ' ' }],
    fingerprint: { probe: 'show version', pattern: 'ExtremeXOS|EXOS version' },
  },
  vyos: {
    platform: 'vyos',
    name: 'VyOS',
    // `vyos@vyos:~$` operational, `vyos@vyos#` in configuration mode (`[edit]` above it).
    prompt: {
      login: '[$#]\\s*$',
      base: '^([^:#$]*?)(?::.*)?[$#]$',
      any: '^{base}(?::[^\\n]*)?[$#]\\s*$',
    },
    enable: null,
    pagingOff: ['set terminal length 0', 'set terminal width 512'],
    config: {
      enter: 'configure',
      exit: ['exit'],
      abort: ['exit discard'],
      prompt: '#\\s*$',
    },
    // `exit` with a modified candidate refuses: config jobs must commit.
    commit: { command: 'commit', required: true },
    // `save` persists the committed configuration and runs in configuration mode.
    save: { command: 'save', inConfig: true },
    errors: [
      '(?i)^\\s*Invalid command:',
      '(?i)^\\s*Configuration path: .* is not valid',
      '(?i)^\\s*Set failed',
      '(?i)^\\s*Commit failed',
      '(?i)^\\s*Invalid value',
    ],
    // `less` shows `:` at the bottom of each page.
    pagers: [{ pattern: '^:$', answer: ' ' }],
    configNoise: [EDIT_BANNER],
    fingerprint: { probe: 'show version', pattern: 'Version:\\s+VyOS' },
  },
  mikrotik_routeros: {
    platform: 'mikrotik_routeros',
    name: 'MikroTik RouterOS',
    // `[admin@MikroTik] >`, `[admin@MikroTik] /interface>`.
    prompt: {
      login: '\\]\\s*(?:/[^>\\n]*)?>\\s*$',
      base: '^\\[([^\\]]+)\\]',
      any: '^\\[{base}\\] ?(?:/[^>\\n]*)?>\\s*$',
    },
    enable: null,
    pagingOff: [],
    // Commands run at the prompt (full paths); RouterOS writes every change at once.
    config: { enter: null, exit: [], abort: [], prompt: null },
    commit: null,
    save: 'auto',
    errors: [
      '(?i)^bad command name',
      '(?i)^syntax error',
      '(?i)^expected end of command',
      '(?i)^failure:',
      '(?i)^input does not match any value',
      '(?i)^no such item',
    ],
    fingerprint: { probe: '/system resource print', pattern: 'platform: MikroTik' },
  },
};
