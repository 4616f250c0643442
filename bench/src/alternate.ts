/**
 * Compares two checkouts with the same load benchmark, run alternately: `load.js` of this
 * checkout and of another (built) one, pair after pair, the side that runs first swapped at each
 * pair. On a 2-core box the run that follows another is slower (the first one's nats-server files
 * are still being written back, its processes exiting): a fixed order favours one side by 10-20 %
 * at saturation (docs/performance.md). Prints each run's median per figure, in the order run,
 * and each side's median of them.
 *
 *   node bench/dist/src/alternate.js --other ../svc-base --pairs 3 -- --processes --rate 50 …
 *
 * The other checkout runs its own `bench/dist/src/load.js`: copy this one's there when it is
 * older (docs/performance.md shows how for the starting point).
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { FLEET_AND_CLIENT, median, svcSum } from './figures.js';

const USAGE = `usage: node bench/dist/src/alternate.js --other DIR [--pairs N] -- <load.js options>
  --other DIR   the other checkout (built: npx tsc -b), run with its bench/dist/src/load.js
  --pairs N     pairs of runs (default 3); the first pair runs the other checkout first
  --this-env K=V, --other-env K=V
                an environment variable for one side only (repeatable), e.g. GOMAXPROCS=2
`;

/** One repetition of a load phase, as `load.js --json` prints it (the fields compared). */
interface Rep {
  jobsPerSecond: number;
  cpuMsPerJob: Record<string, number>;
  wakeUpsPerJob: Record<string, number>;
  nats: { total: number; stored: number } | null;
}

interface Side {
  name: string;
  dir: string;
  env: Record<string, string>;
  /** Each run's figures (its repetitions' median), in the order run. */
  runs: Map<string, number>[];
}

function envPairs(list: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of list ?? []) {
    const at = kv.indexOf('=');
    if (at <= 0) throw new Error(`not KEY=VALUE: ${kv}`);
    out[kv.slice(0, at)] = kv.slice(at + 1);
  }
  return out;
}

/** The figures of one run: each one the median over its repetitions. */
function figuresOf(reps: Rep[]): Map<string, number> {
  const out = new Map<string, number>();
  out.set('jobs/s', median(reps.map((r) => r.jobsPerSecond)));
  for (const [label, pick] of [
    ['CPU ms per job', (r: Rep) => r.cpuMsPerJob],
    ['wake-ups per job', (r: Rep) => r.wakeUpsPerJob],
  ] as const) {
    const processes = new Set(reps.flatMap((r) => Object.keys(pick(r))));
    for (const name of [...processes].sort()) {
      out.set(`${label}: ${name}`, median(reps.map((r) => pick(r)[name] ?? NaN)));
    }
    // The whole job's, as load.js prints it where the fleet and client have their own process.
    if (processes.has(FLEET_AND_CLIENT)) {
      const whole = reps.map((r) => svcSum(Object.entries(pick(r))));
      out.set(`${label}: svc + nats-server`, median(whole));
    }
  }
  if (reps.some((r) => r.nats)) {
    out.set('messages per job', median(reps.map((r) => r.nats?.total ?? NaN)));
    out.set('stored per job', median(reps.map((r) => r.nats?.stored ?? NaN)));
  }
  return out;
}

function runLoad(side: Side, loadArgs: string[]): Promise<Map<string, number>> {
  const script = resolve(side.dir, 'bench/dist/src/load.js');
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [script, ...loadArgs, '--json'], {
      cwd: side.dir,
      env: { ...process.env, ...side.env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', fail);
    child.on('exit', (code) => {
      // The JSON report is the last thing printed: from its opening line to the end.
      const at = out.lastIndexOf('\n{\n  "options"');
      if (code !== 0 || at < 0) {
        fail(new Error(`${side.name}: load.js exited ${code} without its JSON report`));
        return;
      }
      const report = JSON.parse(out.slice(at + 1)) as { reps?: Rep[] };
      if (!report.reps?.length) {
        fail(new Error(`${side.name}: the report has no repetitions (a --batch run?)`));
        return;
      }
      done(figuresOf(report.reps));
    });
  });
}

const fmt = (x: number) =>
  Number.isFinite(x) ? (Math.abs(x) >= 100 ? x.toFixed(1) : x.toFixed(2)) : '-';

function report(sides: [Side, Side]): string {
  const names = new Set<string>();
  for (const s of sides) for (const run of s.runs) for (const k of run.keys()) names.add(k);
  const lines = [
    `| figure (each run's median, in the order run) | ${sides[0].name} | ${sides[1].name} | ${sides[1].name} / ${sides[0].name} |`,
    '|---|---|---|---|',
  ];
  for (const name of names) {
    const cells = sides.map((s) => s.runs.map((r) => r.get(name) ?? NaN));
    const [a, b] = cells.map(median) as [number, number];
    lines.push(
      `| ${name} | ${cells[0]!.map(fmt).join(', ')} | ${cells[1]!.map(fmt).join(', ')} | ${fmt(b / a)} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const dash = process.argv.indexOf('--');
  const own = dash < 0 ? process.argv.slice(2) : process.argv.slice(2, dash);
  const loadArgs = dash < 0 ? [] : process.argv.slice(dash + 1);
  const { values } = parseArgs({
    args: own,
    options: {
      other: { type: 'string' },
      pairs: { type: 'string', default: '3' },
      'this-env': { type: 'string', multiple: true },
      'other-env': { type: 'string', multiple: true },
      help: { type: 'boolean', default: false },
    },
  });
  const pairs = Number(values.pairs);
  if (values.help || !values.other || !Number.isInteger(pairs) || pairs < 1) {
    process.stdout.write(USAGE);
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  const here = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
  const other: Side = {
    name: 'other',
    dir: resolve(values.other),
    env: envPairs(values['other-env']),
    runs: [],
  };
  const self: Side = { name: 'this', dir: here, env: envPairs(values['this-env']), runs: [] };
  for (let pair = 0; pair < pairs; pair++) {
    const order = pair % 2 === 0 ? [other, self] : [self, other];
    for (const side of order) {
      process.stderr.write(`pair ${pair + 1}/${pairs}: ${side.name} (${side.dir})\n`);
      side.runs.push(await runLoad(side, loadArgs));
    }
  }
  process.stdout.write(report([other, self]) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
