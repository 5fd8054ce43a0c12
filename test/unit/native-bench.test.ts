// Smoke test for the native benchmark harness (native-bench/hotpath.ts --quick): it builds its
// request set from the fixtures, runs every variant and prints its table and ratio lines.
// Timings are never asserted: the machines are shared and noisy (docs/dependencies.md §9).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const HOTPATH = join(__dirname, '..', '..', 'native-bench', 'hotpath.ts');

function run(file: string, argv: string[], timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err });
    });
  });
}

test('native-bench/hotpath.ts --quick runs and prints its table and the (a)/(b) ratio', { timeout: 20_000 }, async () => {
  const r = await run(HOTPATH, ['--quick'], 15_000);
  assert.equal(r.signal, null, `hotpath --quick did not finish within 15 s\n${r.out}\n${r.err}`);
  assert.equal(r.code, 0, `exit ${r.code}\n${r.out}\n${r.err}`);
  // ≥ 1,000 request targets, as the benchmark promises.
  const n = /hotpath: (\d+) request targets/.exec(r.out);
  assert.ok(n && Number(n[1]) >= 1000, r.out);
  // Every row of the table is there.
  for (const row of ['(a)', '(b)', '(c)', '(a0)', '(a-)', '(c-)', '(e)']) assert.match(r.out, new RegExp(`^${row.replace(/[()]/g, '\\$&')}\\s`, 'm'), r.out);
  // The ratio line is printed with a finite number (its value is not checked).
  const ratio = /^ratio \(a\)\/\(b\) = (\d+\.\d+)/m.exec(r.out);
  assert.ok(ratio && Number.isFinite(Number(ratio[1])), r.out);
  assert.match(r.out, /^allocation: \(a\) \d+ B\/request/m, r.out);
});
