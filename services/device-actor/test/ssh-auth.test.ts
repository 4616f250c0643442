import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isPasswordPrompt, keyboardAnswers, nextAuthStep } from '../src/device/ssh/ssh-auth.js';

test('when a keyboard-interactive prompt asks for the password, then it is recognised', () => {
  for (const p of [
    'Password: ',
    'password:',
    "svc@10.0.0.1's password: ",
    'Password for svc@router: ',
    'Enter passcode:',
    'PASSWORD:',
  ]) {
    assert.equal(isPasswordPrompt(p), true, p);
  }
});

test('when a prompt asks for anything but the password, then the password is not its answer', () => {
  for (const p of [
    'Verification code: ',
    'OTP: ',
    'Enter one-time password: ',
    'New password: ',
    'Retype new password: ',
    'Username: ',
    'Do you accept the terms? (yes/no) ',
    'Token: ',
    '',
  ]) {
    assert.equal(isPasswordPrompt(p), false, p);
  }
  assert.deepEqual(
    keyboardAnswers([{ prompt: 'Verification code: ' }, { prompt: 'Password: ' }], 's3cret'),
    ['', 's3cret'],
  );
});

test('when the server lists its methods, then one password-bearing attempt is made, password first', () => {
  assert.equal(nextAuthStep(null, false), 'none');
  assert.equal(nextAuthStep(['publickey', 'password', 'keyboard-interactive'], false), 'password');
  assert.equal(nextAuthStep(['keyboard-interactive'], false), 'keyboard-interactive');
  assert.equal(nextAuthStep(['publickey'], false), false);
  // After the attempt failed, nothing more is tried with the same password.
  assert.equal(nextAuthStep(['password', 'keyboard-interactive'], true), false);
});
