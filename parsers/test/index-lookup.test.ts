import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ParserErrorCode, TemplateError } from '../src/errors.js';
import {
  expandCompletion,
  findTemplates,
  loadTemplateIndex,
  parseWithIndex,
} from '../src/textfsm/index-lookup.js';
import { ntcSkip, ntcTemplatesDir } from './shared-dir.js';

describe('index lookup', () => {
  test('when a command uses [[...]], then it expands as CliTable does', () => {
    assert.equal(expandCompletion('sh[[ow]] ver[[sion]]'), 'sh(o(w)?)? ver(s(i(o(n)?)?)?)?');
  });

  test(
    'when given an ntc-templates directory, then abbreviations and prefixes select the template',
    { skip: ntcSkip },
    () => {
      assert.deepEqual(findTemplates(ntcTemplatesDir, 'cisco_ios', 'sh ver'), [
        'cisco_ios_show_version.textfsm',
      ]);
      assert.deepEqual(findTemplates(ntcTemplatesDir, 'cisco_ios', 'show version | include x'), [
        'cisco_ios_show_version.textfsm',
      ]);
      assert.equal(findTemplates(ntcTemplatesDir, 'cisco_ios', 'frobnicate'), undefined);
      assert.equal(findTemplates(ntcTemplatesDir, 'no_such_os', 'show version'), undefined);
      assert.equal(
        loadTemplateIndex(ntcTemplatesDir),
        loadTemplateIndex(ntcTemplatesDir),
        'cached per directory',
      );
    },
  );

  test('when a row names several templates, then the results merge on Key values', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-index-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(
      join(dir, 'index'),
      [
        '# comment',
        'Template, Hostname, Platform, Command',
        '',
        'a.textfsm:b.textfsm, .*, os_x, sh[[ow]] th[[ings]]',
        'c.textfsm, .*, os_.*, sh[[ow]] th[[ings]]',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(dir, 'a.textfsm'),
      'Value Key NAME (\\S+)\nValue STATE (up|down)\n\nStart\n  ^${NAME} is ${STATE} -> Record\n',
    );
    writeFileSync(
      join(dir, 'b.textfsm'),
      'Value Key NAME (\\S+)\nValue SPEED (\\d+)\n\nStart\n  ^${NAME} speed ${SPEED} -> Record\n',
    );
    writeFileSync(join(dir, 'c.textfsm'), 'Value X (.*)\n\nStart\n  ^${X} -> Record\n');
    const input = 'e1 is up\ne2 is down\ne2 speed 10\ne9 speed 40\n';
    assert.deepEqual(findTemplates(dir, 'os_x', 'show things'), ['a.textfsm', 'b.textfsm']);
    assert.deepEqual(findTemplates(dir, 'os_y', 'sh th'), ['c.textfsm']);
    assert.deepEqual(parseWithIndex(dir, 'os_x', 'sh thin', input), [
      { name: 'e1', state: 'up', speed: '' },
      { name: 'e2', state: 'down', speed: '10' },
    ]);
    assert.throws(
      () => parseWithIndex(dir, 'junos', 'show things', input),
      (err: unknown) =>
        err instanceof TemplateError && err.code === ParserErrorCode.TemplateNotFound,
    );
  });
});
