import * as assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TemplateError, TextFsmError } from '../src/errors.js';
import { parseTextFsmLower } from '../src/textfsm/cli-table.js';
import { TextFsm, parseTextFsm, splitLines } from '../src/textfsm/engine.js';

function tpl(...lines: string[]): string {
  return lines.join('\n') + '\n';
}

describe('values and options', () => {
  test('when a rule records, then each record is keyed by Value name', () => {
    const t = tpl('Value A (\\S+)', 'Value B (\\d+)', '', 'Start', '  ^${A} ${B} -> Record');
    assert.deepEqual(parseTextFsm(t, 'x 1\ny 2\n'), [
      { A: 'x', B: '1' },
      { A: 'y', B: '2' },
    ]);
  });

  test('when a value is unset, then its field is an empty string', () => {
    const t = tpl(
      'Value A (\\S+)',
      'Value B (\\d+)',
      '',
      'Start',
      '  ^a=${A} -> Record',
      '  ^b=${B} -> Record',
    );
    assert.deepEqual(parseTextFsm(t, 'a=x\nb=2'), [
      { A: 'x', B: '' },
      { A: '', B: '2' },
    ]);
  });

  test('when Filldown is set, then the value carries into later records until Clearall', () => {
    const t = tpl(
      'Value Filldown H (\\S+)',
      'Value I (\\d+)',
      '',
      'Start',
      '  ^host ${H}',
      '  ^if ${I} -> Record',
      '  ^reset -> Clearall',
    );
    assert.deepEqual(parseTextFsm(t, 'host r1\nif 1\nif 2\nreset\nif 3'), [
      { H: 'r1', I: '1' },
      { H: 'r1', I: '2' },
      { H: '', I: '3' },
    ]);
  });

  test('when Required is unset, then the record is dropped', () => {
    const t = tpl(
      'Value Required A (\\S+)',
      'Value B (\\d+)',
      '',
      'Start',
      '  ^a=${A}',
      '  ^b=${B} -> Record',
    );
    assert.deepEqual(parseTextFsm(t, 'b=1\na=x\nb=2'), [{ A: 'x', B: '2' }]);
  });

  test('when Fillup is set, then the value fills earlier records upwards until a set one', () => {
    const t = tpl(
      'Value Fillup F (\\S+)',
      'Value I (\\d+)',
      '',
      'Start',
      '  ^if ${I} -> Record',
      '  ^f ${F}',
    );
    assert.deepEqual(parseTextFsm(t, 'if 1\nif 2\nf up\nif 3'), [
      { F: 'up', I: '1' },
      { F: 'up', I: '2' },
      // The current record still holds F when the next record is made.
      { F: 'up', I: '3' },
    ]);
  });

  test('when List is set, then matches accumulate; nested named groups become objects', () => {
    const t = tpl(
      'Value List L (\\S+)',
      'Value List P ((?P<name>\\w+):(?P<age>\\d+))',
      '',
      'Start',
      '  ^l ${L}',
      '  ^p ${P}',
      '  ^end -> Record',
    );
    assert.deepEqual(parseTextFsm(t, 'l a\nl b\np bob:3\nend\nl c\nend'), [
      { L: ['a', 'b'], P: [{ name: 'bob', age: '3' }] },
      { L: ['c'], P: [] },
    ]);
  });

  test('when the CliTable form is asked for, then keys are lower case and List items strings', () => {
    const t = tpl(
      'Value List P ((?P<n>\\w+)|-)',
      'Value Key NAME (\\S+)',
      '',
      'Start',
      '  ^${NAME} (${P})? -> Record',
    );
    assert.deepEqual(parseTextFsmLower(t, 'x y\nz \n'), [
      { p: ["{'n': 'y'}"], name: 'x' },
      { p: ['None'], name: 'z' },
    ]);
  });

  test('when a record holds only unset values, then it is not emitted', () => {
    const t = tpl('Value A (\\S+)', '', 'Start', '  ^x -> Record', '  ^a ${A} -> Record');
    assert.deepEqual(parseTextFsm(t, 'x\na 1\nx'), [{ A: '1' }]);
  });
});

