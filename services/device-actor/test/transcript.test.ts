import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TranscriptRecorder } from '../src/device/transcript.js';

const clock = () => {
  let t = Date.parse('2026-01-01T00:00:00Z');
  return () => new Date((t += 1000));
};

test('when chunks arrive, then received text is joined until the next send, control sequences dropped', () => {
  const r = new TranscriptRecorder(1000, [], clock());
  r.sent('show version\n');
  r.received('\x1b[2Kshow ver');
  r.received('sion\r\nCisco IOS\r\nR1#');
  r.sent('exit\n');
  const t = r.toTranscript('j1');
  assert.deepEqual(
    t.entries.map((e) => [e.dir, e.data]),
    [
      ['sent', 'show version\n'],
      ['received', 'show version\r\nCisco IOS\r\nR1#'],
      ['sent', 'exit\n'],
    ],
  );
  assert.equal(t.entries[0]!.at, '2026-01-01T00:00:01.000Z');
  assert.equal(t.truncated, false);
});

test('when secrets pass, then they are redacted, also when split over chunks and as config values', () => {
  const r = new TranscriptRecorder(1000, ['hunter2', null, 'en-secret']);
  r.sent('en-secret\n');
  r.received('echo hun');
  r.received('ter2 back\n');
  r.sent('enable secret 5 $1$abc$def\n');
  r.sent('snmp-server community public RO\n');
  const text = JSON.stringify(r.toTranscript('j'));
  for (const s of ['hunter2', 'en-secret', '$1$abc$def', 'public']) assert.ok(!text.includes(s), s);
  assert.match(text, /enable secret 5 \*\*\*/);
});

test('when the session passes the cap, then the start and a window on the end are kept', () => {
  const r = new TranscriptRecorder(100, []);
  r.sent('first-command\n');
  for (let i = 0; i < 50; i++) r.received(`line ${i}\n`);
  r.sent('last-command\n');
  const t = r.toTranscript('j');
  const kept = t.entries.reduce((n, e) => n + e.data.length, 0);
  assert.ok(kept <= 100, String(kept));
  assert.equal(t.truncated, true);
  assert.equal(t.entries[0]!.data, 'first-command\n');
  assert.equal(t.entries.at(-1)!.data, 'last-command\n');
  assert.match(t.entries.at(-2)!.data, /line 49\n$/);
  const total =
    'first-command\n'.length +
    'last-command\n'.length +
    Array.from({ length: 50 }, (_, i) => `line ${i}\n`.length).reduce((a, b) => a + b, 0);
  assert.equal(kept + t.omitted_chars, total);
});

/** What a transcript of `lines` (sent) keeps for `platform`. */
function recorded(platform: string, lines: string[]): string {
  const r = new TranscriptRecorder(100_000, []);
  for (const line of lines) r.sent(`${line}\n`);
  return r
    .toTranscript('j', [], platform)
    .entries.map((e) => e.data)
    .join('');
}

test('when IOS-family configuration holds secrets in any of its forms, then the transcript keeps the words and masks the values', () => {
  const cases: [string, string, string][] = [
    ['cisco_ios', 'enable secret 9 $9$nvdehFKbdNgrB.$ug6ksFUQaI', 'enable secret 9 ***'],
    ['cisco_ios', 'enable secret level 15 5 $1$abc$def', 'enable secret level 15 5 ***'],
    ['cisco_ios', 'enable password EnPw1', 'enable password ***'],
    [
      'cisco_ios',
      'username ops privilege 15 secret 9 $9$oVo20fv',
      'username ops privilege 15 secret 9 ***',
    ],
    ['cisco_ios', 'username ops password 7 0822455D0A16', 'username ops password 7 ***'],
    [
      'arista_eos',
      'username admin role network-admin secret sha512 $6$salt$hash',
      'username admin role network-admin secret sha512 ***',
    ],
    ['cisco_ios', 'tacacs-server key TacKey1', 'tacacs-server key ***'],
    [
      'cisco_ios',
      'tacacs-server host 10.0.0.5 key 7 045802150C2E',
      'tacacs-server host 10.0.0.5 key 7 ***',
    ],
    ['cisco_nxos', 'radius-server key 7 "RadKey2"', 'radius-server key 7 ***'],
    [
      'cisco_ios',
      'radius-server host 10.0.0.6 auth-port 1812 key RadKey3',
      'radius-server host 10.0.0.6 auth-port 1812 key ***',
    ],
    ['cisco_ios', ' key 7 094F471A1A0A', ' key 7 ***'],
    ['cisco_xr', ' key 0 PlainKey4', ' key 0 ***'],
    ['cisco_ios', '  key-string 7 KeyString5', '  key-string 7 ***'],
    [
      'cisco_ios',
      'crypto isakmp key IsaKey6 address 192.0.2.1',
      'crypto isakmp key *** address 192.0.2.1',
    ],
    [
      'cisco_xe',
      ' pre-shared-key address 192.0.2.2 key PskKey7',
      ' pre-shared-key address 192.0.2.2 key ***',
    ],
    ['cisco_xe', ' pre-shared-key local PskKey8', ' pre-shared-key local ***'],
    ['cisco_ios', 'snmp-server community Comm9 RO 10', 'snmp-server community *** RO 10'],
    [
      'cisco_ios',
      'snmp-server host 192.0.2.3 version 2c Comm10',
      'snmp-server host 192.0.2.3 version 2c ***',
    ],
    [
      'cisco_ios',
      'snmp-server user mon grp v3 auth sha AuthKey11 priv aes 128 PrivKey12',
      'snmp-server user mon grp v3 auth sha *** priv aes 128 ***',
    ],
    [
      'cisco_nxos',
      'snmp-server user mon network-operator auth sha AuthKey13 priv aes-128 PrivKey14',
      'snmp-server user mon network-operator auth sha *** priv aes-128 ***',
    ],
    ['cisco_ios', ' wpa-psk ascii 0 WpaKey15', ' wpa-psk ascii 0 ***'],
    ['cisco_ios', ' password 7 13061E010803', ' password 7 ***'],
    ['cisco_ios', ' neighbor 192.0.2.4 password BgpKey16', ' neighbor 192.0.2.4 password ***'],
    [
      'cisco_ios',
      ' ip ospf message-digest-key 1 md5 OspfKey17',
      ' ip ospf message-digest-key 1 md5 ***',
    ],
    ['cisco_ios', 'ntp authentication-key 1 md5 NtpKey18 7', 'ntp authentication-key 1 md5 *** 7'],
  ];
  for (const [platform, line, expected] of cases) {
    assert.equal(recorded(platform, [line]), `${expected}\n`, `${platform}: ${line}`);
  }
});

