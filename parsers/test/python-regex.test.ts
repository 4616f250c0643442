import * as assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TemplateError } from '../src/errors.js';
import { parseTextFsm } from '../src/textfsm/engine.js';
import { PythonRegex, PythonRegexError } from '../src/textfsm/python-regex.js';

function m(pattern: string, subject: string): string[] | null {
  const r = new PythonRegex(pattern).match(subject);
  return r === null ? null : [...r].map((g) => g ?? '');
}

describe('Python regex translation', () => {
  test('when named groups and references are used, then they map to JavaScript', () => {
    assert.deepEqual({ ...new PythonRegex('(?P<a>x)(?P=a)').match('xx')?.groups }, { a: 'x' });
    assert.equal(m('(?P<a>x)(?P=a)', 'xy'), null);
    assert.deepEqual(m('(a)\\1', 'aa'), ['aa', 'a']);
  });

  test('when Python-only escapes are used, then they keep Python meaning', () => {
    assert.deepEqual(m('a\\-b\\:c\\ d\\"e\\%', 'a-b:c d"e%'), ['a-b:c d"e%']);
    assert.deepEqual(m('[\\w\\-\\.]+', 'ab-c.d'), ['ab-c.d']);
    assert.deepEqual(m('\\a\\x41\\101\\0', '\x07AA\0'), ['\x07AA\0']);
    assert.deepEqual(m('[]a]+', ']a]'), [']a]']);
  });

  test('when {,n} or a non-quantifier brace is used, then Python semantics apply', () => {
    assert.deepEqual(m('a{,2}', 'aaa'), ['aa']);
    assert.deepEqual(m('a{x}', 'a{x}'), ['a{x}']);
    assert.deepEqual(m('a{}', 'a{}'), ['a{}']);
  });

  test('when \\A, \\Z, $ and . are used, then they behave as in Python', () => {
    assert.deepEqual(m('\\Aab\\Z', 'ab'), ['ab']);
    assert.equal(m('ab\\Z', 'ab\n'), null);
    assert.deepEqual(m('ab$', 'ab\n'), ['ab']);
    assert.deepEqual(m('a.c', 'a\rc'), ['a\rc']);
    assert.equal(m('a.c', 'a\nc'), null);
  });

  test('when inline flags are used, then global and scoped flags apply', () => {
    assert.deepEqual(m('(?i)abc', 'ABC'), ['ABC']);
    assert.deepEqual(m('a(?i:b)c', 'aBc'), ['aBc']);
    assert.equal(m('a(?i:b)c', 'aBC'), null);
    assert.deepEqual(m('(?x) a b # comment', 'ab'), ['ab']);
    assert.deepEqual(m('(?s)a.b', 'a\nb'), ['a\nb']);
    assert.deepEqual(m('(?i)[a-c]+', 'AbC'), ['AbC']);
  });

  test('when lookbehind and lookahead are used, then they are kept', () => {
    assert.deepEqual(m('\\w+(?<=c)(?=!)', 'abc!'), ['abc']);
    assert.deepEqual(m('(?:(?=a))?a', 'a'), ['a']);
  });

  test('when the subject is not ASCII, then \\w, \\d and \\b follow Unicode as Python does', () => {
    assert.deepEqual(m('\\w+', 'héllo wörld'), ['héllo']);
    assert.deepEqual(m('\\d+', '١٢3'), ['١٢3']);
    assert.deepEqual(m('\\w+\\b', 'ñu x'), ['ñu']);
    assert.deepEqual(m('[\\W]+', '  é'), ['  ']);
  });

  const untranslatable: Array<[string, RegExp]> = [
    ['a*+', /possessive/],
    ['(?>a)', /atomic/],
    ['(?(1)a|b)', /conditional/],
    ['\\N{DIGIT ONE}', /named Unicode/],
    ['\\q', /bad escape \\q/],
    ['(?<name>a)', /unknown extension/],
    ['(a', /missing \)/],
    ['a**', /multiple repeat/],
    ['*a', /nothing to repeat/],
    ['\\2(a)', /invalid group reference/],
    ['(?L)a', /LOCALE/],
  ];
  for (const [pattern, message] of untranslatable) {
    test(`when the pattern is ${pattern}, then it is rejected clearly`, () => {
      assert.throws(
        () => new PythonRegex(pattern),
        (err: unknown) => err instanceof PythonRegexError && message.test(err.message),
      );
    });
  }

  test('when a template rule cannot be translated, then TemplateError names the line', () => {
    const t = 'Value A (\\S+)\n\nStart\n  ^${A}++ -> Record\n';
    assert.throws(
      () => parseTextFsm(t, 'x'),
      (err: unknown) =>
        err instanceof TemplateError && err.line === 4 && /possessive.*Line: 4/.test(err.message),
    );
  });
});

