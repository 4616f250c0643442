import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redactValues } from '../src/device/redaction.js';
import { redactError } from '../src/device/device-runner.js';
import { ErrorCode, SvcError } from '@svc/proto';

test('when a secret is a part of a longer word, address or number, then it is not masked there', () => {
  assert.equal(redactValues('administrator logged in', ['admin']), 'administrator logged in');
  assert.equal(redactValues('connected to 127.0.0.1:22', ['1']), 'connected to 127.0.0.1:22');
  assert.equal(redactValues('admin.example.net', ['admin']), 'admin.example.net');
  assert.equal(redactValues('file secret_v2', ['secret']), 'file secret_v2');
});

test('when a secret stands as a whole token, then it is masked wherever it stands', () => {
  assert.equal(redactValues('password admin', ['admin']), 'password ***');
  assert.equal(redactValues('the password is hunter2.', ['hunter2']), 'the password is ***.');
  assert.equal(redactValues('key=hunter2;', ['hunter2']), 'key=***;');
  assert.equal(redactValues('"hunter2"', ['hunter2']), '"***"');
  assert.equal(redactValues('user:hunter2@host', ['hunter2']), 'user:***@host');
  assert.equal(redactValues('hunter2', ['hunter2']), '***');
  assert.equal(redactValues('1 and 1', ['1']), '*** and ***');
  // A secret with punctuation at an edge is its own boundary there.
  assert.equal(redactValues('x!pa ss', ['!pa ss']), 'x***');
});

test('when an error names the host and port, then they are shown whole whatever the password; a command shows whole unless the secret is one of its tokens', () => {
  const parts = { host: '127.0.0.1', address: '127.0.0.1', port: 22 };
  const refused = redactError(
    new SvcError(ErrorCode.CONNECTION_REFUSED, 'connection refused by 127.0.0.1:22'),
    ['1', '22', '127.0.0.1'],
    parts,
  );
  assert.equal(refused.message, 'connection refused by 127.0.0.1:22');
  const rejected = redactError(
    new SvcError(
      ErrorCode.COMMAND_ERROR,
      'command "show ip route 10.1.1.1" rejected by the device: % Invalid input 1',
    ),
    ['1'],
    parts,
  );
  assert.equal(
    rejected.message,
    'command "show ip route 10.1.1.1" rejected by the device: % Invalid input ***',
  );
  // A secret typed as a token of a command is still a secret.
  const typed = redactError(
    new SvcError(ErrorCode.COMMAND_ERROR, 'command "show secret hunter2" rejected'),
    ['hunter2'],
    parts,
  );
  assert.equal(typed.message, 'command "show secret ***" rejected');
});

test('when a shown part is a piece of a secret, then it shields nothing of the secret', () => {
  // User `svc`, password `svc-demo`: the user is shown whole only where it is a token itself.
  assert.equal(
    redactValues('user svc: command "show secret svc-demo" rejected', ['svc-demo'], ['svc']),
    'user svc: command "show secret ***" rejected',
  );
});
