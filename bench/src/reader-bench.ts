// The device reader before and after it became linear (issue 17): ms to read 1, 5 and 20 MB of
// output arriving in 4 KB chunks, with the prompt as the end and with an expect_string.
//   before: the previous reader (kept below as `PreviousTerminalText`): every chunk rebuilt the
//           whole text, and each look ran lastIndexOf/slice over it and expect_string from the
//           start of the output;
//   after:  TerminalText (current line + pieces joined once) and OutputScanner (new text plus an
//           overlap).
// Then the whole command through SSH against the simulator (after only).
// Run: npx tsc -b bench && node bench/dist/src/reader-bench.js [MB...]
import { performance } from 'node:perf_hooks';
import { UserPattern } from '@svc/proto';
import { CliSession, OutputScanner, TerminalText, getDriver } from '@svc/device-actor';
import { startDevice } from '@svc/test/support';

const CHUNK = 4096;
const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const MB = sizes.length > 0 ? sizes : [1, 5, 20];
const LINE = 'GigabitEthernet0/1 000012345 packets input, 790080 bytes, 0 no buffer\r\n';
const prompt = /^R1[>#]\s*$/;
const expect = UserPattern.compile('END-OF-BULK');

const ESC =
  // eslint-disable-next-line no-control-regex -- terminal escapes
  /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[0-9=<>]|[@-Z\\-_])/y;

/** The reader as it was before (escapes aside, the same per-character string building). */
class PreviousTerminalText {
  text = '';
  push(s: string): void {
    let out = this.text;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === 0x1b) {
        ESC.lastIndex = i;
        const m = ESC.exec(s);
        if (m !== null) i += m[0].length - 1;
      } else if (c === 0x0d) {
        let j = i;
        while (s.charCodeAt(j) === 0x0d) j++;
        if (s.charCodeAt(j) !== 0x0a) out = out.slice(0, out.lastIndexOf('\n') + 1);
        i = j - 1;
      } else if (c === 0x08) {
        if (out.length > 0 && !out.endsWith('\n')) out = out.slice(0, -1);
      } else if (c === 0x0a || c === 0x09 || (c >= 0x20 && c !== 0x7f)) {
        out += s[i];
      }
    }
    this.text = out;
  }
}

const ms = (x: number): string => (x < 10 ? x.toFixed(1) : x.toFixed(0));

function rawOf(mb: number): string {
  return LINE.repeat(Math.ceil((mb * 1024 * 1024) / LINE.length)) + 'END-OF-BULK\r\nR1#';
}

/** Stops a `before` run that is past this (it is quadratic: 20 MB would take many minutes). */
const BEFORE_LIMIT_MS = 60_000;

function before(raw: string, withExpect: boolean): string {
  const start = performance.now();
  const t = new PreviousTerminalText();
  for (let at = 0; at < raw.length; at += CHUNK) {
    t.push(raw.slice(at, at + CHUNK));
    const text = t.text;
    const nl = text.lastIndexOf('\n');
    const tail = text.slice(nl + 1);
    if (withExpect ? expect.find(text) !== null : prompt.test(tail)) break;
    if (performance.now() - start > BEFORE_LIMIT_MS) {
      return `> ${BEFORE_LIMIT_MS} (stopped after ${Math.round((100 * at) / raw.length)} %)`;
    }
  }
  return ms(performance.now() - start);
}

function after(raw: string, withExpect: boolean): number {
  const start = performance.now();
  const t = new TerminalText();
  const scanner = new OutputScanner(expect);
  for (let at = 0; at < raw.length; at += CHUNK) {
    t.push(raw.slice(at, at + CHUNK));
    const tail = t.lastLine;
    if (withExpect ? scanner.find(t) !== null : prompt.test(tail)) break;
  }
  void t.value;
  return performance.now() - start;
}

console.log('## reader only, 4 KB chunks (ms)');
console.log('| MB | end | before | after |');
console.log('|---|---|---|---|');
for (const mb of MB) {
  const raw = rawOf(mb);
  for (const withExpect of [false, true]) {
    const b = before(raw, withExpect);
    const a = after(raw, withExpect);
    console.log(`| ${mb} | ${withExpect ? 'expect_string' : 'prompt'} | ${b} | ${ms(a)} |`);
  }
}

console.log('\n## whole command over SSH (simulator, 4 KB writes), after (ms)');
console.log('| MB | end | ms | characters scanned / output |');
console.log('|---|---|---|---|');
for (const mb of MB) {
  const dev = await startDevice({
    platform: 'cisco_ios',
    bulkOutput: { command: 'show tech-support', bytes: mb * 1024 * 1024 },
    faults: { slowOutput: { chunkSize: CHUNK, delayMs: 0 } },
  });
  const cli = await CliSession.open(
    getDriver('cisco_ios')!,
    {
      host: dev.host,
      port: dev.port,
      username: dev.username,
      password: dev.password,
      connTimeoutMs: 10_000,
      readTimeoutMs: 10_000,
    },
    new AbortController().signal,
  );
  await cli.prepare(dev.username, dev.enable, 10_000);
  for (const withExpect of [false, true]) {
    const scannedBefore = cli.scanned;
    const start = performance.now();
    const out = await cli.command('show tech-support', {
      timeoutMs: 300_000,
      expect: withExpect ? expect : null,
    });
    const took = performance.now() - start;
    const ratio = (cli.scanned - scannedBefore) / out.length;
    console.log(
      `| ${mb} | ${withExpect ? 'expect_string' : 'prompt'} | ${ms(took)} | ${ratio.toFixed(2)} |`,
    );
    if (withExpect) break; // the session is desynced after an expect that is not the prompt
  }
  cli.destroy();
  await dev.stop();
}
