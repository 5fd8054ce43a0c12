// The end-to-end benchmark harness (bench/run.ts) works: its smoke mode starts the backend and
// one mvproxy, runs one scenario for 1 s with autocannon, and writes a well-formed results JSON.
// Checks the harness only: no timing or throughput is asserted (shared, noisy CI machines).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { UWS_UNAVAILABLE } from '../support/frontends';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

// The bench backend and the default proxy are uWS: the harness runs where uWS loads (the glibc lane).
test('bench harness --smoke writes a well-formed results JSON', { timeout: 60_000, skip: UWS_UNAVAILABLE && `the bench runs on uWebSockets.js, which cannot load here (${UWS_UNAVAILABLE}); covered by the glibc >= 2.38 lane` }, async () => {
  const out = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'run.ts'), '--smoke', '--out-dir', out], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stdout.on('data', (d: Buffer) => (log += d.toString()));
    child.stderr.on('data', (d: Buffer) => (log += d.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    clearTimeout(killer);
    assert.equal(code, 0, `bench --smoke exited with ${code}:\n${log.slice(-3000)}`);

    const files = readdirSync(out).filter((f) => f.endsWith('.json'));
    assert.equal(files.length, 1, `one results file expected, got ${files.join(', ')}`);
    const r = JSON.parse(readFileSync(join(out, files[0]!), 'utf8'));
    assert.equal(r.schema, 'mvproxy-bench/1');
    assert.equal(r.mode, 'smoke');
    assert.ok(!Number.isNaN(Date.parse(r.startedAt)) && !Number.isNaN(Date.parse(r.finishedAt)));
    assert.equal(typeof r.settings.rounds, 'number');
    assert.deepEqual(r.settings.tools, ['autocannon']);
    assert.ok(Array.isArray(r.targets) && r.targets.some((t: { name: string }) => t.name === 'backend'));
    assert.deepEqual(r.skippedScenarios, [], 'the smoke scenario ran');

    assert.equal(r.runs.length, 1);
    const run = r.runs[0];
    assert.equal(run.scenario, 'uws/get');
    assert.equal(run.tool, 'autocannon');
    for (const k of ['rps', 'p50', 'p99', 'requests', 'errors', 'non2xx', 'cpuS', 'rssMB']) {
      assert.ok(run[k] === null || typeof run[k] === 'number', `runs[0].${k} is a number or null: ${run[k]}`);
    }
    assert.ok(run.requests > 0, 'the load generator completed requests');
    assert.ok(Array.isArray(run.busy));

    assert.equal(r.summary.length, 1);
    assert.equal(r.summary[0].scenario, 'uws/get');
    assert.ok(Array.isArray(r.checks) && Array.isArray(r.notes) && Array.isArray(r.watchSummary) && Array.isArray(r.openWatches));
    // The chart is written beside the JSON.
    assert.ok(readdirSync(out).some((f) => f.endsWith('.svg')));
    const svg = readFileSync(join(out, readdirSync(out).find((f) => f.endsWith('.svg'))!), 'utf8');
    assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.match(svg, /<\/svg>\s*$/);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
