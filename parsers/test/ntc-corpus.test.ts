import * as assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { parseWithIndex } from '../src/textfsm/index-lookup.js';
import { ntcDir, ntcSkip, ntcTemplatesDir } from './shared-dir.js';

interface Case {
  platform: string;
  command: string;
  raw: string;
  yml: string;
}

function listCases(): Case[] {
  const testsDir = join(ntcDir, 'tests');
  const cases: Case[] = [];
  for (const platform of readdirSync(testsDir).sort()) {
    const platformDir = join(testsDir, platform);
    for (const commandDir of readdirSync(platformDir).sort()) {
      const dir = join(platformDir, commandDir);
      for (const file of readdirSync(dir).sort()) {
        if (!file.endsWith('.raw')) continue;
        cases.push({
          platform,
          // As the reference suite: the folder name with `_` read as spaces.
          command: commandDir.split('_').join(' '),
          raw: join(dir, file),
          yml: join(dir, file.slice(0, -'.raw'.length) + '.yml'),
        });
      }
    }
  }
  return cases;
}

if (ntcSkip !== false) console.log(`skipping the ntc corpus: ${ntcSkip}`);

test(
  'ntc-templates corpus: every case parses to its expected records',
  { skip: ntcSkip },
  async (t) => {
    const cases = listCases();
    let passed = 0;
    for (const c of cases) {
      await t.test(`${c.platform} ${c.command} ${c.raw.split('/').pop() ?? ''}`, () => {
        // yaml-1.1 resolves scalars as PyYAML's safe_load does.
        const expected = (
          parseYaml(readFileSync(c.yml, 'utf8'), { schema: 'yaml-1.1' }) as {
            parsed_sample: unknown;
          }
        ).parsed_sample;
        const actual = parseWithIndex(
          ntcTemplatesDir,
          c.platform,
          c.command,
          readFileSync(c.raw, 'utf8'),
        );
        assert.deepEqual(actual, expected);
        passed++;
      });
    }
    console.log(`ntc corpus: ${passed}/${cases.length} cases passed`);
  },
);
