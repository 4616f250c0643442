import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PLATFORMS } from '@svc/proto';
import { TerminalText, normalizeTerminalText } from '../src/device/ssh/terminal-text.js';
import { matchPager } from '../src/device/ssh/pager.js';
import { findEcho, dropEchoLike } from '../src/device/drivers/cli-session.js';
import { DRIVERS, escapeRegExp, getDriver, withLoginCredentials } from '@svc/drivers';
import { matchFingerprint, probesFor } from '../src/device/autodetect.js';
import { redactValues } from '../src/device/redaction.js';

test('when ANSI escapes, backspaces and CRLF arrive, then the text is what a person sees', () => {
  assert.equal(normalizeTerminalText('\x1b[24;1H\x1b[2KR1# \x1b[?25h'), 'R1# ');
  assert.equal(normalizeTerminalText('line1\r\nline2\r\r\nend'), 'line1\nline2\nend');
  assert.equal(normalizeTerminalText('shox\bw ver'), 'show ver');
  assert.equal(normalizeTerminalText('a\x1bEb'), 'a\nb');
  assert.equal(
    normalizeTerminalText('x\n --More-- \b\b\b\b\b\b\b\b\b\b          \b\b\b\b\b\b\b\b\b\bnext'),
    'x\nnext',
  );
  assert.equal(normalizeTerminalText('x\n---(more)---\r            \rnext'), 'x\nnext');
  assert.equal(normalizeTerminalText('bell\x07\x00!'), 'bell!');
  assert.equal(
    normalizeTerminalText('x\n  ---- More ----\x1b[16D                \x1b[16Dnext'),
    'x\nnext',
  );
});

test('when an escape sequence or CRLF is split across chunks, then it is still removed', () => {
  const t = new TerminalText();
  t.push('abc\x1b[');
  t.push('2Kdef\r');
  t.push('\nghi');
  assert.equal(t.value, 'abcdef\nghi');
});

test('when a paging prompt ends the output, then it is recognised with its key', () => {
  for (const p of [
    ' --More-- ',
    '--More--',
    '<--- More --->',
    '  ---- More ----',
    '---(more)---',
    '---(more 45%)---',
    '-- MORE --, next page: Space, next line: Enter, quit: Control-C',
    'lines 1-24 ',
  ]) {
    assert.equal(matchPager(p)?.answer, ' ', p);
  }
  assert.equal(matchPager('(END)')?.answer, 'q');
  assert.equal(matchPager('R1#'), undefined);
  assert.equal(matchPager('description more stuff'), undefined);
});

test('when the command echo is found, then output starts after it; a late match is not echo', () => {
  assert.equal(findEcho('show version\nCisco', 'show version'), 'show version\n'.length);
  assert.equal(findEcho('show vers', 'show version'), -1);
  assert.equal(findEcho('a\nb\nc\nshow version\n', 'show version'), -1);
  assert.equal(dropEchoLike('show  version\nout', 'show version'), 'out');
  assert.equal(dropEchoLike('out', 'show version'), 'out');
});

test('every platform id has a driver', () => {
  for (const p of PLATFORMS) assert.equal(getDriver(p)?.platform, p);
  assert.equal(getDriver('nope'), undefined);
});

test('when a driver derives the base prompt, then its pattern matches every mode of that device', () => {
  const cases: Record<string, { login: string; match: string[]; reject: string[] }> = {
    cisco_ios: {
      login: 'R1>',
      match: ['R1#', 'R1(config)#', 'R1(config-if)#'],
      reject: ['R2#', 'xR1#'],
    },
    cisco_xr: { login: 'RP/0/RP0/CPU0:R1#', match: ['RP/0/RP0/CPU0:R1(config)#'], reject: ['R1#'] },
    juniper_junos: { login: 'svc@R1> ', match: ['svc@R1# '], reject: ['svc@R2>'] },
    huawei: {
      login: '<R1>',
      match: ['[R1]', '[R1-GigabitEthernet0/0/1]', '[~R1]'],
      reject: ['<R2>'],
    },
    fortinet: { login: 'R1 # ', match: ['R1 (interface) # ', 'R1 $ '], reject: ['R1#'] },
    paloalto_panos: {
      login: 'admin@PA-VM> ',
      match: ['admin@PA-VM# ', 'admin@PA-VM(active)> '],
      reject: ['root@PA-VM>'],
    },
    linux: { login: 'svc@R1:~$ ', match: ['svc@R1:/tmp$ ', 'svc@R1:~# '], reject: ['other$ '] },
    hp_procurve: { login: 'R1> ', match: ['R1(eth-1)# ', 'R1(config)# '], reject: ['R2# '] },
  };
  for (const [platform, c] of Object.entries(cases)) {
    const d = getDriver(platform);
    assert.ok(d !== undefined);
    const re = d.promptPattern(escapeRegExp(d.basePrompt(c.login)));
    assert.ok(re.test(c.login), `${platform} ${c.login}`);
    for (const m of c.match) assert.ok(re.test(m), `${platform} should match ${m}`);
    for (const r of c.reject) assert.ok(!re.test(r), `${platform} should not match ${r}`);
  }
});

