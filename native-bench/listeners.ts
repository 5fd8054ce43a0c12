// Front-end benchmark: uWebSockets.js (listenUWS) vs node:http (listenNode), same Exchange
// contract, two scenarios:
//   trivial  the handler answers a 2 KiB JSON body itself (front end + adapter cost only)
//   proxy    the real routing core: ProxyHandler.handleClient → newRequestInfo → decide (servedLocally,
//            route table from the v1.33/v1.37 fixtures) → undici Pool → a trivial node:http
//            "apiserver" in a separate process answering the same 2 KiB → back to the client
//
//   node --import tsx native-bench/listeners.ts [--quick] [--duration 5] [--repeats 3] [--connections 50]
//
// Load comes from a separate process: `wrk -t1 -c50 -d5s --latency` when wrk is on PATH (Debian
// package `wrk`), else this file re-run as an undici load child (50 connections, one request each
// in flight; its own ceiling is ~20–50k req/s here, docs/dependencies.md §9, so uWS peaks are under-reported).
// Runs are interleaved uWS/node (the order alternates per repeat: A B, B A, A B) and every server
// is warmed up first. Everything is on 127.0.0.1. With 2 shared cores, the load generator, the
// server under test and (proxy) the upstream compete for CPU: compare rows, never read capacity.
//
// Roles (internal): --role upstream  → the fake apiserver; --role load → the undici loader.

import { DEFAULTS } from '../src/config/types';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { once } from 'node:events';
import { Pool, request } from 'undici';
import { listenUWS, loadUWS } from '../src/listener/uws';
import type { RunningListener } from '../src/listener/exchange';
import { listenNode } from '../src/listener/listen-node';
import type { Exchange } from '../src/listener/exchange';
import { ProxyHandler } from '../src/proxy/handler';
import { SnapshotHolder } from '../src/snapshot/holder';
import { Lifecycle } from '../src/lifecycle/state';
import { localRelay, PeerPools } from '../src/upstream/pools';
import type { OriginPool } from '../src/upstream/h1/origin';
import { Metrics } from '../src/telemetry/metrics';
import { silentLogger } from '../src/telemetry/log';
import { benchTopology } from './fixtures';
import { median, parseArgs, printTable } from './lib';

const args = parseArgs();
const HOST = '127.0.0.1';
/** A local route: core v1 configmaps are served by this node's (v1.33) apiserver. */
const PATH = '/api/v1/namespaces/default/configmaps/kube-root-ca.crt';

/** A ConfigMap-like JSON object of exactly 2,048 bytes. */
function body2k(): Buffer {
  const obj = {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: {
      name: 'kube-root-ca.crt',
      namespace: 'default',
      uid: '3c1f9a52-8a0e-4b7c-9c51-0f4f2d8f6a11',
      resourceVersion: '123456',
      creationTimestamp: '2024-01-01T00:00:00Z',
      annotations: { 'kubernetes.io/description': 'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints.' },
    },
    data: { 'ca.crt': '' },
  };
  obj.data['ca.crt'] = '-----BEGIN CERTIFICATE-----\n';
  obj.data['ca.crt'] += 'A'.repeat(2048 - Buffer.byteLength(JSON.stringify(obj)));
  const b = Buffer.from(JSON.stringify(obj));
  if (b.length !== 2048) throw new Error(`body is ${b.length} bytes`);
  return b;
}

// ---------------------------------------------------------------------------------------------
// Role: upstream (the fake apiserver, own process)

async function roleUpstream(): Promise<void> {
  const body = body2k();
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length, 'x-bench-upstream': '1' });
    res.end(body);
  });
  server.listen(0, HOST);
  await once(server, 'listening');
  process.stdout.write(`PORT ${(server.address() as { port: number }).port}\n`);
  // The parent holds our stdin: when it goes away, so do we.
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
}

// ---------------------------------------------------------------------------------------------
// Role: load (undici, own process): one JSON line {rps, p50, p99, requests, errors}

async function roleLoad(): Promise<void> {
  const url = new URL(args.str('--url', ''));
  const conns = args.num('--connections', 50);
  const durationMs = args.num('--duration', 5) * 1000;
  const pool = new Pool(url.origin, { connections: conns, pipelining: 1 });
  const lat: number[] = [];
  let errors = 0;
  let non2xx = 0;
  const until = performance.now() + durationMs;
  const t0 = performance.now();
  const worker = async () => {
    while (performance.now() < until) {
      const s = performance.now();
      try {
        const r = await pool.request({ path: url.pathname + url.search, method: 'GET' });
        await r.body.dump({ limit: 1 << 20 });
        if (r.statusCode < 200 || r.statusCode >= 400) non2xx++;
        lat.push(performance.now() - s);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: conns }, worker));
  const secs = (performance.now() - t0) / 1000;
  await pool.close();
  lat.sort((a, b) => a - b);
  const pct = (p: number) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(lat.length * p))] : NaN);
  process.stdout.write(JSON.stringify({ rps: lat.length / secs, p50: pct(0.5), p99: pct(0.99), requests: lat.length, errors, non2xx }) + '\n');
}

