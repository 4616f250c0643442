import { test } from 'node:test';
import assert from 'node:assert/strict';
import { commitFormsOf, commitOptionIssues, sessionNameOf } from '@svc/proto';
import { BUILTIN_DRIVERS } from '../src/mod.js';

test('each platform types its own commit form for the options', () => {
  const junos = commitFormsOf('juniper_junos')!;
  assert.equal(
    junos.command({ confirmed_minutes: 5, comment: 'uplink' }),
    'commit confirmed 5 comment "uplink"',
  );
  assert.equal(junos.command({ comment: 'x' }), 'commit comment "x"');
  assert.equal(junos.command({}), 'commit');
  // XR counts the trial in seconds and reads the rest of the line as the comment.
  assert.equal(
    commitFormsOf('cisco_xr')!.command({ confirmed_minutes: 2, comment: 'a b' }),
    'commit confirmed 120 comment a b',
  );
  assert.equal(
    commitFormsOf('arista_eos')!.command({ confirmed_minutes: 60 }),
    'commit timer 01:00:00',
  );
  assert.equal(commitFormsOf('cisco_ios'), null);
});

test('commit options a platform lacks are issues naming the member', () => {
  assert.deepEqual(
    commitOptionIssues('cisco_ios', { comment: 'x' }, BUILTIN_DRIVERS).map((i) => i.loc),
    [['body', 'commit']],
  );
  assert.deepEqual(
    commitOptionIssues('arista_eos', { comment: 'x', check: true }, BUILTIN_DRIVERS).map(
      (i) => i.loc,
    ),
    [
      ['body', 'commit', 'comment'],
      ['body', 'commit', 'check'],
    ],
  );
  assert.deepEqual(
    commitOptionIssues('arista_eos', { confirmed_minutes: 5 }, BUILTIN_DRIVERS, true).map(
      (i) => i.loc,
    ),
    [['body', 'save_config']],
  );
  // Junos persists on commit: save_config adds nothing and is no problem.
  assert.deepEqual(commitOptionIssues('juniper_junos', { check: true }, BUILTIN_DRIVERS, true), []);
});

test('a job session name is stable and safe for the CLI', () => {
  assert.equal(sessionNameOf('6f1c2d3e-aaaa-bbbb'), 'svc-6f1c2d3eaaaa');
});
