import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from 'typebox';
import { CommandPolicySettings, ConfigError, commandPolicy } from '@svc/proto';
import { loadConfig } from '../src/mod.js';

const settings = Type.Object(CommandPolicySettings);
const policyFrom = (env: Record<string, string>) => commandPolicy(loadConfig(settings, env));

test('when COMMAND_DENY_PATTERNS is a JSON array, then a pattern may hold a comma', () => {
  const policy = policyFrom({
    COMMAND_POLICY: 'read-only',
    COMMAND_DENY_PATTERNS: '["^show (?:tech|logging),? detail", "^ping \\\\S+ repeat \\\\d{4,}"]',
  });
  assert.match(
    policy.readOnlyRefusal('show tech, detail', 'cisco_ios') ?? '',
    /COMMAND_DENY_PATTERNS/,
  );
  assert.match(policy.readOnlyRefusal('ping 10.0.0.1 repeat 10000', 'cisco_ios') ?? '', /ping/);
  assert.equal(policy.readOnlyRefusal('show clock', 'cisco_ios'), null);
});

test('when COMMAND_DENY_PATTERNS is comma-separated, then it reads as before, a pattern that starts with [ included', () => {
  const policy = policyFrom({ COMMAND_DENY_PATTERNS: '^show tech, [a-z]+ secret' });
  assert.notEqual(policy.readOnlyRefusal('show tech-support', 'cisco_ios'), null);
  assert.notEqual(policy.readOnlyRefusal('dump secret', 'cisco_ios'), null);
  const bracket = policyFrom({ COMMAND_DENY_PATTERNS: '[xy]yz' });
  assert.notEqual(bracket.readOnlyRefusal('xyz', 'cisco_ios'), null);
});

test('when the JSON form of COMMAND_DENY_PATTERNS holds something other than strings, then the start is refused naming it', () => {
  assert.throws(
    () => policyFrom({ COMMAND_DENY_PATTERNS: '["^reload", 7]' }),
    (err: unknown) =>
      err instanceof ConfigError && err.problems.some((p) => p.includes('COMMAND_DENY_PATTERNS')),
  );
});