// ---------------------------------------------------------------------------------------------
// Orchestrator

interface LoadResult {
  rps: number;
  p50: number; // ms
  p99: number; // ms
  requests: number;
  errors: number; // socket errors + non-2xx/3xx
}

function hasWrk(): boolean {
  const r = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  return r.error === undefined && /wrk/i.test(r.stdout + r.stderr);
}

function toMs(v: string, unit: string): number {
  const n = Number(v);
  return unit === 'us' ? n / 1000 : unit === 'ms' ? n : unit === 's' ? n * 1000 : unit === 'm' ? n * 60_000 : NaN;
}

/** Runs a child to completion with a hard deadline; resolves with its stdout. */
function runChild(cmd: string, argv: string[], deadlineMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), deadlineMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} exited with ${code}: ${err.trim() || out.trim()}`));
    });
  });
}

async function loadWrk(url: string, conns: number, secs: number): Promise<LoadResult> {
  const out = await runChild('wrk', ['-t1', `-c${conns}`, `-d${secs}s`, '--latency', url], (secs + 15) * 1000);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const p = (q: string) => {
    const m = new RegExp(`^\\s*${q}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out);
    return m ? toMs(m[1], m[2]) : NaN;
  };
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const sockErrs = sock ? sock.slice(1).reduce((a, x) => a + Number(x), 0) : 0;
  if (!Number.isFinite(rps)) throw new Error(`cannot read wrk output:\n${out}`);
  return { rps, p50: p('50'), p99: p('99'), requests, errors: non2xx + sockErrs };
}

async function loadUndici(url: string, conns: number, secs: number): Promise<LoadResult> {
  const out = await runChild(process.execPath, ['--import', 'tsx', __filename, '--role', 'load', '--url', url, '--connections', String(conns), '--duration', String(secs)], (secs + 20) * 1000);
  const r = JSON.parse(out.trim().split('\n').pop()!) as { rps: number; p50: number; p99: number; requests: number; errors: number; non2xx: number };
  return { rps: r.rps, p50: r.p50, p99: r.p99, requests: r.requests, errors: r.errors + r.non2xx };
}

async function startUpstream(): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', __filename, '--role', 'upstream'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let buf = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('upstream did not start within 20 s')), 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /PORT (\d+)/.exec(buf);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`upstream exited early (${code})`)));
  });
  return { child, port };
}

interface Target {
  scenario: 'trivial' | 'proxy';
  frontend: 'uws' | 'node';
  port: number;
  results: LoadResult[];
}

