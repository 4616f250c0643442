#!/usr/bin/env node
// The committed entry of the `svc-parse` command. npm links a workspace's bin only when its
// target exists at install time, and dist/ is built after `npm ci`: so the bin is this file,
// which loads the built command and says what to do when it is not built yet.
import { existsSync } from 'node:fs';

const cli = new URL('../dist/src/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('svc-parse: the parsers are not built: run npm run build first\n');
  process.exit(1);
}
await import(cli.href);
