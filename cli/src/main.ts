/** `svc`: the only module of the CLI that touches `process`. */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { text } from 'node:stream/consumers';
import { runCli } from './program.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const code = await runCli(process.argv.slice(2), {
  io: {
    out: (s) => process.stdout.write(s),
    err: (s) => process.stderr.write(s),
    errIsTty: process.stderr.isTTY === true,
    outIsTty: process.stdout.isTTY === true,
  },
  env: process.env,
  home: homedir(),
  readStdin: () => text(process.stdin),
  version: pkg.version,
});
// Let stdout drain (a pipe may still hold output) before the exit code is set.
process.exitCode = code;
