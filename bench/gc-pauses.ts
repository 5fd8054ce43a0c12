// V8's collections in mvproxy at saturation (issue 40 §3: the GET p99 at saturation): a uWS mvproxy
// (the compiled build, the image's environment) pinned to CPU 0 in front of the bench backend, wrk
// on CPU 1 (50 connections, a 2 KiB GET, 3 s of warm-up, then 5 s measured). Prints wrk's latency
// percentiles and the collections of the measured window (bench/gc-probe.cjs): how many, of which
// kind, their pauses' p50/p99/max and their sum.
//
//   $(scripts/node-glibc.sh) --import tsx bench/gc-pauses.ts [--semi MiB] [--frontend uws|node] [--node-flags "..."]
// --semi N: --max-semi-space-size=N for mvproxy (the image's NODE_OPTIONS otherwise); --node-flags: more
// node/V8 flags for it (e.g. --allocation-site-pretenuring, which mvproxy turns off at start-up);
// GC_FLAGS=1 also prints every collection that is not a scavenge.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDist, makePKI, startBackend, startMvproxy } from './targets';
import { ACCEPT_JSON, PATHS } from './payloads';
import { sleep } from './lib';
import { num, str } from './args';

const KIND: Record<number, string> = { 1: 'scavenge', 2: 'minor mark-sweep', 4: 'full mark-compact', 8: 'incremental marking', 16: 'weak callbacks' };

async function main(): Promise<void> {
  const err = buildDist();
  if (err) throw new Error(err);
  const tmp = mkdtempSync(join(tmpdir(), 'mvproxy-gc-'));
  const out = join(tmp, 'gc.json');
  process.env.MVPROXY_GC_OUT = out;
  const semi = num('--semi', 0);
  const be = await startBackend({ client: '1' });
  const pki = await makePKI(join(tmp, 'pki'), ['a']);
  const nodeFlags = ['--require', join(__dirname, 'gc-probe.cjs'), ...(semi > 0 ? [`--max-semi-space-size=${semi}`] : []), ...(str('--node-flags') ?? '').split(' ').filter(Boolean)];
  const frontend = str('--frontend') === 'node' ? 'node' : 'uws';
  const m = await startMvproxy({ name: 'a', frontend, localPort: be.portA, peers: {}, pki, runtime: 'dist', nodeFlags, cpus: '0' });
  try {
    const url = `http://127.0.0.1:${m.clientPort}${PATHS.get}`;
    const wrk = (seconds: number) => spawnSync('taskset', ['-c', '1', 'wrk', '-t1', '-c50', `-d${seconds}s`, '--latency', '-H', `accept: ${ACCEPT_JSON}`, url], { encoding: 'utf8' });
    wrk(3);
    process.kill(m.proc.pid, 'SIGUSR2');
    const r = wrk(5);
    process.kill(m.proc.pid, 'SIGUSR1');
    await sleep(500);
    const entries = JSON.parse(readFileSync(out, 'utf8')) as [number, number, number][];
    const ms = entries.map((e) => e[1]).sort((a, b) => a - b);
    const kinds: Record<string, number> = {};
    for (const e of entries) kinds[KIND[e[2]] ?? String(e[2])] = (kinds[KIND[e[2]] ?? String(e[2])] ?? 0) + 1;
    const at = (q: number) => (ms[Math.min(ms.length - 1, Math.floor(ms.length * q))] ?? 0).toFixed(2);
    if (process.env.GC_FLAGS) console.log(JSON.stringify(entries.filter((e) => e[2] !== 1)));
    console.log(r.stdout.split('\n').filter((l) => /^\s+(50|90|99)%|Requests\/sec/.test(l)).join('\n'));
    console.log(`${frontend}, semi-space ${semi > 0 ? `${semi} MiB` : "the image's"}: ${entries.length} collections in 5 s ${JSON.stringify(kinds)}; pause p50 ${at(0.5)} p99 ${at(0.99)} max ${at(1)} ms; ${ms.reduce((a, b) => a + b, 0).toFixed(1)} ms in all`);
  } finally {
    await m.proc.stop('SIGKILL');
    await be.proc.stop('SIGKILL');
    rmSync(tmp, { recursive: true, force: true });
  }
}

void main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