test('when Junos and VRP configuration holds secrets, then their own forms are masked', () => {
  const cases: [string, string, string][] = [
    [
      'juniper_junos',
      'set system root-authentication encrypted-password "$6$abc$def"',
      'set system root-authentication encrypted-password ***',
    ],
    [
      'juniper_junos',
      '    encrypted-password "$6$abc$def"; ## SECRET-DATA',
      '    encrypted-password ***; ## SECRET-DATA',
    ],
    [
      'juniper_junos',
      '        authentication-key "$9$Hk5FCA0IhruRhSyKvL"; ## SECRET-DATA',
      '        authentication-key ***; ## SECRET-DATA',
    ],
    [
      'juniper_junos',
      '    secret "$9$dkbYoZUHqfT"; ## SECRET-DATA',
      '    secret ***; ## SECRET-DATA',
    ],
    [
      'juniper_junos',
      'set protocols bgp group x authentication-key $9$abcDEF',
      'set protocols bgp group x authentication-key ***',
    ],
    [
      'juniper_junos',
      '  pre-shared-key ascii-text "$9$qfz6AuOEhr"; ## SECRET-DATA',
      '  pre-shared-key ascii-text ***; ## SECRET-DATA',
    ],
    [
      'juniper_junos',
      'set snmp community JunComm1 authorization read-only',
      'set snmp community *** authorization read-only',
    ],
    ['juniper_junos', 'some-knob "$9$XyZ1234"', 'some-knob ***'],
    [
      'huawei',
      ' local-user admin password irreversible-cipher $1c$abc$def',
      ' local-user admin password irreversible-cipher ***',
    ],
    [
      'huawei',
      ' snmp-agent community read cipher %^%#Abc123%^%#',
      ' snmp-agent community read cipher ***',
    ],
    ['huawei_vrpv8', ' pre-shared-key cipher %^%#Xyz%^%#', ' pre-shared-key cipher ***'],
    ['huawei', ' radius-server shared-key cipher VrpKey2', ' radius-server shared-key cipher ***'],
  ];
  for (const [platform, line, expected] of cases) {
    assert.equal(recorded(platform, [line]), `${expected}\n`, `${platform}: ${line}`);
  }
});

test('when text says password= or secret=, then any platform masks the value; an unknown platform gets every family', () => {
  assert.equal(
    recorded('linux', ['curl -u x "https://h/?password=Gen1&x=1"']),
    'curl -u x "https://h/?password=***&x=1"\n',
  );
  assert.equal(recorded('cisco_ios', ['secret=Gen2 other']), 'secret=*** other\n');
  assert.equal(recorded('autodetect', ['tacacs-server key Gen3']), 'tacacs-server key ***\n');
  assert.equal(recorded('autodetect', ['x cipher Gen4']), 'x cipher ***\n');
  // Outside their family, a word is just a word: an IOS `ssh cipher` is not a VRP secret.
  assert.equal(
    recorded('cisco_ios', ['ip ssh server algorithm cipher aes256-ctr']),
    'ip ssh server algorithm cipher aes256-ctr\n',
  );
  // The echo of a prompt keeps its line: nothing after a bare `Password:` is taken.
  assert.equal(recorded('cisco_ios', ['Password:']), 'Password:\n');
});
