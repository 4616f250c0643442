import type { DriverDescription, Platform } from '@svc/proto';

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

/**
 * `(UBNT EdgeSwitch) >`, `(Routing) #`, `(aruba-mc) (config) #`: the name in parentheses. A
 * plain `aruba>` / `aruba(config)#` (simulators, renamed prompts) works too.
 */
const PAREN_PROMPT = {
  login: '[>#]\\s*$',
  base: '^(\\([^)]*\\)|.*?)(?:\\s?\\([^)]*\\))?\\s?[>#]$',
  any: '^{base}\\s?(?:\\([^)\\n]*\\))?\\s?[>#]\\s*$',
};
/** A mode in parentheses after the name (the name's own parentheses do not count). */
const PAREN_CONFIG_PROMPT = '(?:\\)|[^\\s()]) ?\\([^)]*\\) ?#\\s*$';

/** FASTPATH-based switches (EdgeSwitch, Broadcom ICOS) ask before `write memory`. */
const FASTPATH_SAVE_CONFIRMATIONS = [
  { pattern: '(?i)Are you sure you want to save\\?.*\\(y/n\\)\\s*$', answer: 'y\n' },
];

/** Brocade/Ruckus IronWare: `Invalid input -> foo` then `Type ? for a list`. */
const IRONWARE_ERRORS = [
  '^Invalid input ->',
  '(?i)^Incomplete command',
  '(?i)^Ambiguous input ->',
  '^Error[ -]',
  '(?i)^Unrecognized command',
];

/** The Marvell-based CLIs (Eltex MES, Cisco Sx300) page with this line. */
const MARVELL_PAGER = { pattern: '(?i)^More: <space>,\\s+Quit: q', answer: ' ' };
/** Avaya/Extreme ERS and VSP page with this line. */
const AVAYA_PAGER = {
  pattern: '(?i)^-+More \\(q=Quit, space/return=Continue\\)-+\\s*$',
  answer: ' ',
};
/** Broadcom FASTPATH-based CLIs (ICOS, Ubiquiti EdgeSwitch) page with this line. */
const MORE_OR_QUIT_PAGER = { pattern: '(?i)^--More-- or \\(q\\)uit\\s*$', answer: ' ' };

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

