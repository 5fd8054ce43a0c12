// V8 heap bytes mvproxy allocates per request (issue 28 §3), counted, not timed: the exact bytes a
// proxy process allocated between two signals (bench/alloc-probe.cjs, v8.GCProfiler) divided by the
// requests sent in between, and the young-generation collections they cost. Per front end and route:
// uWS and node (local route: a 2 KiB GET and a 100 KiB LIST), and the peer route (A and B apart);
// beside them the floor of each front end's local route (bench/floor-proxy.ts with the plain
// HTTP/1.1 client, as bench/rate.ts's floor): the least code that relays a GET on this runtime, so
// mvproxy's bytes per request read against what the design cannot go below.
// Each scenario: 2,000 requests to warm up, then N (default 10,000) over 8 keep-alive connections.
// Everything runs as in `npm run bench` (the compiled dist, the image's environment).
//
//   node --import tsx bench/allocations.ts [--requests 10000] [--sites [--top 12]] [--only uws/get,node/get]
// --sites: the measured windows also run V8's sampling heap profiler (a sample every 256 bytes,
// collected objects included), and the functions that allocated most are printed per scenario and
// process: where the bytes above come from (the profiler's own cost is in the bytes then).
// (under scripts/node-glibc.sh's node for the uWS front end). Prints a Markdown table and one JSON line.

import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { ACCEPT_JSON, PATHS } from './payloads';
import { buildDist, makePKI, startBackend, startFloorProxy, startMvproxy, type Anchor, type Pinning } from './targets';
import { sleep, type Proc } from './lib';
import { has, list, num } from './args';

const N = num('--requests', 10_000);
const WARMUP = 2_000;
const CONNECTIONS = 8;
const PROBE = join(__dirname, 'alloc-probe.cjs');
/** --promoted: sites of what outlived the young generation only (alloc-probe.cjs). */
const PROMOTED = has('--promoted');
const SITES = has('--sites') || PROMOTED;
/** --top N: sites printed per scenario (12); --only a,b: just these scenarios (uws/get, node/list, ...). */
const TOP = num('--top', 12);
const ONLY = list('--only', '');

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/** The functions that allocated most in a .heapprofile, with their share of its bytes. */
function topSites(file: string, top = 12): string[] {
  const bySite = new Map<string, number>();
  let total = 0;
  // A builtin's or Node's allocation (a Uint8Array view, a split) is named with the nearest caller
  // of the program's own that asked for it.
  const walk = (n: HeapNode, caller: string) => {
    const where = n.callFrame.url.replace(/^.*\/(bench\/\.build\/|node_modules\/)/, '$1').replace(/^file:\/\//, '');
    const self = `${n.callFrame.functionName || '(anonymous)'} ${where}:${n.callFrame.lineNumber + 1}`;
    const own = where !== '' && !where.startsWith('node:');
    const key = own ? self : `${self} ← ${caller}`;
    bySite.set(key, (bySite.get(key) ?? 0) + n.selfSize);
    total += n.selfSize;
    for (const c of n.children) walk(c, own ? self : caller);
  };
  walk((JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode }).head, '(root)');
  return [...bySite].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}`);
}

async function send(port: number, path: string, n: number): Promise<void> {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONNECTIONS, pipelining: 1 });
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const r = await pool.request({ path, method: 'GET', headers: { accept: ACCEPT_JSON } });
      await r.body.dump();
      if (r.statusCode !== 200) throw new Error(`${path}: ${r.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  await pool.close();
}

async function signal(procs: Proc[]): Promise<void> {
  for (const p of procs) process.kill(p.pid, 'SIGUSR2');
  await sleep(200);
}

interface Row {
  scenario: string;
  process: string;
  bytesPerRequest: number;
  scavengesPer1000: number;
}

