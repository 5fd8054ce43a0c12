// Syscalls per request, by process: `strace -c -f` attached to each process of a target while a
// fixed number of requests goes through it (issue 18, "How to work": look at the whole request,
// not only JS). Counts, not times: strace slows every syscall, so its times say nothing, but the
// count per request is what a change to reads, writes and TLS records moves.
//
//   npm run bench:syscalls                          # uws/get, uws/list, peer/get, floor/get, nginx/get
//   npm run bench:syscalls -- --only peer/get --requests 5000
//   npm run bench:syscalls -- --only node/get,plain-node/get,plain/get   # the node front end beside both plain floors
//
// Needs strace (Debian `strace`) and, for the anchor, nginx; a missing one skips with the reason.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { sleep, which, type Proc } from './lib';
import { ACCEPT_JSON, PATHS } from './payloads';
import { buildDist, makePKI, startBackend, startFloorProxy, startMvproxy, startNginx, type Mvproxy } from './targets';

const { values: args } = parseArgs({
  options: {
    only: { type: 'string', default: 'uws/get,uws/list,peer/get,peer/list,floor/get,nginx/get' },
    requests: { type: 'string', default: '4000' },
    connections: { type: 'string', default: '50' },
    'proxy-node-flags': { type: 'string', default: '' },
  },
});
const REQUESTS = Number(args.requests);
const CONNECTIONS = Number(args.connections);
const STRACE = which('strace');

interface Target {
  name: string;
  port: number;
  /** Processes traced, with the label the table prints. */
  procs: { label: string; pid: number }[];
}

interface Count {
  calls: number;
  errors: number;
}

/** strace -c's summary table: `% time seconds usecs/call calls errors syscall`. */
function parseSummary(text: string): Map<string, Count> {
  const out = new Map<string, Count>();
  for (const line of text.split('\n')) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(\d*)\s*([a-z_0-9]+)\s*$/.exec(line);
    if (m && m[3] !== 'total') out.set(m[3]!, { calls: Number(m[1]), errors: Number(m[2] || 0) });
  }
  return out;
}

