// Unit tests of the TTP entry point: rejected templates and ttp:// references.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseTtp, TtpErrorCode, TtpTemplateError } from '../src/ttp/mod.js';

function withTemplatesDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'ttp-mod-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'platform'));
  writeFileSync(
    join(dir, 'platform', 'show_version.txt'),
    '<group name="version">\nVersion {{ version }}\n</group>\n',
  );
  return dir;
}

function isTemplateError(code: string, pattern: RegExp) {
  return (err: unknown): boolean =>
    err instanceof TtpTemplateError &&
    err.name === 'TtpTemplateError' &&
    err.code === code &&
    pattern.test(err.message);
}

test('when a template embeds a <macro>, then it is rejected', () => {
  const template =
    '<macro>\ndef f(data):\n    return data\n</macro>\n<group>\nhostname {{ name | macro("f") }}\n</group>';
  assert.throws(
    () => parseTtp(template, 'hostname r1'),
    isTemplateError(
      TtpErrorCode.MacroNotSupported,
      /macro is not supported: templates may not embed Python/,
    ),
  );
});

test('when a match variable calls macro(), then the template is rejected', () => {
  assert.throws(
    () => parseTtp('<group>\nhostname {{ name | macro("f") }}\n</group>', 'hostname r1'),
    isTemplateError(TtpErrorCode.MacroNotSupported, /macro is not supported/),
  );
});

test('when the template is a ttp:// reference, then it is read from the templates directory', (t) => {
  const dir = withTemplatesDir(t);
  const result = parseTtp('ttp://platform/show_version.txt', 'Version 15.2\n', {
    templatesDir: dir,
  });
  assert.deepStrictEqual(result, [[{ version: { version: '15.2' } }]]);
});

test('when a template extends a ttp:// reference, then the referenced groups are included', (t) => {
  const dir = withTemplatesDir(t);
  const template =
    '<extend template="ttp://platform/show_version.txt"/>\n<group name="host">\nhostname {{ name }}\n</group>';
  const result = parseTtp(template, 'hostname r1\nVersion 15.2\n', { templatesDir: dir });
  assert.deepStrictEqual(result, [[{ version: { version: '15.2' }, host: { name: 'r1' } }]]);
});

test('when a ttp:// reference climbs out of the templates directory, then it is rejected', (t) => {
  const dir = withTemplatesDir(t);
  for (const ref of [
    'ttp://../secret.txt',
    'ttp://platform/../../secret.txt',
    'ttp:///etc/passwd',
  ]) {
    assert.throws(
      () => parseTtp(ref, '', { templatesDir: dir }),
      isTemplateError(TtpErrorCode.PathTraversal, /outside the templates directory/),
      ref,
    );
  }
});

test('when a symlink in the templates directory points outside it, then it is rejected', (t) => {
  const dir = withTemplatesDir(t);
  const outside = mkdtempSync(join(tmpdir(), 'ttp-outside-'));
  t.after(() => rmSync(outside, { recursive: true, force: true }));
  writeFileSync(join(outside, 'secret.txt'), 'secret {{ x }}\n');
  symlinkSync(join(outside, 'secret.txt'), join(dir, 'platform', 'link.txt'));
  assert.throws(
    () => parseTtp('ttp://platform/link.txt', '', { templatesDir: dir }),
    isTemplateError(TtpErrorCode.PathTraversal, /outside the templates directory/),
  );
});

test('when no templates directory is configured, then a ttp:// reference fails clearly', () => {
  assert.throws(
    () => parseTtp('ttp://platform/show_version.txt', ''),
    isTemplateError(TtpErrorCode.TemplatesDirNotConfigured, /no templates directory is configured/),
  );
});

test('when the caller names its setting, then the missing-directory error names it', () => {
  assert.throws(
    () =>
      parseTtp('<extend template="ttp://platform/x.txt"/>', '', {
        templatesDirSetting: 'SVC_TTP_TEMPLATES_DIR',
      }),
    isTemplateError(
      TtpErrorCode.TemplatesDirNotConfigured,
      /cannot load 'ttp:\/\/platform\/x.txt': no templates directory is configured \(set SVC_TTP_TEMPLATES_DIR\)/,
    ),
  );
});

test('when a ttp:// file does not exist, then the error names it', (t) => {
  const dir = withTemplatesDir(t);
  assert.throws(
    () => parseTtp('ttp://platform/missing.txt', '', { templatesDir: dir }),
    isTemplateError(TtpErrorCode.TemplateNotFound, /ttp:\/\/platform\/missing\.txt/),
  );
});

test('when groups use paths, lists and defaults, then results nest like TTP', () => {
  const template = [
    '<group name="interfaces*">',
    'interface {{ name }}',
    ' description {{ description | ORPHRASE }}',
    ' ip address {{ ip | IP }} {{ mask }}',
    ' shutdown {{ disabled | set(True) }}',
    '</group>',
  ].join('\n');
  const data =
    'interface Gi1\n description uplink to core\n ip address 10.0.0.1 255.255.255.0\n shutdown\ninterface Gi2\n';
  assert.deepStrictEqual(parseTtp(template, data), [
    [
      {
        interfaces: [
          {
            name: 'Gi1',
            description: 'uplink to core',
            ip: '10.0.0.1',
            mask: '255.255.255.0',
            disabled: true,
          },
          { name: 'Gi2' },
        ],
      },
    ],
  ]);
});