const VYOS: DriverDescription = {
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
    prompt: PAREN_PROMPT,
    enable: CISCO_ENABLE,
    pagingOff: ['terminal length 0'],
    config: { enter: 'configure', exit: ['end'], abort: ['end'], prompt: PAREN_CONFIG_PROMPT },
    commit: null,
    save: { command: 'write memory', confirmations: FASTPATH_SAVE_CONFIRMATIONS },
    errors: [
      '(?i)^%\\s*Invalid input',
      '(?i)^Command not found',
      '(?i)^An invalid interface',
      '(?i)^Error:',
    ],
    pagers: [MORE_OR_QUIT_PAGER],
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
  vyos: VYOS,
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
  broadcom_icos: {
    platform: 'broadcom_icos',
    name: 'Broadcom ICOS (FASTPATH)',
    // `(Routing) >`, `(Routing) #`, `(Routing) (Config)#`, `(Routing) (Interface 0/1)#`.
    prompt: PAREN_PROMPT,
    enable: CISCO_ENABLE,
    pagingOff: ['terminal length 0'],
    // `configure` enters, `exit` leaves each level (the trusted driver exits with `exit`).
    config: { enter: 'configure', exit: ['exit'], abort: ['exit'], prompt: PAREN_CONFIG_PROMPT },
    commit: null,
    save: { command: 'write memory', confirmations: FASTPATH_SAVE_CONFIRMATIONS },
    errors: CISCO_ERRORS,
    pagers: [MORE_OR_QUIT_PAGER],
    fingerprint: {
      probe: 'show version',
      pattern: 'System Description\\.+ .*(?:Broadcom|ICOS|FASTPATH)',
    },
  },
  brocade_netiron: {
    platform: 'brocade_netiron',
    name: 'Brocade (Extreme) NetIron',
    // `SSH@MLX-8>`, `SSH@MLX-8#`, `SSH@MLX-8(config-if-e10000-1/1)#`.
    prompt: CISCO_PROMPT,
    enable: CISCO_ENABLE,
    pagingOff: ['terminal length 0'],
    config: CISCO_CONFIG,
    commit: null,
    save: { command: 'write memory' },
    errors: IRONWARE_ERRORS,
    fingerprint: { probe: 'show version', pattern: 'NetIron|IronWare : Version' },
  },
  brocade_fastiron: {
    platform: 'brocade_fastiron',
    name: 'Brocade FastIron (ICX, FCX)',
    prompt: CISCO_PROMPT,
    // With RADIUS the enable asks `User Name:` first.
    enable: { ...CISCO_ENABLE, usernamePrompt: '(?i)(?:User Name|Login):\\s*$' },
    // Only allowed in privileged mode, which the session enters first.
    pagingOff: ['skip-page-display'],
    config: CISCO_CONFIG,
    commit: null,
    save: { command: 'write memory' },
    errors: IRONWARE_ERRORS,
    // Brocade-era images: Ruckus images say Ruckus (ruckus_fastiron).
    fingerprint: {
      probe: 'show version',
      pattern: 'Brocade Communications Systems[\\s\\S]*HW: (?:Stackable )?(?:ICX|FCX|FastIron)',
    },
  },
  ruckus_fastiron: {
    platform: 'ruckus_fastiron',
    name: 'Ruckus FastIron (ICX)',
    prompt: CISCO_PROMPT,
    enable: { ...CISCO_ENABLE, usernamePrompt: '(?i)(?:User Name|Login):\\s*$' },
    pagingOff: ['skip-page-display'],
    config: CISCO_CONFIG,
    commit: null,
    save: { command: 'write memory' },
    errors: IRONWARE_ERRORS,
    fingerprint: {
      probe: 'show version',
      pattern: 'Ruckus (?:Networks|Wireless)[\\s\\S]*HW: (?:Stackable )?ICX',
    },
  },
  eltex: {
    platform: 'eltex',
    name: 'Eltex MES',
    prompt: CISCO_PROMPT,
    enable: CISCO_ENABLE,
    pagingOff: ['terminal datadump'],
    config: CISCO_CONFIG,
    commit: null,
    save: {
      command: 'copy running-config startup-config',
      confirmations: [{ pattern: '(?i)Overwrite file .*\\(Y/N\\)\\[N\\] \\?\\s*$', answer: 'Y\n' }],
    },
    errors: CISCO_ERRORS,
    pagers: [MARVELL_PAGER],
    // `show version` names no vendor; the system OID is Eltex's enterprise number (35265).
    fingerprint: {
      probe: 'show system',
      pattern: 'System Object ID:\\s+1\\.3\\.6\\.1\\.4\\.1\\.35265\\.',
    },
  },
  dlink_ds: {
    platform: 'dlink_ds',
    name: 'D-Link DES/DGS',
    // `DGS-3120-24TC:admin#` (the second part is the access level).
    prompt: CISCO_PROMPT,
    enable: null,
    pagingOff: ['disable clipaging'],
    // No configuration mode: `config ...` lines run at the prompt and apply at once.
    config: { enter: null, exit: [], abort: [], prompt: null },
    commit: null,
    save: { command: 'save' },
    errors: [
      '^Available commands:',
      '(?i)^Next possible completions:',
      '^Fail!',
      '(?i)^ERROR:',
      '(?i)^Invalid (?:command|parameter)',
    ],
    pagers: [{ pattern: '^CTRL\\+C ESC q Quit SPACE n Next Page', answer: ' ' }],
    fingerprint: { probe: 'show switch', pattern: 'Device Type\\s+:\\s+D[EGX]S-\\d' },
  },
  allied_telesis_awplus: {
    platform: 'allied_telesis_awplus',
    name: 'Allied Telesis AlliedWare Plus',
    prompt: CISCO_PROMPT,
    enable: CISCO_ENABLE,
    pagingOff: ['terminal length 0'],
    config: {
      ...CISCO_CONFIG,
      exitConfirmations: [{ pattern: '(?i)Exit with uncommitted changes\\?.*$', answer: 'yes\n' }],
    },
    commit: null,
    save: { command: 'copy running-config startup-config' },
    errors: CISCO_ERRORS,
    fingerprint: { probe: 'show version', pattern: 'AlliedWare Plus' },
  },
  avaya_vsp: {
    platform: 'avaya_vsp',
    name: 'Extreme (Avaya) VSP / VOSS',
    // `VSP-8284XSQ:1>`, `VSP-8284XSQ:1#`, `VSP-8284XSQ:1(config)#`.
    prompt: CISCO_PROMPT,
    enable: CISCO_ENABLE,
    pagingOff: ['terminal more disable'],
    config: CISCO_CONFIG,
    commit: null,
    save: { command: 'save config' },
    errors: CISCO_ERRORS,
    pagers: [AVAYA_PAGER],
    fingerprint: { probe: 'show sys-info', pattern: 'SysDescr\\s+:\\s+VSP' },
  },
  aruba_os: {
    platform: 'aruba_os',
    name: 'ArubaOS (Mobility Controller)',
    // `(aruba-mc) >`, `(aruba-mc) #`, `(aruba-mc) (config) #`.
    prompt: PAREN_PROMPT,
    enable: CISCO_ENABLE,
    // `no paging` is a privileged command: sent after enable.
    pagingOff: ['no paging'],
    config: { ...CISCO_CONFIG, prompt: PAREN_CONFIG_PROMPT },
    commit: null,
    save: { command: 'write memory' },
    errors: CISCO_ERRORS,
    pagers: [{ pattern: '(?i)^--More-- \\(q\\) quit', answer: ' ' }],
    fingerprint: { probe: 'show version', pattern: 'ArubaOS \\(MODEL:' },
  },
  ipinfusion_ocnos: {
    platform: 'ipinfusion_ocnos',
    name: 'IP Infusion OcNOS',
    prompt: CISCO_PROMPT,
    enable: CISCO_ENABLE,
    // Logging on the terminal would mix into outputs.
    pagingOff: ['terminal length 0', 'terminal no monitor'],
    config: {
      ...CISCO_CONFIG,
      // Changes are a transaction: `end` is refused until it is committed or aborted.
      abort: ['abort transaction', 'end'],
    },
    commit: { command: 'commit', required: true },
    save: { command: 'write' },
    errors: [...CISCO_ERRORS, '(?i)^%\\s*Failed to commit', '(?i)^%\\s*Parameter not configured'],
    fingerprint: { probe: 'show version', pattern: 'OcNOS|IP Infusion' },
  },
  ericsson_ipos: {
    platform: 'ericsson_ipos',
    name: 'Ericsson IPOS',
    // `[local]R1>`, `[local]R1#`, `[local]R1(config-ctx)#`.
    prompt: CISCO_PROMPT,
    // `enable 15` on most images; some know only `enable` (the reference driver tries both).
    enable: { ...CISCO_ENABLE, command: 'enable 15', alternatives: ['enable'] },
    pagingOff: ['terminal length 0', 'terminal width 512'],
    config: {
      enter: 'configure',
      // `end` commits what is pending and leaves; `abort` discards it and leaves.
      exit: ['end'],
      abort: ['abort'],
      prompt: '\\(config[^)]*\\)#\\s*$',
    },
    commit: { command: 'commit' },
    save: {
      command: 'save config',
      confirmations: [{ pattern: '(?i)\\(y/n\\)\\s*\\??\\s*$', answer: 'yes\n' }],
    },
    errors: [...CISCO_ERRORS, '(?i)^%\\s*Invalid input'],
    fingerprint: { probe: 'show version', pattern: 'Ericsson IPOS|IPOS-\\d' },
  },
  alcatel_aos: {
    platform: 'alcatel_aos',
    name: 'Alcatel-Lucent Enterprise OmniSwitch AOS',
    // `->` by default, `OS6860->` when a prompt is set.
    prompt: CISCO_PROMPT,
    enable: null,
    pagingOff: [],
    // No configuration mode: every command applies at the prompt.
    config: { enter: null, exit: [], abort: [], prompt: null },
    commit: null,
    save: { command: 'write memory' },
    errors: ['^ERROR:', '(?i)^Error:'],
    fingerprint: { probe: 'show system', pattern: 'Alcatel-Lucent(?: Enterprise)? OS\\d' },
  },
  zyxel_os: {
    platform: 'zyxel_os',
    name: 'Zyxel ZyNOS switches',
    prompt: CISCO_PROMPT,
    enable: null,
    // ZyNOS has no paging command; the trusted driver sends none.
    pagingOff: [],
    // The trusted driver sends configuration lines at the prompt.
    config: { enter: null, exit: [], abort: [], prompt: null },
    commit: null,
    save: { command: 'write memory' },
    errors: [...CISCO_ERRORS, '(?i)^%?\\s*Invalid command'],
    fingerprint: { probe: 'show system-information', pattern: 'ZyNOS F/W Version' },
  },
  juniper_screenos: {
    platform: 'juniper_screenos',
    name: 'Juniper ScreenOS',
    // `ssg5-serial->`.
    prompt: CISCO_PROMPT,
    enable: null,
    pagingOff: ['set console page 0'],
    // `set`/`unset` lines apply at the prompt.
    config: { enter: null, exit: [], abort: [], prompt: null },
    commit: null,
    save: { command: 'save config' },
    // `           ^-------unknown keyword foo`
    errors: ['\\^-+(?:unknown keyword|command not completed|invalid)', '(?i)^\\s*Error:'],
    fingerprint: {
      probe: 'get system',
      pattern: 'Software Version: [\\d.]+r[\\d.]+, Type: Firewall',
    },
  },
  checkpoint_gaia: {
    platform: 'checkpoint_gaia',
    name: 'Check Point Gaia (clish)',
    prompt: CISCO_PROMPT,
    enable: null,
    pagingOff: ['set clienv rows 0'],
    // clish applies `set`/`add`/`delete` at the prompt.
    config: { enter: null, exit: [], abort: [], prompt: null },
    commit: null,
    // Persists the running clish configuration.
    save: { command: 'save config' },
    errors: ['^CLINFR\\d+\\s', '(?i)^Invalid command'],
    fingerprint: { probe: 'show version all', pattern: 'Check Point Gaia' },
  },
  ciena_saos: {
    platform: 'ciena_saos',
    name: 'Ciena SAOS 6',
    prompt: {
      login: '[>#$]\\s*$',
      base: '^(.*?)\\*?[>#$]$',
      // `*` appears before the terminator while there are unsaved changes.
      any: '^{base}\\*?[>#$]\\s*$',
    },
    enable: null,
    pagingOff: ['system shell session set more off'],
    config: { enter: null, exit: [], abort: [], prompt: null },
    commit: null,
    save: { command: 'configuration save' },
    errors: ['^SHELL (?:PARSER|COMMAND) FAILURE', '(?i)^\\s*ERROR:'],
    fingerprint: { probe: 'software show', pattern: 'Running Package\\s+:\\s+saos-' },
  },
  yamaha: {
    platform: 'yamaha',
    name: 'Yamaha RTX',
    // `>` and `#` alone (no host name unless one is configured).
    prompt: CISCO_PROMPT,
    // The administrator level is where configuration and `save` are allowed.
    enable: {
      command: 'administrator',
      enabledPrompt: '#\\s*$',
      passwordPrompt: '(?i)Password:\\s*$',
    },
    pagingOff: ['console lines infinity'],
    // Configuration commands apply at the administrator prompt.
    config: { enter: null, exit: [], abort: [], prompt: null },
    commit: null,
    save: { command: 'save' },
    errors: ['(?i)^Error:', '(?i)^エラー'],
    fingerprint: { probe: 'show environment', pattern: 'RTX\\d+ Rev\\.\\d|Yamaha Corporation' },
  },
  ubiquiti_edgerouter: {
    ...VYOS,
    platform: 'ubiquiti_edgerouter',
    name: 'Ubiquiti EdgeOS (EdgeRouter)',
    pagingOff: ['terminal length 0', 'terminal width 512'],
    fingerprint: { probe: 'show version', pattern: 'HW model:\\s+EdgeRouter' },
  },
  cisco_ftd: {
    platform: 'cisco_ftd',
    name: 'Cisco Firepower Threat Defense',
    // The FTD CLI prompt is `>` alone.
    prompt: CISCO_PROMPT,
    enable: null,
    // No paging command: the reader answers `<--- More --->`.
    pagingOff: [],
    // No configuration mode over SSH: `configure ...` commands run at the prompt.
    config: { enter: null, exit: [], abort: [], prompt: null },
    commit: null,
    save: 'none',
    errors: CISCO_ERRORS,
    fingerprint: { probe: 'show version', pattern: 'Cisco Firepower Threat Defense' },
  },
  alcatel_sros: {
    platform: 'alcatel_sros',
    name: 'Nokia SR OS (classic CLI)',
    // `A:R1#`, `*A:R1#` (unsaved changes), `A:R1>config>port#`.
    // A plain `R1>` (simulators) is taken too.
    prompt: {
      login: '[>#]\\s*$',
      base: '^\\*?(.*?)(?:>[^#]*)?[#>]$',
      any: '^\\*?{base}(?:>[^#\\n]*)?[#>]\\s*$',
    },
    enable: null,
    pagingOff: ['environment no more'],
    // Classic CLI applies each line at once; `configure ...` moves into a context, `exit all`
    // returns to the root.
    config: { enter: null, exit: ['exit all'], abort: ['exit all'], prompt: '>config[^#]*#\\s*$' },
    commit: null,
    save: { command: '/admin save' },
    errors: ['^Error: ', '^(?:MINOR|MAJOR|CRITICAL): '],
    pagers: [{ pattern: '(?i)^Press any key to continue \\(Q to quit\\)\\s*$', answer: ' ' }],
    fingerprint: { probe: 'show version', pattern: 'TiMOS-[A-Z]-\\d' },
  },
  cisco_s300: {
    platform: 'cisco_s300',
    name: 'Cisco Small Business Sx300',
    prompt: CISCO_PROMPT,
    // Without `ip ssh password-auth` the switch asks for the user again inside the shell.
    loginConfirmations: [
      { pattern: '^User Name:\\s*$', answer: '{username}\n' },
      { pattern: '^Password:\\s*$', answer: '{password}\n' },
    ],
    enable: CISCO_ENABLE,
    pagingOff: ['terminal width 511', 'terminal datadump'],
    config: CISCO_CONFIG,
    commit: null,
    save: {
      command: 'write memory',
      confirmations: [{ pattern: '(?i)Overwrite file .*\\(Y/N\\)\\[N\\] \\?\\s*$', answer: 'Y\n' }],
    },
    errors: CISCO_ERRORS,
    pagers: [MARVELL_PAGER],
    fingerprint: { probe: 'show system', pattern: 'System Description:\\s+S[GFX]\\d{3}' },
  },
  dell_powerconnect: {
    platform: 'dell_powerconnect',
    name: 'Dell PowerConnect',
    prompt: CISCO_PROMPT,
    // The SSH server lets anyone in and asks for the user inside the shell.
    loginConfirmations: [
      { pattern: '^User Name:\\s*$', answer: '{username}\n' },
      { pattern: '^Password:\\s*$', answer: '{password}\n' },
    ],
    enable: CISCO_ENABLE,
    pagingOff: ['terminal datadump'],
    config: { ...CISCO_CONFIG, enter: 'configure' },
    commit: null,
    save: {
      command: 'copy running-config startup-config',
      confirmations: [
        { pattern: '(?i)Overwrite file .*\\[Yes/press any key for no\\]\\.*\\s*$', answer: 'Y\n' },
      ],
    },
    errors: CISCO_ERRORS,
    pagers: [MARVELL_PAGER],
    fingerprint: { probe: 'show system', pattern: 'System Description:\\s+(?:Dell )?PowerConnect' },
  },
  avaya_ers: {
    platform: 'avaya_ers',
    name: 'Extreme (Avaya) Ethernet Routing Switch',
    prompt: CISCO_PROMPT,
    // The banner waits for Ctrl-Y before the CLI starts.
    loginConfirmations: [{ pattern: '(?i)Ctrl-Y to begin', answer: '\u0019' }],
    enable: CISCO_ENABLE,
    pagingOff: ['terminal length 0'],
    config: CISCO_CONFIG,
    commit: null,
    save: { command: 'save config' },
    errors: CISCO_ERRORS,
    pagers: [AVAYA_PAGER],
    fingerprint: { probe: 'show sys-info', pattern: 'Ethernet Routing Switch' },
  },
  huawei_smartax: {
    platform: 'huawei_smartax',
    name: 'Huawei SmartAX (MA5600/MA5800 OLT)',
    // `MA5608T>`, `MA5608T#`, `MA5608T(config)#`, `MA5608T(config-if-gpon-0/1)#`.
    prompt: CISCO_PROMPT,
    enable: { ...CISCO_ENABLE, enabledPrompt: '#\\s*$' },
    // `undo smart` stops the `{ <cr>||<K> }:` question after commands; `infoswitch cli OFF`
    // stops debugging output on the terminal (privileged); `scroll` turns paging off.
    pagingOff: ['undo smart', 'infoswitch cli OFF', 'scroll'],
    config: {
      enter: 'config',
      exit: ['return'],
      abort: ['return'],
      prompt: '\\(config[^)]*\\)#\\s*$',
    },
    commit: null,
    save: {
      command: 'save',
      confirmations: [{ pattern: '^\\s*\\{ <cr>[^}]*\\}:\\s*$', answer: '\n' }],
    },
    errors: [
      '^\\s*% (?:Unknown command|Parameter error|Incomplete command|Ambiguous command|Too many parameters)',
      '^\\s*Failure:',
    ],
    pagers: [
      // Asked before the output while smart interaction is on (before `undo smart`).
      { pattern: '^\\s*\\{ <cr>[^}]*\\}:\\s*$', answer: '\n' },
      { pattern: "(?i)^\\s*-+ More \\( Press 'Q' to break \\) -+\\s*$", answer: ' ' },
    ],
    fingerprint: { probe: 'display version', pattern: 'PRODUCT\\s*:\\s*MA\\d{4}|SmartAX' },
  },
};
