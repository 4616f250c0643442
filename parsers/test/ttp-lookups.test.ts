// Unit tests of TTP lookup tables (every loader that needs no Python) and the match functions
// that read them. Expected results follow TTP's documentation ("Lookup Tables", match variable
// functions lookup/rlookup/gpvlookup) and the reference loaders' rules.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fnmatch } from '../src/ttp/match-functions.js';
import { parseTtp, TtpErrorCode, TtpTemplateError } from '../src/ttp/mod.js';

const BGP = '<input load="text">\nrouter bgp 65100\n</input>\n';

function only(result: unknown): unknown {
  return (result as unknown[][])[0]?.[0];
}

describe('TTP lookup tables', () => {
  test('when a csv lookup is used with add_field, then the row lands under the new field', () => {
    const template = `<lookup name="aux_csv" load="csv">
ASN,as_name,as_description,prefix_num
65100,Subs,Private ASN,734
65200,Privs,Undef ASN,121
</lookup>
${BGP}
<group name="bgp_config">
router bgp {{ bgp_as | lookup("aux_csv", add_field="as_details") }}
</group>`;
    assert.deepEqual(only(parseTtp(template, '')), {
      bgp_config: {
        bgp_as: '65100',
        as_details: { as_name: 'Subs', as_description: 'Private ASN', prefix_num: '734' },
      },
    });
  });

  test('when a csv lookup names its key column, then rows are keyed by it', () => {
    const template = `<lookup name="aux" load="csv" key="as_name">
ASN,as_name,"quoted, description"
65100,Subs,"Private ""ASN"", first"
</lookup>
<group name="r">
as {{ name | lookup("aux") }}
</group>`;
    assert.deepEqual(only(parseTtp(template, 'as Subs')), {
      r: { name: { ASN: '65100', 'quoted, description': 'Private "ASN", first' } },
    });
  });

  test('when a csv key column is not in the headers, then the table is empty', () => {
    const template = `<lookup name="aux" load="csv" key="nope">
ASN,as_name
65100,Subs
</lookup>
<group name="r">
as {{ asn | lookup("aux") }}
</group>`;
    assert.deepEqual(only(parseTtp(template, 'as 65100')), { r: { asn: '65100' } });
  });

  test('when an ini lookup is used by rlookup, then the first key inside the match wins', () => {
    const template = `<lookup name="locations" load="ini">
[cities]
-mel- : 7 Name St, Suburb A, Melbourne, Postal Code
-bri- : 8 Name St, Suburb B, Brisbane, Postal Code
</lookup>

<group name="bgp_config">
router bgp {{ bgp_as }}
 <group name="peers">
  neighbor {{ peer }}
    description {{ description | rlookup('locations.cities', add_field='location') }}
 </group>
</group>`;
    const data = `router bgp 65100
  neighbor 10.145.1.9
    description vic-mel-core1
  !
  neighbor 192.168.101.1
    description qld-bri-core1
  !
  neighbor 10.0.0.1
    description nsw-syd-core1`;
    assert.deepEqual(only(parseTtp(template, data)), {
      bgp_config: {
        bgp_as: '65100',
        peers: [
          {
            description: 'vic-mel-core1',
            location: '7 Name St, Suburb A, Melbourne, Postal Code',
            peer: '10.145.1.9',
          },
          {
            description: 'qld-bri-core1',
            location: '8 Name St, Suburb B, Brisbane, Postal Code',
            peer: '192.168.101.1',
          },
          // no key occurs in the match: the result is left as it is
          { description: 'nsw-syd-core1', peer: '10.0.0.1' },
        ],
      },
    });
  });

  test('when ini data uses DEFAULT, continuation lines and interpolation, then configparser rules apply', () => {
    const template = `<lookup name="t" load="ini">
[DEFAULT]
site = MEL
# a comment
[Vlan10]
Name = users-%(site)s
Note = first
  second
Pct = 100%%
</lookup>
<group name="r">
vlan {{ id | lookup("t", add_field="info") }}
</group>`;
    assert.deepEqual(only(parseTtp(template, 'vlan Vlan10')), {
      r: {
        id: 'Vlan10',
        info: { site: 'MEL', Name: 'users-MEL', Note: 'first\nsecond', Pct: '100%' },
      },
    });
  });

  test('when a yaml lookup is used, then the YAML mapping is the table', () => {
    const template = `<lookup name="yaml_look" load="yaml">
'65100':
  as_description: Private ASN
  as_name: Subs
  prefix_num: '734'
'65101':
  as_description: Cust-1 ASN
  as_name: Cust1
  prefix_num: '156'
</lookup>
${BGP}
<group name="bgp_config">
router bgp {{ bgp_as | lookup("yaml_look", add_field="as_details") }}
</group>`;
    assert.deepEqual(only(parseTtp(template, '')), {
      bgp_config: {
        bgp_as: '65100',
        as_details: { as_description: 'Private ASN', as_name: 'Subs', prefix_num: '734' },
      },
    });
  });

  test('when a json lookup is used without add_field, then the match is replaced', () => {
    const template = `<lookup name="j" load="json">
{"65100": "Subs"}
</lookup>
<group name="r">
router bgp {{ asn | lookup("j") }}
</group>`;
    assert.deepEqual(only(parseTtp(template, 'router bgp 65100')), { r: { asn: 'Subs' } });
  });

  test('when gpvlookup is used, then the keys whose glob patterns match are listed', () => {
    const template = `<lookup name="domains" load="yaml">
edge: ["*-edge-*", "*-pe?"]
core: ["*core*"]
</lookup>
<group name="hosts">
host {{ name | gpvlookup("domains", add_field="domain") }}
</group>
<group name="all">
any {{ name | gpvlookup("domains", multimatch=True) }}
</group>`;
    const data = 'host mel-edge-1\nhost mel-pe1\nhost lab\nany core-pe1';
    assert.deepEqual(only(parseTtp(template, data)), {
      hosts: [
        { name: 'mel-edge-1', domain: ['edge'] },
        { name: 'mel-pe1', domain: ['edge'] },
        { name: 'lab' },
      ],
      all: { name: ['edge', 'core'] },
    });
  });

  test('when fnmatch patterns use sets, then they follow Python fnmatch', () => {
    assert.equal(fnmatch('sw1', 'sw[0-9]'), true);
    assert.equal(fnmatch('swa', 'sw[!0-9]'), true);
    assert.equal(fnmatch('sw1', 'sw[!0-9]'), false);
    assert.equal(fnmatch('a[b', 'a[b'), true);
    assert.equal(fnmatch('a.b', 'a?b'), true);
    assert.equal(fnmatch('SW1', 'sw*'), false);
  });

  test('when a lookup loader is unknown or its data is malformed, then the template is rejected clearly', () => {
    const bad = (load: string, body: string) =>
      `<lookup name="x" load="${load}">\n${body}\n</lookup>\n<group>\na {{ b }}\n</group>`;
    const rejects = (template: string, message: RegExp) =>
      assert.throws(
        () => parseTtp(template, 'a 1'),
        (err: unknown) =>
          err instanceof TtpTemplateError &&
          err.code === TtpErrorCode.InvalidTemplate &&
          message.test(err.message),
      );
    rejects(
      bad('xml', 'x'),
      /unsupported loader 'xml' \(supported: python, json, yaml, ini, csv\)/,
    );
    rejects(bad('ini', 'a = 1'), /ini loader: line 2 stands before any \[section\]/);
    rejects(bad('json', '{'), /json loader:/);
    rejects(bad('yaml', 'a: [1'), /yaml loader:/);
  });
});
