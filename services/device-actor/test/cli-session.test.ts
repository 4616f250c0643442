import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MIN_SHOWN_BASE, shortenablePattern } from '../src/drivers/cli-session.js';
import { getDriver } from '../src/drivers/registry.js';

test('when a base prompt is long, then its pattern matches the shortened configuration prompt and nothing shorter', () => {
  const ios = getDriver('cisco_ios');
  assert.ok(ios);
  const base = 'DC1-POD7-LEAF-ACCESS-SWITCH-042';
  const re = ios.promptPattern(shortenablePattern(base));
  assert.match(`${base}#`, re);
  assert.match(`${base.slice(0, 20)}(config)#`, re, 'IOS shows 20 characters');
  assert.match(`${base.slice(0, MIN_SHOWN_BASE)}(config-if)#`, re);
  assert.doesNotMatch(`${base.slice(0, MIN_SHOWN_BASE - 1)}(config)#`, re);
  assert.doesNotMatch('OTHER-NAME(config)#', re);
  assert.equal(shortenablePattern('R1.lab'), 'R1\\.lab', 'short names are matched whole');
});