describe('actions and states', () => {
  test('when Continue is used, then later rules see the same line', () => {
    const t = tpl(
      'Value A (\\S+)',
      'Value B (\\S+)',
      '',
      'Start',
      '  ^${A} -> Continue',
      '  ^\\S+ ${B} -> Record',
    );
    assert.deepEqual(parseTextFsm(t, 'p q'), [{ A: 'p', B: 'q' }]);
  });

  test('when Next.Record and a state change combine, then both happen', () => {
    const t = tpl(
      'Value A (\\S+)',
      '',
      'Start',
      '  ^begin -> Body',
      '',
      'Body',
      '  ^${A} -> Next.Record Body',
      '  ^stop -> Start',
    );
    assert.deepEqual(
      parseTextFsm(t, 'x\nbegin\n1\n2'),
      [{ A: 'begin' }, { A: '1' }, { A: '2' }].slice(1),
    );
  });

  test('when Clear is used, then non-Filldown values reset', () => {
    const t = tpl(
      'Value Filldown H (\\S+)',
      'Value A (\\S+)',
      '',
      'Start',
      '  ^h ${H}',
      '  ^a ${A}',
      '  ^clear -> Clear',
      '  ^rec -> Record',
      '',
      'EOF',
    );
    assert.deepEqual(parseTextFsm(t, 'h 1\na 2\nclear\nrec'), [{ H: '1', A: '' }]);
  });

  test('when NoRecord and Continue.Clearall are used, then they parse and act', () => {
    const t = tpl(
      'Value A (\\S+)',
      '',
      'Start',
      '  ^a ${A} -> NoRecord',
      '  ^z -> Continue.Clearall',
      '  ^z -> Record',
    );
    assert.deepEqual(parseTextFsm(t, 'a 1\nz'), []);
  });

  test('when Error fires, then parsing stops with its message', () => {
    const t = tpl(
      'Value A (\\S+)',
      '',
      'Start',
      '  ^bad -> Error "unexpected line"',
      '  ^${A} -> Record',
    );
    assert.throws(
      () => parseTextFsm(t, 'ok\nbad'),
      (err: unknown) =>
        err instanceof TextFsmError &&
        /Error: "unexpected line"\. Rule Line: 4\. Input Line: bad/.test(err.message),
    );
    const plain = tpl('Value A (\\S+)', '', 'Start', '  ^bad -> Error');
    assert.throws(() => parseTextFsm(plain, 'bad'), /State Error raised/);
  });

  test('when input ends, then the last record is implicitly recorded', () => {
    const t = tpl('Value A (\\S+)', '', 'Start', '  ^${A}');
    assert.deepEqual(parseTextFsm(t, 'x\ny'), [{ A: 'y' }]);
  });

  test('when an empty EOF state exists, then no implicit record is made', () => {
    const t = tpl('Value A (\\S+)', '', 'Start', '  ^${A}', '', 'EOF');
    assert.deepEqual(parseTextFsm(t, 'x'), []);
  });

  test('when a rule goes to End, then the remaining input is ignored and nothing is implicitly recorded', () => {
    const t = tpl('Value A (\\S+)', '', 'Start', '  ^stop -> End', '  ^${A} -> Record');
    assert.deepEqual(parseTextFsm(t, 'a\nstop\nb'), [{ A: 'a' }]);
  });

  test('when a rule goes to EOF without an EOF state, then the implicit record still happens', () => {
    const t = tpl('Value A (\\S+)', '', 'Start', '  ^stop -> EOF', '  ^${A}');
    assert.deepEqual(parseTextFsm(t, 'a\nstop\nb'), [{ A: 'a' }]);
  });

  test('when $$ and comments appear, then $$ is a literal $ anchor and comments are skipped', () => {
    const t = tpl(
      '# header comment',
      'Value A (\\S+)',
      '',
      '# states',
      'Start',
      '  # rule comment',
      '  ^${A}$$ -> Record',
    );
    assert.deepEqual(parseTextFsm(t, 'x\ny z'), [{ A: 'x' }]);
  });

  test('when the parser is reused, then each parse starts afresh', () => {
    const fsm = new TextFsm(tpl('Value A (\\S+)', '', 'Start', '  ^${A} -> Record'));
    assert.deepEqual(fsm.parse('a'), [{ A: 'a' }]);
    assert.deepEqual(fsm.parse('b'), [{ A: 'b' }]);
    assert.deepEqual(fsm.header, ['A']);
  });

  test('when text has mixed line endings, then lines split as Python splitlines', () => {
    assert.deepEqual(splitLines('a\r\nb\rc\nd\u2028e\n'), ['a', 'b', 'c', 'd', 'e']);
    assert.deepEqual(splitLines(''), []);
  });
});

describe('template errors', () => {
  const bad: Array<[string, string, RegExp]> = [
    ['no Start state', tpl('Value A (x)', '', 'Other', '  ^x'), /Missing state 'Start'/],
    [
      'unknown option',
      tpl('Value Bogus A (x)', '', 'Start', '  ^x'),
      /Unknown option "Bogus". Line 1/,
    ],
    ['value without parens', tpl('Value A x', '', 'Start'), /Unknown option "A"/],
    [
      'unbalanced value',
      tpl('Value A (x))', '', 'Start'),
      /must be contained within a '\(\)' pair/,
    ],
    [
      'duplicate value',
      tpl('Value A (x)', 'Value A (y)', '', 'Start'),
      /Duplicate declarations for Value 'A'. Line: 2/,
    ],
    [
      'rule without caret',
      tpl('Value A (x)', '', 'Start', '  x'),
      /Missing white space or carat.*Line: 4/,
    ],
    [
      'unknown state',
      tpl('Value A (x)', '', 'Start', '  ^x -> Nowhere'),
      /State 'Nowhere' not found/,
    ],
    [
      'continue with state',
      tpl('Value A (x)', '', 'Start', '  ^x -> Continue Start'),
      /with new state/,
    ],
    [
      'bad substitution',
      tpl('Value A (x)', '', 'Start', '  ^${B}'),
      /invalid variable substitution.*Line: 4/,
    ],
    ['lone dollar', tpl('Value A (x)', '', 'Start', '  ^x$'), /invalid variable substitution/],
    [
      'non-empty EOF',
      tpl('Value A (x)', '', 'Start', '  ^x', '', 'EOF', '  ^y'),
      /Non-Empty 'EOF' state/,
    ],
    [
      'reserved state name',
      tpl('Value A (x)', '', 'Start', '  ^x', '', 'Next'),
      /Invalid state name: 'Next'/,
    ],
    ['bad action', tpl('Value A (x)', '', 'Start', '  ^x -> Next.Bogus'), /Badly formatted rule/],
    [
      'text after values',
      tpl('Value A (x)', 'junk', '', 'Start'),
      /Expected blank line after last Value entry. Line: 2/,
    ],
  ];
  for (const [name, text, message] of bad) {
    test(`when the template has ${name}, then TemplateError names it`, () => {
      assert.throws(
        () => new TextFsm(text),
        (err: unknown) => err instanceof TemplateError && message.test(err.message),
      );
    });
  }
});
