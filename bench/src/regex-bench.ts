// How to bound a user's regular expression (expect_string): the numbers behind the choice of
// re2js (docs/security.md, "User regular expressions"). Measures, on this machine:
//   1. the backtracking RegExp on `^(.|.)*Z` as the line grows (why something must change);
//   2. one search of 10 KB-1 MB device output with the backtracking RegExp, re2js (boolean
//      DFA search `test`, and position search `find`), for everyday and hostile patterns;
//   3. a native RegExp in a worker thread with a deadline: round trip per search, time to stop a
//      runaway search (terminate), time to start a fresh worker;
//   4. the whole expect check of a streamed output (a search after every chunk) with re2js.
// Run: npx tsc -b bench && node bench/dist/src/regex-bench.js
import { Worker } from 'node:worker_threads';
import { UserPattern } from '@svc/proto';

const LINE = 'GigabitEthernet0/1 is up, line protocol is up\n';
const output = (n: number) => LINE.repeat(Math.ceil(n / LINE.length)).slice(0, n);

function median(fn: () => void, reps = 5): number {
  const t: number[] = [];
  for (let i = 0; i < reps; i++) {
    const s = performance.now();
    fn();
    t.push(performance.now() - s);
  }
  t.sort((a, b) => a - b);
  return t[Math.floor(reps / 2)]!;
}
const ms = (x: number) => (Number.isNaN(x) ? '—' : x < 10 ? x.toFixed(2) : x.toFixed(0));

console.log('## 1. backtracking RegExp, ^(.|.)*Z on one line of n characters (ms)');
for (const n of [16, 18, 20, 22, 24]) {
  const s = 'a'.repeat(n);
  console.log(`| ${n} | ${ms(median(() => /^(.|.)*Z/.exec(s), 1))} |`);
}

console.log(
  '\n## 2. one search of device output that does not match (ms): RegExp | re2js (UserPattern.find)',
);
const cases: [string, (n: number) => string, boolean][] = [
  ['R1#\\s*$', output, true],
  ['Technical Support', output, true],
  ['[>#]\\s*$', output, true],
  ['up\\s+\\d', output, true],
  ['^(.|.)*Z', (n) => 'a'.repeat(n), false],
  ['(\\w+\\s?)*$', (n) => 'a '.repeat(n / 2) + '!', false],
];
for (const [p, gen, nativeSafe] of cases) {
  for (const n of [10_000, 100_000, 1_000_000]) {
    const text = gen(n);
    const u = UserPattern.compile(p);
    const native = nativeSafe ? median(() => new RegExp(p).exec(text)) : NaN;
    const re2test = median(() => u.find(text));
    console.log(
      `| \`${p}\` | ${n / 1000} KB | ${ms(native)} | ${ms(re2test)} |${nativeSafe ? '' : ' (RegExp: never ends)'}`,
    );
  }
}

console.log('\n## 3. native RegExp in a worker thread with a deadline');
const src = `const { parentPort } = require('node:worker_threads');
parentPort.on('message', ({ p, t }) => { const m = new RegExp(p).exec(t); parentPort.postMessage(m ? m.index : -1); });`;
const worker = new Worker(src, { eval: true });
const call = (p: string, t: string) =>
  new Promise<unknown>((res) => {
    worker.once('message', res);
    worker.postMessage({ p, t });
  });
for (const n of [1_000, 100_000, 1_000_000]) {
  const text = output(n);
  await call('x', text);
  const s = performance.now();
  for (let i = 0; i < 20; i++) await call('R1#\\s*$', text);
  console.log(`| round trip, ${n / 1000} KB | ${ms((performance.now() - s) / 20)} |`);
}
worker.postMessage({ p: '^(.|.)*Z', t: 'a'.repeat(40) });
await new Promise((r) => setTimeout(r, 50));
let s = performance.now();
await worker.terminate();
console.log(`| terminate a runaway search | ${ms(performance.now() - s)} |`);
s = performance.now();
const fresh = new Worker(src, { eval: true });
await new Promise((r) => fresh.once('online', r));
console.log(`| start a fresh worker | ${ms(performance.now() - s)} |`);
await fresh.terminate();

console.log(
  '\n## 4. streamed output, one re2js search per 4 KB chunk (total ms, longest search ms)',
);
for (const [p, n] of [
  ['[>#]\\s*$', 100_000],
  ['[>#]\\s*$', 1_000_000],
  ['^(.|.)*Z', 1_000_000],
] as const) {
  const text = output(n);
  const u = UserPattern.compile(p);
  let total = 0;
  let longest = 0;
  for (let end = 4096; end < n + 4096; end += 4096) {
    const t0 = performance.now();
    u.find(text.slice(0, end));
    const d = performance.now() - t0;
    total += d;
    longest = Math.max(longest, d);
  }
  console.log(`| \`${p}\` | ${n / 1000} KB | ${ms(total)} | ${ms(longest)} |`);
}
