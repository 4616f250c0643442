#!/usr/bin/env node
// The npm bin of @svc/cli. npm links a workspace bin at install time only when its target
// exists, so this small committed file is the target and loads the build output.
import { existsSync } from 'node:fs';

const main = new URL('../dist/src/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('svc: the CLI is not built yet: run `npm run build` first\n');
  process.exit(70);
}
await import(main.href);