test('when a device prints its error, then the driver patterns catch it', () => {
  const errors: Record<string, string> = {
    cisco_ios: "% Invalid input detected at '^' marker.",
    cisco_xe: '% Incomplete command.',
    cisco_xr: '% Failed to commit one or more configuration items',
    cisco_nxos: "% Invalid command at '^' marker.",
    cisco_asa: "ERROR: % Invalid input detected at '^' marker.",
    arista_eos: '% Ambiguous command',
    juniper_junos: 'syntax error, expecting <command>.',
    hp_procurve: 'Invalid input: foo',
    aruba_aoscx: 'Invalid input: foo',
    huawei: "Error: Unrecognized command found at '^' position.",
    fortinet: "command parse error before 'bogus'",
    paloalto_panos: 'Invalid syntax.',
    linux: '-bash: foo: command not found',
    huawei_vrpv8: "Error: Unrecognized command found at '^' position.",
    hp_comware: "% Unrecognized command found at '^' position.",
    dell_force10: '% Error: Invalid input at "^" marker.',
    ubiquiti_edgeswitch: "% Invalid input detected at '^' marker.",
    extreme_exos: "%% Invalid input detected at '^' marker.",
    vyos: '  Invalid command: [foo]',
    mikrotik_routeros: 'bad command name foo (line 1 column 1)',
    broadcom_icos: "% Invalid input detected at '^' marker.",
    brocade_netiron: 'Invalid input -> foo',
    brocade_fastiron: 'Invalid input -> foo',
    ruckus_fastiron: 'Error - Incorrect username or password.',
    eltex: '% Unrecognized command',
    dlink_ds: 'Available commands:',
    allied_telesis_awplus: "% Invalid input detected at '^' marker.",
    avaya_vsp: "% Invalid input detected at '^' marker.",
    aruba_os: '% Incomplete command.',
    ipinfusion_ocnos: '% Failed to commit .. As error(s) encountered during commit operation...',
    ericsson_ipos: "% Invalid input at '^' marker.",
    alcatel_aos: 'ERROR: Invalid entry: "foo"',
    zyxel_os: '% Invalid command: "foo"',
    juniper_screenos: '                  ^-------unknown keyword foo',
    checkpoint_gaia: "CLINFR0329  Invalid command:'foo'.",
    ciena_saos: "SHELL PARSER FAILURE: 'foo' - invalid input",
    yamaha: 'Error: Command not found',
    ubiquiti_edgerouter: '  Invalid command: [foo]',
    cisco_ftd: "ERROR: % Invalid input detected at '^' marker.",
    alcatel_sros: 'Error: Bad command.',
    cisco_s300: '% Unrecognized command',
    dell_powerconnect: '% Unrecognized command',
    avaya_ers: "% Invalid input detected at '^' marker.",
    huawei_smartax: "  % Unknown command, the error locates at '^'",
  };
  for (const p of PLATFORMS) {
    const line = errors[p] ?? '';
    assert.ok(
      DRIVERS[p].errorPatterns.some((re) => re.test(line)),
      `${p}: ${line}`,
    );
    assert.ok(
      !DRIVERS[p].errorPatterns.some((re) => re.test('GigabitEthernet0/1 is up')),
      `${p} false positive`,
    );
  }
});

test('when XR asks to proceed with a commit after other sessions committed, then the commit answers yes', () => {
  const question =
    'One or more commits have occurred from other configuration sessions since this session started. Do you wish to proceed with this commit anyway? [no]: ';
  const c = DRIVERS.cisco_xr.commit?.confirmations.find((q) => q.pattern.test(question));
  assert.equal(c?.answer, 'yes\n');
});

test('when a platform has no commit or save, then the driver says so', () => {
  assert.equal(DRIVERS.cisco_ios.commit, null);
  assert.equal(DRIVERS.cisco_xr.save, 'commit');
  assert.equal(DRIVERS.juniper_junos.commit?.command, 'commit');
  assert.equal(DRIVERS.fortinet.save, 'auto');
  assert.equal(DRIVERS.linux.save, 'none');
});