async function main(): Promise<void> {
  const tmp = mkdtempSync(join(tmpdir(), 'mvproxy-alloc-'));
  const out = join(tmp, 'alloc');
  process.env.MVPROXY_ALLOC_OUT = out;
  const procs: Proc[] = [];
  try {
    const err = buildDist();
    if (err) throw new Error(`compiling src/ failed: ${err}`);
    const be = await startBackend({});
    procs.push(be.proc);
    const pki = await makePKI(join(tmp, 'pki'), ['a', 'b', 'c']);
    if (SITES) process.env.MVPROXY_ALLOC_SITES = PROMOTED ? 'promoted' : '1';
    const nodeFlags = ['--require', PROBE];
    const B = await startMvproxy({ name: 'b', frontend: 'uws', localPort: be.portB, peers: {}, pki, runtime: 'dist', nodeFlags });
    const peers = { [B.serverID]: `127.0.0.1:${B.peerPort}` };
    const A = await startMvproxy({ name: 'a', frontend: 'uws', localPort: be.portA, peers, pki, runtime: 'dist', nodeFlags });
    const C = await startMvproxy({ name: 'c', frontend: 'node', localPort: be.portA, peers, pki, runtime: 'dist', nodeFlags });
    procs.push(B.proc, A.proc, C.proc);
    // The peer route is ready once A routes the peer-only group to B (discovery fetched, B probed).
    for (let i = 0; ; i++) {
      const ok = await send(A.clientPort, PATHS.peerGet, 1).then(() => true, () => false);
      if (ok) break;
      if (i > 120) throw new Error('the peer route was not ready within 30 s');
      await sleep(250);
    }
    const rows: Row[] = [];
    const sites: string[] = [];
    // The floors: uWS or node:http in front, the plain HTTP/1.1 client behind, nothing else.
    const pin: Pinning = {};
    const floor = async (front: 'uws' | 'node'): Promise<Anchor> => {
      const f = await startFloorProxy(be.portA, pin, front, 'plain', nodeFlags);
      if ('skipped' in f) throw new Error(`the ${front} floor did not start: ${f.skipped}`);
      procs.push(f.proc);
      return f;
    };
    const floorUws = await floor('uws');
    const floorNode = await floor('node');
    /** A measured process: its pid, client port and the row's label. */
    interface Measured {
      proc: Proc;
      port: number;
      role: string;
    }
    // B serves the peer hop on its peer listener (--peer-frontend=auto: node:http2, HTTP/1.1 from A).
    const a: Measured = { proc: A.proc, port: A.clientPort, role: 'mvproxy A (uws front end)' };
    const b: Measured = { proc: B.proc, port: B.clientPort, role: 'mvproxy B (peer listener)' };
    const c: Measured = { proc: C.proc, port: C.clientPort, role: 'mvproxy C (node front end)' };
    const fu: Measured = { proc: floorUws.proc, port: floorUws.port, role: 'floor: uWS + plain client' };
    const fn: Measured = { proc: floorNode.proc, port: floorNode.port, role: 'floor: node:http + plain client' };
    const scenarios: [string, Measured[], string][] = [
      ['uws/get', [a], PATHS.get],
      ['floor/get', [fu], PATHS.get],
      ['uws/list', [a], PATHS.list],
      ['floor/list', [fu], PATHS.list],
      ['node/get', [c], PATHS.get],
      ['floor-node/get', [fn], PATHS.get],
      ['node/list', [c], PATHS.list],
      ['floor-node/list', [fn], PATHS.list],
      ['peer/get', [a, b], PATHS.peerGet],
      ['peer/list', [a, b], PATHS.peerList],
    ];
    for (const [scenario, ms, path] of scenarios) {
      if (ONLY.length > 0 && !ONLY.includes(scenario)) continue;
      const port = ms[0]!.port;
      await send(port, path, WARMUP);
      await signal(ms.map((m) => m.proc));
      await send(port, path, N);
      await signal(ms.map((m) => m.proc));
      for (const m of ms) {
        const file = `${out}.${m.proc.pid}`;
        for (let i = 0; !existsSync(file); i++) {
          if (i > 300) throw new Error(`${m.role}: no ${file} within 30 s`);
          await sleep(100);
        }
        const r = JSON.parse(readFileSync(file, 'utf8')) as { bytes: number; collections: number };
        rmSync(file);
        const role = m.role;
        rows.push({ scenario, process: role, bytesPerRequest: Math.round(r.bytes / N), scavengesPer1000: +((r.collections * 1000) / N).toFixed(2) });
        if (SITES) sites.push(`\n${scenario}, ${role}: where its heap bytes were allocated (sampled)\n${topSites(`${out}.${m.proc.pid}.heapprofile`, TOP).join('\n')}`);
      }
    }
    console.log(`| scenario | process | V8 heap bytes allocated per request | collections per 1,000 requests |\n|---|---|---:|---:|`);
    for (const r of rows) console.log(`| ${r.scenario} | ${r.process} | ${r.bytesPerRequest.toLocaleString('en')} | ${r.scavengesPer1000} |`);
    console.log(JSON.stringify({ date: new Date().toISOString(), requests: N, connections: CONNECTIONS, rows }));
    for (const l of sites) console.log(l);
  } finally {
    for (const p of procs.reverse()) await p.stop('SIGKILL').catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
