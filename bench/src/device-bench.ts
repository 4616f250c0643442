import { performance } from 'node:perf_hooks';
import { createDeviceRunner, SessionPool } from '@svc/device-actor';
import type { DeviceJob } from '@svc/device-actor';
import { jobFor, startDevice } from '@svc/test/support';

/**
 * Device layer micro-benchmark against the SSH simulator (loopback, no command latency):
 * connect+auth+prompt on a fresh session, one command on a fresh session, one command on a warm
 * (pooled) session. Median and p90 of 50 runs each, in ms.
 * Run: `npx tsc -b bench && node bench/dist/src/device-bench.js` (DEVICE_BENCH_PLATFORM to change).
 */
const RUNS = 50;
const platform = process.env['DEVICE_BENCH_PLATFORM'] ?? 'cisco_ios';
const dev = await startDevice({ platform });

// The bench's timeouts are longer than the tests': a loaded box must not turn a slow sample into
// an error.
function job(commands: string[]): DeviceJob {
  return jobFor(dev, { jobId: 'bench', commands, connTimeoutMs: 10_000, readTimeoutMs: 10_000 });
}

function stats(samples: number[]): { median: number; p90: number } {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
  return { median: at(0.5), p90: at(0.9) };
}

async function time(fn: () => Promise<unknown>): Promise<number[]> {
  await fn(); // warm-up: JIT, first key exchange
  const out: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

const cold = createDeviceRunner({ pool: null, poolExclude: [] });
const cmd =
  platform === 'cisco_ios'
    ? 'show version'
    : (process.env['DEVICE_BENCH_COMMAND'] ?? 'show version');
// A job with no commands is login + prompt + enable + paging off.
const connect = await time(() => cold(job([])));
const fresh = await time(() => cold(job([cmd])));
const pool = new SessionPool({ maxSize: 10 });
const warm = createDeviceRunner({ pool, poolExclude: [] });
const pooled = await time(() => warm(job([cmd])));
await pool.close();

const rows: [string, number[]][] = [
  ['connect+auth+prompt (fresh session)', connect],
  [`1 command, fresh session (${cmd})`, fresh],
  [`1 command, warm pooled session (${cmd})`, pooled],
];
console.log(`device layer against the simulator (${platform}), ${RUNS} runs each, ms`);
console.log(`${'measure'.padEnd(48)} ${'median'.padStart(8)} ${'p90'.padStart(8)}`);
for (const [name, samples] of rows) {
  const { median, p90 } = stats(samples);
  console.log(`${name.padEnd(48)} ${median.toFixed(2).padStart(8)} ${p90.toFixed(2).padStart(8)}`);
}
console.log(`simulator handshakes: ${dev.stats.handshakes}, pool hits: ${pool.hits}`);
await dev.stop();