test('when version texts are fingerprinted, then the most specific platform wins', () => {
  assert.equal(
    matchFingerprint('Cisco IOS XE Software, Version 17\nCisco IOS Software [Amsterdam]'),
    'cisco_xe',
  );
  assert.equal(matchFingerprint('Cisco IOS Software, IOSv Software'), 'cisco_ios');
  assert.equal(
    matchFingerprint('Cisco Adaptive Security Appliance Software Version 9.16'),
    'cisco_asa',
  );
  assert.equal(matchFingerprint('Cisco Nexus Operating System (NX-OS) Software'), 'cisco_nxos');
  assert.equal(matchFingerprint('Cisco IOS XR Software, Version 7.3.2'), 'cisco_xr');
  assert.equal(matchFingerprint('Junos: 21.4R3.15'), 'juniper_junos');
  assert.equal(matchFingerprint('Version: FortiGate-VM64 v7.2.5'), 'fortinet');
  assert.equal(matchFingerprint('sw-version: 10.2.4'), 'paloalto_panos');
  assert.equal(matchFingerprint('Linux R1 6.1.0 #1 SMP x86_64'), 'linux');
  assert.equal(matchFingerprint('bash: show: command not found'), undefined);
  assert.deepEqual(probesFor('<R1>'), ['display version']);
  assert.equal(probesFor('R1 # ')[0], 'get system status');
  assert.equal(probesFor('R1$')[0], 'uname -a');
  // FTD prints the ASA engine's line too; EdgeOS/VyOS shells answer `uname -a` like Linux; AOS
  // and ScreenOS answer `show version` with an `ERROR:` that looks like a user-exec refusal.
  assert.equal(
    matchFingerprint(
      'Model : Cisco Firepower Threat Defense for VMware (75) Version 7.0.1\nCisco Adaptive Security Appliance Software Version 9.16(2)',
    ),
    'cisco_ftd',
  );
  assert.equal(probesFor('ubnt@ubnt:~$')[0], 'show version');
  assert.deepEqual(probesFor('OS6860->'), ['show system', 'get system']);
});

test('when secrets appear in a text, then they are redacted', () => {
  assert.equal(
    redactValues('pw hunter2 and en s3cret', ['hunter2', 's3cret', null]),
    'pw *** and en ***',
  );
  assert.equal(redactValues('nothing', ['', null]), 'nothing');
});

test('when a driver answers an in-band login with {username} and {password}, then the job credentials are filled and line breaks never typed', () => {
  const s300 = DRIVERS.cisco_s300;
  const filled = withLoginCredentials(s300, 'svc', 'pa$1&{x}');
  assert.deepEqual(
    filled.loginConfirmations.map((c) => c.answer),
    ['svc\n', 'pa$1&{x}\n'],
  );
  // The compiled driver itself keeps the placeholders (it is shared by every job).
  assert.deepEqual(
    s300.loginConfirmations.map((c) => c.answer),
    ['{username}\n', '{password}\n'],
  );
  assert.equal(withLoginCredentials(DRIVERS.cisco_ios, 'svc', 'x'), DRIVERS.cisco_ios);
  // A password with a line break is never typed: that question stays unanswered.
  const unsafe = withLoginCredentials(s300, 'svc', 'top\nsecret');
  assert.deepEqual(
    unsafe.loginConfirmations.map((c) => c.answer),
    ['svc\n'],
  );
});

test('when a parenthesised or SR OS prompt comes in its documented and its plain form, then base and mode are read', () => {
  const cases: [string, string, string[], string[]][] = [
    // platform, prompt at login, prompts of the same device, prompts of another device
    [
      'aruba_os',
      '(aruba-mc) >',
      ['(aruba-mc) #', '(aruba-mc) (config) #', '(aruba-mc) (config-if)#'],
      ['(other) #'],
    ],
    ['aruba_os', 'aruba>', ['aruba#', 'aruba(config)#'], ['arubax#']],
    ['ubiquiti_edgeswitch', '(UBNT EdgeSwitch) >', ['(UBNT EdgeSwitch) (Config)#'], ['(UBNT) #']],
    ['alcatel_sros', 'A:R1#', ['*A:R1#', 'A:R1>config>port#'], ['A:R2#']],
    ['alcatel_sros', 'R1>', ['R1#'], ['R2#']],
  ];
  for (const [platform, login, same, other] of cases) {
    const d = getDriver(platform);
    assert.ok(d !== undefined);
    const re = d.promptPattern(escapeRegExp(d.basePrompt(login)));
    for (const p of [login, ...same]) assert.ok(re.test(p), `${platform}: ${p} after ${login}`);
    for (const p of other) assert.ok(!re.test(p), `${platform}: ${p} is another device`);
  }
  const aruba = getDriver('aruba_os');
  assert.ok(aruba?.config.isConfig('(aruba-mc) (config) #'));
  assert.ok(aruba?.config.isConfig('aruba(config)#'));
  assert.ok(!aruba?.config.isConfig('(aruba-mc) #'));
  assert.ok(!getDriver('ubiquiti_edgeswitch')?.config.isConfig('(UBNT EdgeSwitch) #'));
});
