// Runs the native benchmarks one after another, each in its own process, and prints their tables:
//   1. hotpath.ts    newRequestInfo + decide vs new URL(), flat-key variant, bytes/request
//   2. listeners.ts  uWS vs node:http front end: trivial 2 KiB handler and the proxy core
//   3. merge.ts      discovery snapshot build, worker vs inline (another engineer's bench)
//   4. codec.ts      protobuf vs JSON encode/decode of the discovery document (~20 s)
//   5. merge-load.ts main-thread event-loop delay while merges run during a request load (~35 s)
//
//   npm run native-bench                      # full: ~90 s on the project VMs, ~145 s with 4 and 5
//   npm run native-bench -- --quick           # CI smoke run: every harness, seconds, numbers meaningless
//   npm run native-bench -- --only hotpath,merge
//
// One benchmark at a time (2 shared cores). No benchmark dependencies: tinybench and autocannon are
// not installed, so loops use process.hrtime.bigint and load comes from Debian's `wrk` when present
// (apt-get install -y wrk), else from an undici child process. merge.ts gets whatever remains of a
// ~85 s total as its --budget-ms (it stops starting new sizes after that), between 3 and 20 s.

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs, printTable } from './lib';

const args = parseArgs();
const QUICK = args.quick;
const TOTAL_BUDGET_MS = args.num('--total-budget-ms', 85_000);
const only = new Set(args.str('--only', 'hotpath,listeners,merge,codec,merge-load').split(',').map((s) => s.trim()));

interface Bench {
  name: string;
  file: string;
  nodeFlags: string[];
  args: (elapsedMs: number) => string[];
  env?: Record<string, string>;
}

const BENCHES: Bench[] = [
  {
    name: 'hotpath',
    file: 'hotpath.ts',
    nodeFlags: ['--expose-gc'], // exact allocation batches (hotpath.ts falls back without it)
    args: () => (QUICK ? ['--quick'] : ['--iters', '200000']),
  },
  {
    name: 'listeners',
    file: 'listeners.ts',
    nodeFlags: [],
    args: () => (QUICK ? ['--quick'] : []),
    env: { UWS_HTTP_MAX_HEADERS_SIZE: '16384' }, // as the daemon is meant to run (docs/dependencies.md §2)
  },
  {
    name: 'merge',
    file: 'merge.ts',
    nodeFlags: [],
    // merge.ts: [--budget-ms 20000] [--runs 3]; its event-loop section adds ~3 s after the budget.
    args: (elapsed) => (QUICK ? ['--budget-ms', '1000', '--runs', '1'] : ['--budget-ms', String(Math.round(Math.min(20_000, Math.max(3_000, TOTAL_BUDGET_MS - elapsed - 6_000)))), '--runs', '3']),
  },
  {
    name: 'codec',
    file: 'codec.ts',
    nodeFlags: [],
    args: () => (QUICK ? ['--quick'] : []),
  },
  {
    name: 'merge-load',
    file: 'merge-load.ts',
    nodeFlags: [],
    args: () => (QUICK ? ['--quick'] : []),
    env: { UWS_HTTP_MAX_HEADERS_SIZE: '16384' },
  },
];

function runBench(b: Bench, argv: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...b.nodeFlags, '--import', 'tsx', join(__dirname, b.file), ...argv], {
      stdio: 'inherit',
      env: { ...process.env, ...b.env },
    });
    // A hung benchmark must not hang CI: hard stop well past any bench's own bound.
    const timer = setTimeout(() => child.kill('SIGKILL'), QUICK ? 60_000 : 180_000);
    child.on('error', () => {
      clearTimeout(timer);
      resolve(1);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? (signal ? 128 : 1));
    });
  });
}

async function main(): Promise<void> {
  const started = performance.now();
  const summary: (string | number)[][] = [];
  let failed = 0;
  console.log(`native-bench${QUICK ? ' --quick (smoke run: numbers are not meaningful)' : ''} on Node ${process.version}, ${process.platform}/${process.arch}`);
  for (const b of BENCHES) {
    if (!only.has(b.name)) continue;
    const argv = b.args(performance.now() - started);
    console.log(`\n=== ${b.name}: ${b.file} ${argv.join(' ')}`.trimEnd());
    const t0 = performance.now();
    const code = await runBench(b, argv);
    if (code !== 0) failed++;
    summary.push([b.name, code === 0 ? 'ok' : `exit ${code}`, (performance.now() - t0) / 1000]);
  }
  console.log('');
  printTable('native-bench summary', ['bench', 'result', 'seconds'], summary);
  console.log(`total ${((performance.now() - started) / 1000).toFixed(1)} s`);
  process.exitCode = failed === 0 ? 0 : 1;
}

void main();
