import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ntcDir, ntcSkip, ntcTemplatesDir, parsersDir } from './shared-dir.js';

const cli = join(parsersDir, 'dist', 'src', 'cli.js');

function run(
  args: string[],
  stdin?: string,
): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cli, ...args], { input: stdin, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const showVersion = join(
  ntcDir,
  'tests',
  'cisco_ios',
  'show_version',
  'cisco_ios_show_version.raw',
);

test('when textfsm is run on a template and input, then it prints lower-cased records as JSON', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, 't.textfsm'),
    'Value Key NAME (\\S+)\nValue List IPS (\\S+)\n\nStart\n  ^if ${NAME}\n  ^ip ${IPS}\n  ^end -> Record\n',
  );
  writeFileSync(join(dir, 'in.txt'), 'if e1\nip 10.0.0.1\nip 10.0.0.2\nend\n');
  const r = run(['textfsm', join(dir, 't.textfsm'), join(dir, 'in.txt')]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), [{ name: 'e1', ips: ['10.0.0.1', '10.0.0.2'] }]);
});

test(
  'when index selects a template, then its file name is printed; when none, exit 1',
  { skip: ntcSkip },
  () => {
    const ok = run(['index', ntcTemplatesDir, 'cisco_ios', 'sh ver']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, 'cisco_ios_show_version.textfsm\n');
    const multi = run(['index', ntcTemplatesDir, 'cisco_ios', 'show module']);
    assert.match(multi.stdout, /^cisco_ios_show_module\.textfsm:.+\.textfsm\n$/);
    const none = run(['index', ntcTemplatesDir, 'cisco_ios', 'frobnicate']);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no template/);
  },
);

test(
  'when batch gets requests, then it answers each in order and survives errors',
  { skip: ntcSkip },
  () => {
    const lines = [
      {
        id: 1,
        kind: 'index',
        dir: ntcTemplatesDir,
        platform: 'cisco_ios',
        command: 'show version',
      },
      {
        id: 2,
        kind: 'textfsm',
        template: join(ntcTemplatesDir, 'cisco_ios_show_version.textfsm'),
        input: showVersion,
      },
      {
        id: 3,
        kind: 'textfsm',
        template: join(ntcTemplatesDir, 'missing.textfsm'),
        input: showVersion,
      },
      { id: 4, kind: 'index', dir: ntcTemplatesDir, platform: 'cisco_ios', command: 'frobnicate' },
    ].map((l) => JSON.stringify(l));
    const r = run(['batch'], lines.join('\n') + '\nnot json\n');
    assert.equal(r.code, 0, r.stderr);
    const answers = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(answers.length, 5);
    assert.deepEqual(answers[0], { id: 1, result: 'cisco_ios_show_version.textfsm' });
    assert.equal(answers[1]?.['id'], 2);
    assert.equal(
      (answers[1]?.['result'] as Array<Record<string, unknown>>)[0]?.['hostname'],
      'router1',
    );
    assert.equal(answers[2]?.['id'], 3);
    assert.match(String(answers[2]?.['error']), /ENOENT/);
    assert.deepEqual(answers[3], { id: 4, result: null });
    assert.equal(answers[4]?.['id'], null);
    assert.equal(typeof answers[4]?.['error'], 'string');
  },
);

test('when arguments are wrong, then usage is printed with exit code 2', () => {
  const r = run(['textfsm', 'only-one']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /usage:/);
  assert.equal(run([]).code, 2);
});