// Python's `re` keeps, for a group inside a repeated atom, the value of the last iteration in
// which the group took part; JavaScript resets it every iteration. Expected values below are
// derived by hand from Python's rule (last participating iteration on the successful path).
describe('captures inside repeated groups (Python semantics)', () => {
  const cases: [pattern: string, subject: string, expected: (string | undefined)[]][] = [
    // iterations `a`, `b`: (a) last took part in the first
    ['(?:(a)|b)+', 'ab', ['ab', 'a']],
    ['(?:(a)|b)+', 'abb', ['abb', 'a']],
    // each alternative keeps its own last value
    ['(?:(a)|(b))+', 'ab', ['ab', 'a', 'b']],
    ['(?:(a)|(b))+', 'aba', ['aba', 'a', 'b']],
    // nested: (x) took part in the first outer iteration only
    ['(?:(?:(x)|y)z)+', 'xzyz', ['xzyz', 'x']],
    // nested repeats: x in the first inner iteration of the first outer iteration
    ['(?:(?:(x)|y)+z)+', 'xyzyz', ['xyzyz', 'x']],
    // counted and lazy repeats
    ['(?:(a)|b){2}c', 'abc', ['abc', 'a']],
    ['(?:(a)|b)+?c', 'abc', ['abc', 'a']],
    // the value is the LAST participating iteration, not the first
    ['(?:(\\d)|-)*', '1-2--', ['1-2--', '2']],
    // a group that never took part stays unset
    ['(?:(a)|b)*(?:(a)|c)*', 'abac', ['abac', 'a', undefined]],
    // a back-reference inside the repeated atom is replayed with it
    ['(?:(a)\\1|b)+', 'aab', ['aab', 'a']],
    // the group took part in the last iteration: nothing to recover
    ['(?:(a)|b)+', 'ba', ['ba', 'a']],
  ];
  for (const [pattern, subject, expected] of cases) {
    test(`when ${pattern} matches ${subject}, then groups are ${JSON.stringify(expected)}`, () => {
      const r = new PythonRegex(pattern).match(subject);
      assert.deepEqual(r === null ? null : [...r], expected);
    });
  }

  test('when a named group is recovered, then groups[name] carries it too', () => {
    const r = new PythonRegex('(?:(?P<v>\\d)|-)+(?P<end>!)').match('1-2--!');
    assert.deepEqual({ ...r?.groups }, { v: '2', end: '!' });
  });

  test('when the subject is not ASCII, then the Unicode variant recovers the same way', () => {
    const r = new PythonRegex('(?:(é)|b)+').match('éb');
    assert.deepEqual(r === null ? null : [...r], ['éb', 'é']);
  });

  test('when the NX-OS LLDP template sees a trailing blank iteration, then the last capability is kept', () => {
    // the template of ntc-templates cisco_nxos_show_lldp_neighbors (the rule shape that failed)
    const t = [
      'Value NEIGHBOR_NAME (\\S+)',
      'Value LOCAL_INTERFACE (\\S+)',
      'Value NEIGHBOR_INTERFACE (\\S+)',
      'Value CAPABILITIES (\\w+)',
      '',
      'Start',
      '  ^${NEIGHBOR_NAME}\\s+${LOCAL_INTERFACE}\\s+\\d+\\s+(${CAPABILITIES}?\\s)+\\s+${NEIGHBOR_INTERFACE} -> Record',
      '',
    ].join('\n');
    // iterations `B `, `R `, ` ` (CAPABILITIES absent), then `\s+` takes the last space
    const records = parseTextFsm(t, 'sw1   Eth1/1   120   B R    Eth1/2\n');
    assert.deepEqual(records, [
      {
        NEIGHBOR_NAME: 'sw1',
        LOCAL_INTERFACE: 'Eth1/1',
        NEIGHBOR_INTERFACE: 'Eth1/2',
        CAPABILITIES: 'R',
      },
    ]);
  });
});