/** Runs `requests` GETs of `path` over `connections` keep-alive connections, all answered before it resolves. */
async function drive(port: number, path: string, requests: number): Promise<number> {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONNECTIONS, pipelining: 1 });
  let next = 0;
  let failed = 0;
  const worker = async () => {
    while (next < requests) {
      next++;
      const r = await pool.request({ path, method: 'GET', headers: { accept: ACCEPT_JSON } });
      await r.body.dump();
      if (r.statusCode !== 200) failed++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  await pool.close();
  return failed;
}

async function measure(t: Target, path: string): Promise<Record<string, { perRequest: number; top: string }>> {
  await drive(t.port, path, 1000); // warm: JIT, connections to the backend and peers open
  const dir = mkdtempSync(join(os.tmpdir(), 'mvproxy-strace-'));
  const tracers = t.procs.map((p) => {
    const file = join(dir, `${p.label}.txt`);
    const child = spawn(STRACE!, ['-c', '-f', '-o', file, '-p', String(p.pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    return { p, file, child, err: () => err, exited: new Promise<void>((r) => child.once('exit', () => r())) };
  });
  await sleep(1000); // strace attaches to every thread
  const failed = await drive(t.port, path, REQUESTS);
  await sleep(200);
  for (const tr of tracers) tr.child.kill('SIGINT');
  await Promise.all(tracers.map((tr) => tr.exited));
  const out: Record<string, { perRequest: number; top: string }> = {};
  for (const tr of tracers) {
    let text = '';
    try {
      text = readFileSync(tr.file, 'utf8');
    } catch {
      throw new Error(`strace wrote nothing for ${tr.p.label}: ${tr.err()}`);
    }
    const counts = parseSummary(text);
    let total = 0;
    for (const c of counts.values()) total += c.calls;
    const top = [...counts.entries()]
      .sort((a, b) => b[1].calls - a[1].calls)
      .slice(0, 6)
      .map(([name, c]) => `${name} ${(c.calls / REQUESTS).toFixed(2)}${c.errors ? ` (${(c.errors / REQUESTS).toFixed(2)} EAGAIN/err)` : ''}`)
      .join(', ');
    out[tr.p.label] = { perRequest: total / REQUESTS, top };
  }
  rmSync(dir, { recursive: true, force: true });
  if (failed) throw new Error(`${failed} of ${REQUESTS} requests through ${t.name} did not answer 200`);
  return out;
}

async function main(): Promise<void> {
  if (!STRACE) {
    console.log('strace is not installed (apt-get install -y strace): nothing measured');
    return;
  }
  const only = args.only.split(',').filter(Boolean);
  const need = new Set(only.map((s) => s.split('/')[0]!));
  const procs: Proc[] = [];
  const tmp = mkdtempSync(join(os.tmpdir(), 'mvproxy-syscalls-'));
  const nodeFlags = args['proxy-node-flags'].split(' ').filter(Boolean);
  try {
    const err = buildDist();
    const runtime = err ? 'tsx' : 'dist';
    if (err) console.log(`compiling src/ failed, mvproxy runs through tsx: ${err}`);
    const backend = await startBackend({});
    procs.push(backend.proc);
    const targets = new Map<string, Target>();
    const pki = await makePKI(join(tmp, 'pki'), ['a', 'b', 'c']);
    let B: Mvproxy | undefined;
    if (need.has('peer')) {
      B = await startMvproxy({ name: 'b', frontend: 'uws', localPort: backend.portB, peers: {}, pki, runtime, nodeFlags });
      procs.push(B.proc);
    }
    if (need.has('uws') || need.has('peer')) {
      const A = await startMvproxy({ name: 'a', frontend: 'uws', localPort: backend.portA, peers: B ? { [B.serverID]: `127.0.0.1:${B.peerPort}` } : {}, pki, runtime, nodeFlags });
      procs.push(A.proc);
      targets.set('uws', { name: 'uws', port: A.clientPort, procs: [{ label: 'A', pid: A.proc.pid }, { label: 'backend', pid: backend.proc.pid }] });
      if (B) {
        // Until A has B's discovery and has probed its peer listener, the peer group answers 404.
        const end = Date.now() + 30_000;
        while ((await drive(A.clientPort, PATHS.peerGet, 1)) !== 0) {
          if (Date.now() > end) throw new Error('peer route not ready after 30 s');
          await sleep(250);
        }
        targets.set('peer', { name: 'peer', port: A.clientPort, procs: [{ label: 'A', pid: A.proc.pid }, { label: 'B', pid: B.proc.pid }, { label: 'backend', pid: backend.proc.pid }] });
      }
    }
    if (need.has('node')) {
      const C = await startMvproxy({ name: 'c', frontend: 'node', localPort: backend.portA, peers: {}, pki, runtime, nodeFlags });
      procs.push(C.proc);
      targets.set('node', { name: 'node', port: C.clientPort, procs: [{ label: 'C', pid: C.proc.pid }, { label: 'backend', pid: backend.proc.pid }] });
    }
    for (const [name, front] of [['plain', 'uws'], ['plain-node', 'node']] as const) {
      if (!need.has(name)) continue;
      const f = await startFloorProxy(backend.portA, {}, front, 'plain');
      if ('proc' in f) {
        procs.push(f.proc);
        targets.set(name, { name, port: f.port, procs: [{ label: name, pid: f.proc.pid }, { label: 'backend', pid: backend.proc.pid }] });
      } else console.log(`${name} skipped: ${f.skipped}`);
    }
    if (need.has('floor')) {
      const f = await startFloorProxy(backend.portA, {});
      if ('proc' in f) {
        procs.push(f.proc);
        targets.set('floor', { name: 'floor', port: f.port, procs: [{ label: 'floor', pid: f.proc.pid }, { label: 'backend', pid: backend.proc.pid }] });
      } else console.log(`floor skipped: ${f.skipped}`);
    }
    if (need.has('nginx')) {
      const n = await startNginx(tmp, backend.portA, Buffer.from('{}'), {});
      if ('proc' in n) {
        procs.push(n.proc);
        targets.set('nginx', { name: 'nginx', port: n.port, procs: n.pids().map((pid, i) => ({ label: i === 0 ? 'nginx' : `nginx-${i}`, pid })).concat([{ label: 'backend', pid: backend.proc.pid }]) });
      } else console.log(`nginx skipped: ${n.skipped}`);
    }
    const rows: string[] = [];
    const results: Record<string, unknown> = {};
    for (const id of only) {
      const [name, kind] = id.split('/') as [string, string];
      const t = targets.get(name);
      if (!t) continue;
      const path = name === 'peer' ? (kind === 'list' ? PATHS.peerList : PATHS.peerGet) : kind === 'list' ? PATHS.list : PATHS.get;
      const r = await measure(t, path);
      results[id] = r;
      for (const [label, v] of Object.entries(r)) {
        const row = `| ${id} | ${label} | ${v.perRequest.toFixed(2)} | ${v.top} |`;
        rows.push(row);
        console.log(row);
      }
    }
    const out = join(__dirname, 'results', `syscalls-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(out, JSON.stringify({ requests: REQUESTS, connections: CONNECTIONS, node: process.version, results }, null, 1) + '\n');
    console.log(`\n| scenario | process | syscalls / request | most frequent (per request) |\n|---|---|---:|---|\n${rows.join('\n')}\n\nwrote ${out}`);
  } finally {
    await Promise.all(procs.map((p) => p.stop('SIGTERM', 10_000)));
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