async function orchestrate(): Promise<void> {
  const quick = args.quick;
  const secs = Math.max(1, Math.round(args.num('--duration', quick ? 1 : 5)));
  const repeats = Math.max(1, args.num('--repeats', quick ? 1 : 3));
  const conns = Math.max(1, args.num('--connections', 50));
  const warmSecs = quick ? 0 : 1;
  const started = performance.now();
  const wrk = !args.has('--undici') && hasWrk();
  const loader = wrk ? `wrk -t1 -c${conns} -d${secs}s --latency` : `undici load child, ${conns} connections, ${secs} s (wrk not on PATH; one loader thread is often the bottleneck and hides front-end differences)`;

  const body = body2k();
  const trivial = (ex: Exchange) => {
    ex.res.writeHead(200, { headers: ['content-type', 'application/json'], contentLength: body.length, contentType: 'application/json' }, false);
    ex.res.write(body);
    ex.res.end();
  };

  const upstream = await startUpstream();
  const metrics = new Metrics();
  const snapshots = new SnapshotHolder();
  snapshots.publish({ table: benchTopology(`${HOST}:1`).table });
  const lifecycle = new Lifecycle();
  const pools: OriginPool[] = [];
  const peerPools: PeerPools[] = [];
  const makeHandler = () => {
    const local = localRelay(new URL(`http://${HOST}:${upstream.port}`), 5000, undefined);
    const peers = new PeerPools({ connectTimeoutMs: 5000 });
    pools.push(local);
    peerPools.push(peers);
    // legacyDiscoveryFix: the daemon's default; it only concerns discovery paths, not this GET.
    return new ProxyHandler({ local, localPlain: local, peers, snapshots, lifecycle, proxyEnabled: true, legacyDiscoveryFix: true, requestTimeoutMs: 60_000, heldRequestBodyBytes: DEFAULTS.heldRequestBodyBytes, metrics, log: silentLogger });
  };

  const listeners: RunningListener[] = [];
  const targets: Target[] = [];
  const uws = loadUWS();
  if ('error' in uws) console.log(`uWebSockets.js does not load here (${uws.error.message}): node:http rows only`);
  for (const scenario of ['trivial', 'proxy'] as const) {
    const onRequest = scenario === 'trivial' ? trivial : ((h: ProxyHandler) => (ex: Exchange) => h.handleClient(ex))(makeHandler());
    if (!('error' in uws)) {
      const onRequestU = scenario === 'trivial' ? trivial : ((h: ProxyHandler) => (ex: Exchange) => h.handleClient(ex))(makeHandler());
      const l = await listenUWS(uws.uws, { host: HOST, port: 0, onRequest: onRequestU, onUpgradeRefused: trivial });
      listeners.push(l);
      targets.push({ scenario, frontend: 'uws', port: l.port, results: [] });
    }
    const n = await listenNode({ host: HOST, port: 0, onRequest });
    listeners.push(n);
    targets.push({ scenario, frontend: 'node', port: n.port, results: [] });
  }

  const url = (t: Target) => `http://${HOST}:${t.port}${PATH}`;
  try {
    // Every server answers the same 2 KiB body (through the upstream for the proxy scenario).
    for (const t of targets) {
      const r = await request(url(t));
      const got = Buffer.from(await r.body.arrayBuffer());
      const viaUpstream = r.headers['x-bench-upstream'] === '1';
      if (r.statusCode !== 200 || !got.equals(body) || viaUpstream !== (t.scenario === 'proxy')) {
        throw new Error(`${t.frontend}/${t.scenario}: status ${r.statusCode}, ${got.length} bytes, via upstream ${viaUpstream}`);
      }
    }
    console.log(`listeners: load ${loader}; GET ${PATH}; 2,048-byte JSON; ${repeats} repeat(s), interleaved; warm-up ${warmSecs} s per server`);
    const load = (t: Target, s: number) => (wrk ? loadWrk(url(t), conns, s) : loadUndici(url(t), conns, s));
    if (warmSecs > 0) for (const t of targets) await load(t, warmSecs);
    for (let rep = 0; rep < repeats; rep++) {
      for (const scenario of ['trivial', 'proxy'] as const) {
        const pair = targets.filter((t) => t.scenario === scenario);
        if (rep % 2 === 1) pair.reverse();
        for (const t of pair) t.results.push(await load(t, secs));
      }
    }
  } finally {
    for (const l of listeners) l.close();
    for (const p of pools) p.destroy();
    await Promise.all(peerPools.map((p) => p.close()));
    upstream.child.kill('SIGTERM');
  }

  const rows = targets.map((t) => [
    t.scenario,
    t.frontend === 'uws' ? 'uWS (listenUWS)' : 'node:http (listenNode)',
    t.results.map((r) => Math.round(r.rps).toLocaleString('en-US')).join(' / '),
    median(t.results.map((r) => r.rps)),
    median(t.results.map((r) => r.p50)),
    median(t.results.map((r) => r.p99)),
    t.results.reduce((a, r) => a + r.errors, 0),
  ]);
  printTable(`\nlisteners: req/s (median of ${repeats}), latency ms (median of runs)`, ['scenario', 'front end', 'runs req/s', 'median req/s', 'p50 ms', 'p99 ms', 'errors'], rows);
  console.log('');
  for (const scenario of ['trivial', 'proxy'] as const) {
    const u = targets.find((t) => t.scenario === scenario && t.frontend === 'uws');
    const n = targets.find((t) => t.scenario === scenario && t.frontend === 'node')!;
    if (!u) continue;
    const ratio = median(u.results.map((r) => r.rps)) / median(n.results.map((r) => r.rps));
    const perRun = u.results.map((r, i) => (r.rps / n.results[i].rps).toFixed(2)).join(' ');
    console.log(`ratio uWS/node (${scenario}) = ${ratio.toFixed(2)}  (per repeat ${perRun})`);
  }
  console.log(`listeners total ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

const role = args.str('--role', '');
const main = role === 'upstream' ? roleUpstream : role === 'load' ? roleLoad : orchestrate;
main().then(
  () => {
    if (role !== 'upstream') process.exit(0); // uWS keeps the loop alive after app.close()
  },
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
