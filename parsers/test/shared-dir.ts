// Locates the shared test data: env SVC_SHARED_DIR, else the repo's parent dir + /shared.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** parsers/ (this file runs from parsers/dist/test/). */
export const parsersDir = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const repoRoot = dirname(parsersDir);
export const sharedDir = process.env['SVC_SHARED_DIR'] ?? join(dirname(repoRoot), 'shared');
export const ntcDir = join(sharedDir, 'ntc-templates');
export const ntcTemplatesDir = join(ntcDir, 'templates');
/** A skip reason when the ntc-templates data is missing, else false. */
export const ntcSkip: string | false = existsSync(join(ntcTemplatesDir, 'index'))
  ? false
  : `no ntc-templates test data at ${ntcDir}`;
