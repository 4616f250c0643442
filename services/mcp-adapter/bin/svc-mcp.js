#!/usr/bin/env node
// The committed entry of the `svc-mcp` command. npm links a workspace's bin only when its target
// exists at install time, and dist/ is built after `npm ci`: so the bin is this file, which
// loads the built adapter and says what to do when it is not built yet.
import { existsSync } from 'node:fs';

const main = new URL('../dist/src/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('svc-mcp: the adapter is not built: run npm run build first\n');
  process.exit(1);
}
await import(main.href);
