// End-to-end benchmark of mvproxy against the proxies operators already trust, on one backend,
// in one run. See bench/README.md for what is measured and how to read it.
//
//   npm run bench                    # full: 3 interleaved rounds × 5 s per run, both tools (~15 min)
//   npm run bench -- --quick         # 1 round × 2 s (< 3 min); numbers indicative only
//   npm run bench -- --smoke --out-dir DIR   # the unit test's harness check: one scenario, 1 s
//   npm run bench -- --only uws/get,nginx/get --rounds 5
//   npm run bench -- --profile uws/get [--profile-seconds 10]   # node --cpu-prof on the proxy
//
// Options: --rounds N --duration S --connections C --tools autocannon,wrk --no-pin
//   --server-cpus 0 --client-cpus 1 --no-watch --watches N --watch-interval-ms MS
//   --no-open-watches --open-watches N --runtime dist|tsx --out-dir DIR --no-readme --readme --no-anchors
//   --proxy-node-flags "--max-semi-space-size=4"   (node flags for the mvproxy processes)
//   --settle-s S                                  (each scenario's tool runs S s unmeasured first: JIT warm-up; not --profile)
//   --only open-watches                           (just the 1,000-watch RSS measurement)

import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, relative } from 'node:path';
import { Pool } from 'undici';
import { ACCEPT_DISCOVERY_JSON, ACCEPT_DISCOVERY_PB, ACCEPT_JSON, PATHS } from './payloads';
import { childrenCpuSeconds, cpuBusy, cpuSeconds, cpuTimes, median, memory, repin, round, sleep, startProc, TASKSET, type Proc } from './lib';
import { runLoad, toolAvailable, WRK, wrkVersion, type Tool } from './load';
import { buildDist, buildRef, makePKI, startBackend, startFloorPeer, startFloorProxy, startGoProxy, startHaproxy, startMvproxy, startNginx, type AnchorResult, type Backend, type Mvproxy, type PKIFiles, type Pinning, type Runtime } from './targets';
import { checks, markdown, summarize, summarizeWatches, svgChart, updateReadme } from './report';
import type { BenchResult, OpenWatches, RunRecord, ScenarioInfo, TargetInfo, WatchRecord } from './model';
import { printProfile, summarizeProfile } from './profile';
import { has, num, str } from './args';

// ---------------------------------------------------------------- options


const SMOKE = has('--smoke');
const QUICK = has('--quick') || SMOKE;
const PROFILE = str('--profile');
const ROUNDS = num('--rounds', SMOKE ? 1 : QUICK ? 1 : 3);
const DURATION = num('--duration', SMOKE ? 1 : QUICK ? 2 : 5);
/**
 * Seconds each scenario's load tool runs, unmeasured, before its first measured run (0: none). The
 * 2,000 warm-up requests leave V8 compiling mvproxy's request path for seconds more, and every run's
 * new and closing connections deoptimize some of it again: mvproxy's GET p99 was 5.4, 3.2, 3.1 and
 * 3.0 ms in four 5-s runs back to back (bench/README "Where the GET p99 at saturation goes").
 */
const SETTLE_S = num('--settle-s', 0);
const CONNECTIONS = num('--connections', 50);
// Pinning needs two CPUs (system under test on one, load on the other).
const PIN = !has('--no-pin') && TASKSET !== undefined && os.cpus().length >= 2;
const PINNING: Pinning = PIN ? { server: str('--server-cpus') ?? '0', client: str('--client-cpus') ?? '1' } : {};
const TOOLS: Tool[] = (str('--tools') ?? (SMOKE ? 'autocannon' : 'autocannon,wrk')).split(',').filter((t): t is Tool => (t === 'autocannon' || (t === 'wrk' && WRK !== undefined)));
const RUNTIME: Runtime = (str('--runtime') as Runtime | undefined) ?? (SMOKE ? 'tsx' : 'dist');
const OUT_DIR = str('--out-dir') ?? join(__dirname, 'results');
// The README block shows full or quick runs; a partial run (--only, --duration, --profile) writes its JSON only, unless --readme.
const WRITE_README = has('--readme') || (!has('--no-readme') && !SMOKE && str('--out-dir') === undefined && !has('--only') && !has('--duration') && !has('--profile'));
const WATCH = !has('--no-watch') && !SMOKE;
const WATCHES = num('--watches', QUICK ? 100 : 200);
const WATCH_INTERVAL = num('--watch-interval-ms', 50);
const WATCH_MEASURE = num('--watch-measure-ms', QUICK ? 1500 : 4000);
const WATCH_WARMUP = QUICK ? 500 : 1000;
const OPEN = !has('--no-open-watches') && !SMOKE;
const OPEN_WATCHES = num('--open-watches', 1000);
const OPEN_HOLD = num('--open-hold-ms', QUICK ? 1500 : 5000);
const ANCHORS = !has('--no-anchors') && !SMOKE;
const ONLY = (str('--only') ?? (SMOKE ? 'uws/get' : '')).split(',').map((s) => s.trim()).filter(Boolean);
const PROFILE_SECONDS = num('--profile-seconds', 10);
/**
 * A git commit to measure beside this checkout in the same run (before and after, side by side):
 * its build serves the `uws-before/*` and `node-before/*` scenarios (bench/targets.ts buildRef).
 */
const BEFORE = str('--before');
/** Extra node flags for every mvproxy process, e.g. "--max-semi-space-size=4" (experiments without touching src/). */
const PROXY_NODE_FLAGS = (str('--proxy-node-flags') ?? '').split(' ').filter(Boolean);
const MODE: BenchResult['mode'] = SMOKE ? 'smoke' : ONLY.length || PROFILE || has('--duration') ? 'custom' : QUICK ? 'quick' : 'full';
// Every run is bounded: the whole harness stops (and cleans up) past this.
const TIME_LIMIT_MS = num('--time-limit-s', SMOKE ? 60 : QUICK ? 600 : 3600) * 1000;
const SERVER_CPU = Number((PINNING.server ?? '0').split(/[,-]/)[0]);
const CLIENT_CPU = Number((PINNING.client ?? '1').split(/[,-]/)[0]);

// ---------------------------------------------------------------- scenarios

const S = (id: string, label: string, group: ScenarioInfo['group'], path: string, accept: string, o: { target?: string; tls?: boolean; tools?: Tool[] } = {}): ScenarioInfo => ({ id, label, target: o.target ?? id.split('/')[0]!, group, path, accept, ...(o.tls ? { tls: true } : {}), ...(o.tools ? { tools: o.tools } : {}) });
// The front ends as clients reach them in production, over TLS: HTTP/1.1 (wrk) on both, and HTTP/2
// (h2load) on the node front end, which offers h2 by ALPN (uWS speaks HTTP/1.1 only).
const TLS_H1: Partial<Parameters<typeof S>[5]> = { tls: true, tools: ['wrk'] };
const TLS_H2: Partial<Parameters<typeof S>[5]> = { target: 'node-tls', tls: true, tools: ['h2load'] };

const ALL: ScenarioInfo[] = [
  S('direct/get', 'direct (backend, no proxy)', 'get', PATHS.get, ACCEPT_JSON),
  S('uws/get', 'mvproxy local, uWS front end', 'get', PATHS.get, ACCEPT_JSON),
  S('node/get', 'mvproxy local, node:http front end', 'get', PATHS.get, ACCEPT_JSON),
  S('peer/get', 'mvproxy peer: A → mTLS → B', 'get', PATHS.peerGet, ACCEPT_JSON),
  S('floor-peer/get', 'floor: the peer route, two floors over mTLS', 'get', PATHS.peerGet, ACCEPT_JSON),
  S('nginx/get', 'nginx (upstream keepalive)', 'get', PATHS.get, ACCEPT_JSON),
  S('haproxy/get', 'HAProxy', 'get', PATHS.get, ACCEPT_JSON),
  S('go/get', 'Go httputil.ReverseProxy', 'get', PATHS.get, ACCEPT_JSON),
  S('floor/get', 'floor: uWS + undici dispatch(), no mvproxy logic', 'get', PATHS.get, ACCEPT_JSON),
  S('floor-node/get', 'floor: node:http + undici dispatch(), no mvproxy logic', 'get', PATHS.get, ACCEPT_JSON),
  S('plain/get', 'floor (plain): uWS + a plain HTTP/1.1 client on net', 'get', PATHS.get, ACCEPT_JSON),
  S('plain-node/get', 'floor (plain): node:http + a plain HTTP/1.1 client on net', 'get', PATHS.get, ACCEPT_JSON),
  S('plain-peer/get', 'floor (plain): the peer route, two plain floors over mTLS', 'get', PATHS.peerGet, ACCEPT_JSON),
  S('direct/list', 'direct (backend, no proxy)', 'list', PATHS.list, ACCEPT_JSON),
  S('uws/list', 'mvproxy local, uWS front end', 'list', PATHS.list, ACCEPT_JSON),
  S('node/list', 'mvproxy local, node:http front end', 'list', PATHS.list, ACCEPT_JSON),
  S('peer/list', 'mvproxy peer: A → mTLS → B', 'list', PATHS.peerList, ACCEPT_JSON),
  S('floor-peer/list', 'floor: the peer route, two floors over mTLS', 'list', PATHS.peerList, ACCEPT_JSON),
  S('nginx/list', 'nginx (upstream keepalive)', 'list', PATHS.list, ACCEPT_JSON),
  S('haproxy/list', 'HAProxy', 'list', PATHS.list, ACCEPT_JSON),
  S('go/list', 'Go httputil.ReverseProxy', 'list', PATHS.list, ACCEPT_JSON),
  S('floor/list', 'floor: uWS + undici dispatch(), no mvproxy logic', 'list', PATHS.list, ACCEPT_JSON),
  S('floor-node/list', 'floor: node:http + undici dispatch(), no mvproxy logic', 'list', PATHS.list, ACCEPT_JSON),
  S('plain/list', 'floor (plain): uWS + a plain HTTP/1.1 client on net', 'list', PATHS.list, ACCEPT_JSON),
  S('plain-node/list', 'floor (plain): node:http + a plain HTTP/1.1 client on net', 'list', PATHS.list, ACCEPT_JSON),
  S('plain-peer/list', 'floor (plain): the peer route, two plain floors over mTLS', 'list', PATHS.peerList, ACCEPT_JSON),
  S('uws-tls/get', 'mvproxy local, uWS, TLS HTTP/1.1', 'get', PATHS.get, ACCEPT_JSON, TLS_H1),
  // The cost of request logs when on (issue 15 §4): uws/get again with --v=4, one JSON line per request to stderr.
  S('uws-v4/get', 'mvproxy local, uWS, --v=4 request logs', 'get', PATHS.get, ACCEPT_JSON),
  S('node-tls/get', 'mvproxy local, node, TLS HTTP/1.1', 'get', PATHS.get, ACCEPT_JSON, TLS_H1),
  S('node-h2/get', 'mvproxy local, node, TLS HTTP/2 (10 streams per connection)', 'get', PATHS.get, ACCEPT_JSON, TLS_H2),
  S('uws-tls/list', 'mvproxy local, uWS, TLS HTTP/1.1', 'list', PATHS.list, ACCEPT_JSON, TLS_H1),
  S('node-tls/list', 'mvproxy local, node, TLS HTTP/1.1', 'list', PATHS.list, ACCEPT_JSON, TLS_H1),
  S('node-h2/list', 'mvproxy local, node, TLS HTTP/2 (10 streams per connection)', 'list', PATHS.list, ACCEPT_JSON, TLS_H2),
  S('uws/apis-json', 'mvproxy /apis JSON, uWS', 'discovery', PATHS.apis, ACCEPT_DISCOVERY_JSON),
  S('uws/apis-pb', 'mvproxy /apis protobuf, uWS', 'discovery', PATHS.apis, ACCEPT_DISCOVERY_PB),
  S('node/apis-json', 'mvproxy /apis JSON, node:http', 'discovery', PATHS.apis, ACCEPT_DISCOVERY_JSON),
  S('nginx/apis-static', 'nginx, same JSON as a static file', 'discovery', '/static/apis', ACCEPT_DISCOVERY_JSON),
];

// The same scenarios on the --before build.
if (BEFORE !== undefined) {
  for (const sc of ALL.filter((x) => x.target === 'uws' || x.target === 'node')) {
    const [t, what] = sc.id.split('/');
    ALL.push({ ...sc, id: `${t}-before/${what}`, label: `${sc.label}, at ${BEFORE}`, target: `${t}-before` });
  }
}

const WATCH_TARGETS: { id: string; label: string; target: string }[] = [
  { id: 'direct/watch', label: 'direct (backend, no proxy)', target: 'direct' },
  { id: 'uws/watch', label: 'mvproxy, uWS front end', target: 'uws' },
  { id: 'node/watch', label: 'mvproxy, node:http front end', target: 'node' },
  { id: 'nginx/watch', label: 'nginx', target: 'nginx' },
  { id: 'haproxy/watch', label: 'HAProxy', target: 'haproxy' },
  { id: 'go/watch', label: 'Go httputil.ReverseProxy', target: 'go' },
];

/** The tools a scenario runs with in this run. */
const toolsOf = (sc: ScenarioInfo): Tool[] => (sc.tools ? sc.tools.filter(toolAvailable) : TOOLS);
const selected = (id: string) => ONLY.length === 0 || ONLY.some((o) => id === o || (o.endsWith('/') && id.startsWith(o)) || id.startsWith(o + '/'));
let scenarios = ALL.filter((s) => selected(s.id));
let watchScenarios = WATCH ? WATCH_TARGETS.filter((w) => selected(w.id)) : [];
const openTargets = OPEN && !PROFILE && (ONLY.length === 0 || ONLY.includes('open-watches')) ? ['uws', 'node'] : [];
if (PROFILE) {
  scenarios = ALL.filter((s) => s.id === PROFILE);
  if (scenarios.length === 0) throw new Error(`--profile: unknown scenario ${PROFILE}; one of ${ALL.map((s) => s.id).join(', ')}`);
  watchScenarios = [];
}

// ---------------------------------------------------------------- targets

interface Target {
  name: string;
  port: number;
  pids(): number[];
  version?: string;
}

const procs: Proc[] = [];
const targets = new Map<string, Target>();
const targetInfo: TargetInfo[] = [];
const skippedScenarios: { scenario: string; reason: string }[] = [];
const notes: string[] = [];
let backend: Backend | undefined;
let tmp = '';

async function cleanup(): Promise<void> {
  // Proxies first (graceful: a --cpu-prof profile is written at exit), then the backend.
  await Promise.all(procs.filter((p) => p.name !== 'backend').map((p) => p.stop('SIGTERM', 30_000)));
  await Promise.all(procs.map((p) => p.stop('SIGTERM', 5000)));
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}

const MB = (b: number) => b / 1e6;
const log = (s: string) => process.stdout.write(s + '\n');

async function setup(): Promise<void> {
  const need = new Set<string>([...scenarios.map((s) => s.target), ...watchScenarios.map((w) => w.target), ...openTargets]);
  const needA = need.has('uws') || need.has('peer');
  const needC = need.has('node');
  const needTLS = need.has('uws-tls') || need.has('node-tls') || need.has('uws-v4');
  const needBefore = need.has('uws-before') || need.has('node-before');
  const needB = need.has('peer') || (need.has('uws') && !SMOKE) || needC;
  tmp = mkdtempSync(join(os.tmpdir(), 'mvproxy-bench-'));

  let runtime = RUNTIME;
  if ((needA || needC || needTLS || needBefore) && runtime === 'dist') {
    const t0 = performance.now();
    const err = buildDist();
    if (err) {
      notes.push(`compiling src/ failed, mvproxy ran through tsx: ${err}`);
      runtime = 'tsx';
    } else log(`compiled src/ to bench/.build in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  runtimeUsed = runtime;

  backend = await startBackend(PINNING);
  procs.push(backend.proc);
  const be = backend;
  targets.set('direct', { name: 'direct', port: be.portA, pids: () => [be.proc.pid] });
  targetInfo.push({ name: 'backend', version: 'bench/backend.ts (uWS)', idleRssMB: MB(memory(be.proc.pid).rss) });
  log(`backend: pid ${be.proc.pid}, listener a :${be.portA}, b :${be.portB}`);

  const profFlags = (name: string) => (PROFILE ? ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `${name}.cpuprofile`] : []);
  const profiled = (t: string) => PROFILE !== undefined && (PROFILE.startsWith(t + '/') || (t === 'uws' && PROFILE.startsWith('peer/')) || (t === 'b' && PROFILE.startsWith('peer/')));
  if (needA || needC || needTLS || needBefore) {
    const pki = await makePKI(join(tmp, 'pki'), ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
    let B: Mvproxy | undefined;
    if (needB) {
      B = await startMvproxy({ name: 'b', frontend: 'uws', localPort: be.portB, peers: {}, pki, runtime, cpus: PINNING.server, nodeFlags: [...PROXY_NODE_FLAGS, ...(profiled('b') ? profFlags('mvproxy-b') : [])] });
      procs.push(B.proc);
      targetInfo.push({ name: 'mvproxy B (peer of A; its apiserver is backend listener b)', idleRssMB: MB(memory(B.proc.pid).rss) });
    }
    const peers = B ? { [B.serverID]: `127.0.0.1:${B.peerPort}` } : {};
    mvSetup = { pki, peers, runtime };
    if (needA) {
      const A = await startMvproxy({ name: 'a', frontend: 'uws', localPort: be.portA, peers, pki, runtime, cpus: PINNING.server, nodeFlags: [...PROXY_NODE_FLAGS, ...(profiled('uws') ? profFlags('mvproxy-a') : [])] });
      procs.push(A.proc);
      if (A.frontend !== 'uws') notes.push(`mvproxy A could not use uWebSockets.js and serves with the ${A.frontend} front end: the "uWS" rows measure that front end`);
      targets.set('uws', { name: 'uws', port: A.clientPort, pids: () => [A.proc.pid] });
      if (B) {
        targets.set('peer', { name: 'peer', port: A.clientPort, pids: () => [A.proc.pid, B!.proc.pid] });
        // /readyz does not wait for peers (one dead peer must not fail it): wait until A routes
        // the peer-only group to B (its discovery fetched, its peer listener probed), ≤ 30 s.
        const t0 = Date.now();
        const pool = new Pool(`http://127.0.0.1:${A.clientPort}`);
        let last = '';
        for (;;) {
          const r = await pool.request({ path: PATHS.peerGet, method: 'GET', headers: { accept: ACCEPT_JSON } });
          await r.body.dump();
          last = `${r.statusCode} from backend ${String(r.headers['x-bench-backend'] ?? '-')}`;
          if (r.statusCode === 200 && r.headers['x-bench-backend'] === 'b') break;
          if (Date.now() - t0 > 30_000) {
            log(`peer route not ready after 30 s (last answer: ${last})`);
            break;
          }
          await sleep(250);
        }
        await pool.close();
        if (Date.now() - t0 > 1000) log(`peer route ready after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      }
      targetInfo.push({ name: 'mvproxy A (uWS front end)', idleRssMB: MB(memory(A.proc.pid).rss) });
      log(`mvproxy A (uws): pid ${A.proc.pid}, client :${A.clientPort}${B ? `, peer B pid ${B.proc.pid} peer listener :${B.peerPort}` : ''}`);
    }
    for (const [t, name, frontend] of [['uws-tls', 'd', 'uws'], ['node-tls', 'e', 'node']] as const) {
      if (!need.has(t)) continue;
      const M = await startMvproxy({ name, frontend, localPort: be.portA, peers, pki, runtime, cpus: PINNING.server, clientTLS: true, nodeFlags: [...PROXY_NODE_FLAGS, ...(profiled(t) ? profFlags(`mvproxy-${name}`) : [])] });
      procs.push(M.proc);
      targets.set(t, { name: t, port: M.clientPort, pids: () => [M.proc.pid] });
      targetInfo.push({ name: `mvproxy ${name.toUpperCase()} (${frontend} front end, TLS)`, idleRssMB: MB(memory(M.proc.pid).rss) });
      log(`mvproxy ${name.toUpperCase()} (${frontend}, TLS): pid ${M.proc.pid}, client :${M.clientPort}`);
    }
    if (need.has('uws-v4')) {
      const M = await startMvproxy({ name: 'f', frontend: 'uws', localPort: be.portA, peers, pki, runtime, cpus: PINNING.server, extraFlags: ['--v=4'], nodeFlags: [...PROXY_NODE_FLAGS, ...(profiled('uws-v4') ? profFlags('mvproxy-f') : [])] });
      procs.push(M.proc);
      targets.set('uws-v4', { name: 'uws-v4', port: M.clientPort, pids: () => [M.proc.pid] });
      targetInfo.push({ name: 'mvproxy F (uWS front end, --v=4)', idleRssMB: MB(memory(M.proc.pid).rss) });
      log(`mvproxy F (uws, --v=4): pid ${M.proc.pid}, client :${M.clientPort}`);
    }
    for (const [t, name, frontend] of [['uws-before', 'g', 'uws'], ['node-before', 'h', 'node']] as const) {
      if (!need.has(t)) continue;
      const built = buildRef(BEFORE!);
      if ('error' in built) {
        notes.push(`--before ${BEFORE}: ${built.error}`);
        continue;
      }
      const M = await startMvproxy({ name, frontend, localPort: be.portA, peers, pki, runtime, cpus: PINNING.server, main: built.main, nodeFlags: [...PROXY_NODE_FLAGS, ...(profiled(t) ? profFlags(`mvproxy-${name}`) : [])] });
      procs.push(M.proc);
      targets.set(t, { name: t, port: M.clientPort, pids: () => [M.proc.pid] });
      targetInfo.push({ name: `mvproxy ${name.toUpperCase()} (${frontend} front end, at ${built.commit})`, version: built.commit, idleRssMB: MB(memory(M.proc.pid).rss) });
      log(`mvproxy ${name.toUpperCase()} (${frontend}, at ${built.commit}): pid ${M.proc.pid}, client :${M.clientPort}`);
    }
    if (needC) {
      const C = await startMvproxy({ name: 'c', frontend: 'node', localPort: be.portA, peers, pki, runtime, cpus: PINNING.server, nodeFlags: [...PROXY_NODE_FLAGS, ...(profiled('node') ? profFlags('mvproxy-c') : [])] });
      procs.push(C.proc);
      targets.set('node', { name: 'node', port: C.clientPort, pids: () => [C.proc.pid] });
      targetInfo.push({ name: 'mvproxy C (node:http front end)', idleRssMB: MB(memory(C.proc.pid).rss) });
      log(`mvproxy C (node): pid ${C.proc.pid}, client :${C.clientPort}`);
    }
  }

  const anchors: AnchorResult[] = [];
  let floorPKI: PKIFiles | undefined;
  if (ANCHORS) {
    const tryStart = async (name: AnchorResult['name'], f: () => Promise<AnchorResult>): Promise<AnchorResult> => {
      try {
        return await f();
      } catch (e) {
        return { name, skipped: `failed to start: ${(e as Error).message.slice(0, 400)}` };
      }
    };
    if (need.has('nginx')) {
      // The static file is the merged document mvproxy A serves (or the backend's, without A).
      const src = targets.get('uws') ?? targets.get('direct')!;
      const pool = new Pool(`http://127.0.0.1:${src.port}`);
      const r = await pool.request({ path: PATHS.apis, method: 'GET', headers: { accept: ACCEPT_DISCOVERY_JSON } });
      const body = Buffer.from(await r.body.arrayBuffer());
      await pool.close();
      anchors.push(await tryStart('nginx', () => startNginx(tmp, be.portA, body, PINNING)));
    }
    if (need.has('haproxy')) anchors.push(await tryStart('haproxy', () => startHaproxy(tmp, be.portA, PINNING)));
    if (need.has('go')) anchors.push(await tryStart('go', () => startGoProxy(be.portA, PINNING)));
    if (need.has('floor')) anchors.push(await tryStart('floor', () => startFloorProxy(be.portA, PINNING, 'uws', 'undici', profiled('floor') ? profFlags('floor') : [])));
    if (need.has('floor-node')) anchors.push(await tryStart('floor-node', () => startFloorProxy(be.portA, PINNING, 'node', 'undici', profiled('floor-node') ? profFlags('floor-node') : [])));
    if (need.has('floor-peer')) anchors.push(await tryStart('floor-peer', async () => startFloorPeer(be.portB, PINNING, mvSetup?.pki ?? (floorPKI ??= await makePKI(join(tmp, 'pki-floor'), ['a', 'b'])))));
    if (need.has('plain')) anchors.push(await tryStart('plain', () => startFloorProxy(be.portA, PINNING, 'uws', 'plain', profiled('plain') ? profFlags('plain') : [])));
    if (need.has('plain-node')) anchors.push(await tryStart('plain-node', () => startFloorProxy(be.portA, PINNING, 'node', 'plain', profiled('plain-node') ? profFlags('plain-node') : [])));
    if (need.has('plain-peer')) anchors.push(await tryStart('plain-peer', async () => startFloorPeer(be.portB, PINNING, mvSetup?.pki ?? (floorPKI ??= await makePKI(join(tmp, 'pki-floor'), ['a', 'b'])), 'plain')));
  } else {
    for (const n of ['nginx', 'haproxy', 'go', 'floor', 'floor-node', 'floor-peer', 'plain', 'plain-node', 'plain-peer']) if (need.has(n)) anchors.push({ name: n as 'nginx', skipped: 'anchors off (--no-anchors or --smoke)' });
  }
  for (const a of anchors) {
    if ('skipped' in a) {
      log(`anchor ${a.name} skipped: ${a.skipped}`);
      targetInfo.push({ name: a.name, skipped: a.skipped });
      continue;
    }
    procs.push(a.proc, ...(a.others ?? []));
    targets.set(a.name, { name: a.name, port: a.port, pids: a.pids, version: a.version });
    targetInfo.push({ name: a.name, version: a.version, idleRssMB: MB(a.pids().reduce((s, p) => s + memory(p).rss, 0)) });
    log(`anchor ${a.name} ${a.version}: pid ${a.proc.pid}, :${a.port}`);
  }

  // Drop scenarios whose target is missing or answers wrongly.
  const keep: ScenarioInfo[] = [];
  for (const sc of scenarios) {
    const t = targets.get(sc.target);
    if (!t) {
      skippedScenarios.push({ scenario: sc.id, reason: `target ${sc.target} not running` });
      continue;
    }
    const pool = scenarioPool(sc, t.port, 1);
    try {
      const r = await pool.request({ path: sc.path, method: 'GET', headers: { accept: sc.accept } });
      const body = Buffer.from(await r.body.arrayBuffer());
      const ct = String(r.headers['content-type'] ?? '');
      let problem = r.statusCode !== 200 ? `status ${r.statusCode}: ${body.toString('utf8').slice(0, 300)}` : undefined;
      if (!problem && sc.id === 'uws/apis-pb' && !ct.startsWith('application/vnd.kubernetes.protobuf')) problem = `content-type ${ct}`;
      if (!problem && sc.target.endsWith('peer') && r.headers['x-bench-backend'] !== 'b') problem = `answered by backend ${String(r.headers['x-bench-backend'])}, not b (no peer route)`;
      if (!problem && sc.group === 'discovery' && sc.target !== 'nginx' && !body.includes('bench.mvproxy.io') && !ct.includes('protobuf')) problem = 'the /apis answer lacks the peer group (not merged)';
      if (problem) skippedScenarios.push({ scenario: sc.id, reason: problem });
      else keep.push(sc);
    } catch (e) {
      skippedScenarios.push({ scenario: sc.id, reason: (e as Error).message });
    } finally {
      await pool.close();
    }
  }
  for (const x of skippedScenarios) log(`scenario ${x.scenario} skipped: ${x.reason}`);
  scenarios = keep;
  watchScenarios = watchScenarios.filter((w) => targets.has(w.target));
}

let runtimeUsed: Runtime = RUNTIME;
/** What a fresh mvproxy needs (open-watches measurement). */
let mvSetup: { pki: Awaited<ReturnType<typeof makePKI>>; peers: Record<string, string>; runtime: Runtime } | undefined;
const profileDir = join(OUT_DIR, 'profiles');

/** A client of the scenario's target as its load tool speaks to it (TLS, HTTP/2 for h2load ones). */
function scenarioPool(sc: ScenarioInfo, port: number, connections: number): Pool {
  if (!sc.tls) return new Pool(`http://127.0.0.1:${port}`, { connections });
  return new Pool(`https://127.0.0.1:${port}`, { connections, allowH2: sc.tools?.includes('h2load') ?? false, connect: { rejectUnauthorized: false } });
}

/** Warms JIT, connection pools and caches: requests from this process (not measured). */
async function warm(sc: ScenarioInfo, n: number): Promise<void> {
  const t = targets.get(sc.target)!;
  const pool = scenarioPool(sc, t.port, 16);
  let left = n;
  const worker = async () => {
    while (left-- > 0) {
      const r = await pool.request({ path: sc.path, method: 'GET', headers: { accept: sc.accept } });
      await r.body.dump();
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  await pool.close();
}

function sumCpu(pids: number[]): number {
  return pids.reduce((s, p) => s + cpuSeconds(p), 0);
}
function sumRss(pids: number[]): number {
  return pids.reduce((s, p) => s + memory(p).rss, 0);
}

async function measure(sc: ScenarioInfo, tool: Tool, roundNo: number, durationS = DURATION): Promise<RunRecord> {
  const t = targets.get(sc.target)!;
  const pids = t.pids();
  const direct = sc.target === 'direct';
  if (direct && PINNING.server) repin(backend!.proc.pid, PINNING.server);
  await sleep(QUICK ? 100 : 250);
  const each0 = pids.map(cpuSeconds);
  const c0 = sumCpu(pids);
  const b0 = cpuSeconds(backend!.proc.pid);
  const s0 = cpuTimes();
  const l0 = childrenCpuSeconds();
  const w0 = performance.now();
  let res;
  try {
    res = await runLoad(tool, { url: `${sc.tls ? 'https' : 'http'}://127.0.0.1:${t.port}${sc.path}`, connections: CONNECTIONS, durationS, headers: { accept: sc.accept }, cpus: PINNING.client });
  } finally {
    if (direct && PINNING.client) repin(backend!.proc.pid, PINNING.client);
  }
  const cpuS = sumCpu(pids) - c0;
  const each = pids.map((p, i) => cpuSeconds(p) - each0[i]!);
  const bS = cpuSeconds(backend!.proc.pid) - b0;
  const busy = cpuBusy(s0, cpuTimes());
  const wall = (performance.now() - w0) / 1000;
  const loadgenCpuS = childrenCpuSeconds() - l0;
  const ours = cpuS + (direct ? 0 : bS) + loadgenCpuS;
  const others = Math.max(0, (busy.busy.reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0) * wall - ours) / wall);
  const rec: RunRecord = {
    scenario: sc.id,
    tool,
    round: roundNo,
    rps: round(res.rps, 1),
    p50: res.p50,
    p99: res.p99,
    requests: res.requests,
    errors: res.errors,
    non2xx: res.non2xx,
    cpuS: round(cpuS, 3),
    cpuUsPerReq: round(res.requests > 0 ? (cpuS / res.requests) * 1e6 : NaN, 1),
    cpuUsPerReqEach: each.map((c) => round(res.requests > 0 ? (c / res.requests) * 1e6 : NaN, 1)),
    rssMB: round(MB(sumRss(pids)), 1),
    busy: busy.busy.map((x) => round(x, 3)),
    steal: busy.steal.map((x) => round(x, 3)),
    loadgenCpuS: round(loadgenCpuS, 3),
    others: round(others, 3),
    backendCpuUsPerReq: round(res.requests > 0 ? (bS / res.requests) * 1e6 : NaN, 1),
  };
  log(
    `  [${roundNo < 0 ? 'settle' : roundNo + 1}] ${sc.id.padEnd(18)} ${tool.padEnd(10)} ${Math.round(rec.rps).toLocaleString('en-US').padStart(7)} req/s  p50 ${String(rec.p50).padStart(6)}  p99 ${String(rec.p99).padStart(7)} ms  ${String(rec.cpuUsPerReq).padStart(6)} µs/req  RSS ${rec.rssMB} MB  busy ${rec.busy.map((x) => Math.round(x * 100)).join('/')} %  others ${Math.round(rec.others * 100)} %${rec.errors + rec.non2xx ? `  ERRORS ${rec.errors}+${rec.non2xx}` : ''}`,
  );
  return rec;
}

function watchClient(port: number, n: number, extra: string[], cpus?: string, stdin: 'ignore' | 'pipe' = 'ignore'): Proc {
  return startProc('watch-client', process.execPath, ['--import', 'tsx', join(__dirname, 'watch-client.ts'), '--port', String(port), '--path', PATHS.watch, '--n', String(n), ...extra], { cpus, stdin });
}

function lastJSON(p: Proc): Record<string, unknown> {
  const lines = p.output().trim().split('\n').filter((l) => l.startsWith('{'));
  return JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
}

async function measureWatch(w: (typeof WATCH_TARGETS)[number], roundNo: number): Promise<WatchRecord> {
  const t = targets.get(w.target)!;
  const pids = t.pids();
  const direct = w.target === 'direct';
  if (direct && PINNING.server) repin(backend!.proc.pid, PINNING.server);
  await backend!.setWatchInterval(WATCH_INTERVAL);
  const c0 = sumCpu(pids);
  const p = watchClient(t.port, WATCHES, ['--warmup-ms', String(WATCH_WARMUP), '--measure-ms', String(WATCH_MEASURE)], PINNING.client);
  const killer = setTimeout(() => p.child.kill('SIGKILL'), WATCH_MEASURE + 60_000);
  let rssMB = NaN;
  const sampler = setTimeout(() => (rssMB = MB(sumRss(pids))), WATCH_WARMUP + WATCH_MEASURE / 2);
  await new Promise((r) => p.child.once('exit', r));
  clearTimeout(killer);
  clearTimeout(sampler);
  const cpuS = sumCpu(pids) - c0;
  await backend!.setWatchInterval(0);
  if (direct && PINNING.client) repin(backend!.proc.pid, PINNING.client);
  const r = lastJSON(p) as { established: number; eventsPerS: number; totalEvents: number; latencyMs: { p50: number; p99: number; max: number } };
  const rec: WatchRecord = {
    scenario: w.id,
    target: w.target,
    round: roundNo,
    watches: WATCHES,
    established: r.established,
    intervalMs: WATCH_INTERVAL,
    eventsPerS: r.eventsPerS,
    p50: r.latencyMs.p50,
    p99: r.latencyMs.p99,
    max: r.latencyMs.max,
    cpuUsPerEvent: round(r.totalEvents > 0 ? (cpuS / r.totalEvents) * 1e6 : NaN, 1),
    rssMB: round(rssMB, 1),
  };
  log(`  [${roundNo + 1}] ${w.id.padEnd(18)} ${rec.established}/${WATCHES} watches  ${rec.eventsPerS.toLocaleString('en-US').padStart(6)} events/s  p50 ${rec.p50}  p99 ${rec.p99} ms  ${rec.cpuUsPerEvent} µs/event  RSS ${rec.rssMB} MB`);
  await sleep(QUICK ? 200 : 500); // let the closed connections go
  return rec;
}

/**
 * 1,000 watches held open through mvproxy. `fresh`: a new mvproxy (same configuration) started for
 * this alone, so its RSS is the watches' plus a just-started daemon's; otherwise the long-running
 * one, whose heap also holds what the load rounds left behind.
 */
async function measureOpenWatches(target: string, fresh: boolean): Promise<OpenWatches | undefined> {
  let t = targets.get(target);
  if (!t) return undefined;
  let own: Mvproxy | undefined;
  if (fresh) {
    if (!mvSetup) return undefined;
    own = await startMvproxy({ name: target === 'uws' ? 'a' : 'c', frontend: target === 'uws' ? 'uws' : 'node', localPort: backend!.portA, peers: mvSetup.peers, pki: mvSetup.pki, runtime: mvSetup.runtime, cpus: PINNING.server, nodeFlags: PROXY_NODE_FLAGS });
    const proc = own.proc;
    t = { name: target, port: own.clientPort, pids: () => [proc.pid] };
    await sleep(1000);
  }
  try {
    return await openWatchesOn(t, target, `${target === 'uws' ? 'mvproxy, uWS front end' : 'mvproxy, node:http front end'}, ${fresh ? 'fresh process' : 'after the load rounds'}`);
  } finally {
    if (own) await own.proc.stop('SIGTERM', 10_000);
  }
}

async function openWatchesOn(t: Target, target: string, label: string): Promise<OpenWatches | undefined> {
  const pids = t.pids();
  const idle = MB(sumRss(pids));
  await backend!.setWatchInterval(1000);
  const p = watchClient(t.port, OPEN_WATCHES, ['--hold', '--connect-timeout-ms', '30000'], PINNING.client, 'pipe');
  const killer = setTimeout(() => p.child.kill('SIGKILL'), 120_000);
  try {
    await p.waitFor(/\{"established":\d+/, 90_000);
    await sleep(OPEN_HOLD);
    const mem = pids.reduce((s, pid) => {
      const m = memory(pid);
      return { rss: s.rss + m.rss, hwm: s.hwm + m.hwm };
    }, { rss: 0, hwm: 0 });
    p.child.stdin!.end();
    await new Promise((r) => p.child.once('exit', r));
    const r = lastJSON(p) as { established: number; eventsPerS: number; latencyMs: { p99: number } };
    const rec: OpenWatches = { target, label, watches: OPEN_WATCHES, established: r.established, idleRssMB: round(idle, 1), rssMB: round(MB(mem.rss), 1), hwmMB: round(MB(mem.hwm), 1), eventsPerS: r.eventsPerS, p99: r.latencyMs.p99 };
    log(`  open watches via ${label}: ${rec.established}/${OPEN_WATCHES} open, RSS ${rec.idleRssMB} → ${rec.rssMB} MB (peak ${rec.hwmMB}), ${rec.eventsPerS} events/s, p99 ${rec.p99} ms`);
    return rec;
  } finally {
    clearTimeout(killer);
    await backend!.setWatchInterval(0);
    await p.stop('SIGKILL');
    await sleep(QUICK ? 800 : 1500);
  }
}

async function runProfile(): Promise<void> {
  const sc = scenarios[0];
  if (!sc) throw new Error(`--profile ${PROFILE}: scenario not runnable (${skippedScenarios.map((s) => s.reason).join('; ')})`);
  const tool: Tool = WRK ? 'wrk' : 'autocannon';
  log(`profiling ${sc.id} with ${tool} for ${PROFILE_SECONDS} s (node --cpu-prof on the proxy processes)`);
  await warm(sc, 3000);
  const rec = await measure(sc, tool, 0, PROFILE_SECONDS);
  // Stop the proxies (and a profiled floor) gracefully: the profile is written when the process exits.
  await Promise.all(procs.filter((p) => p.name !== 'backend').map((p) => p.stop('SIGTERM', 30_000)));
  const { readdirSync } = await import('node:fs');
  const files = readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'));
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const summaries = files.map((f) => summarizeProfile(join(profileDir, f)));
  for (const s of summaries) log('\n' + printProfile(s));
  const out = join(OUT_DIR, `profile-${stamp}-${sc.id.replace('/', '-')}.json`);
  writeFileSync(out, JSON.stringify({ scenario: sc.id, tool, run: rec, profiles: summaries }, null, 2) + '\n');
  log(`\nwrote ${relative(process.cwd(), out)} (raw .cpuprofile files in ${relative(process.cwd(), profileDir)}, git-ignored)`);
}

async function main(): Promise<void> {
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const loadStart = os.loadavg();
  mkdirSync(OUT_DIR, { recursive: true });
  if (PROFILE) {
    rmSync(profileDir, { recursive: true, force: true });
    mkdirSync(profileDir, { recursive: true });
  }
  const pinNote = PIN ? `system under test (each proxy; the backend in "direct") on CPU ${PINNING.server}, load generators and the backend on CPU ${PINNING.client} (taskset)` : !TASKSET ? 'off (taskset not installed)' : os.cpus().length < 2 ? 'off (one CPU)' : 'off (--no-pin)';
  if (!PROFILE) log(`mvproxy bench (${MODE}): ${ROUNDS} round(s) × ${DURATION} s, ${CONNECTIONS} connections, tools ${TOOLS.join('+')}; pinning ${pinNote}`);
  if (!WRK) notes.push('wrk is not installed (apt-get install -y wrk): autocannon only, whose one thread caps it around 20-50k req/s here');

  await setup();
  if (PROFILE) {
    await runProfile();
    return;
  }

  const warmN = SMOKE ? 50 : QUICK ? 500 : 2000;
  log(`warm-up: ${warmN} requests per scenario (LIST and discovery: a fifth)`);
  for (const sc of scenarios) await warm(sc, sc.group === 'get' ? warmN : Math.ceil(warmN / 5));
  if (SETTLE_S > 0) {
    log(`settling: each scenario's tool for ${SETTLE_S} s, not measured`);
    for (const sc of scenarios) for (const tool of toolsOf(sc)) await measure(sc, tool, -1, SETTLE_S).catch((e: Error) => log(`  settling ${sc.id} with ${tool} failed: ${e.message.slice(0, 200)}`));
  }

  const runs: RunRecord[] = [];
  const watchRuns: WatchRecord[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    log(`round ${r + 1}/${ROUNDS}`);
    const order = r % 2 === 0 ? scenarios : [...scenarios].reverse();
    for (const sc of order) {
      const tools = r % 2 === 0 ? toolsOf(sc) : [...toolsOf(sc)].reverse();
      for (const tool of tools) {
        try {
          runs.push(await measure(sc, tool, r));
        } catch (e) {
          log(`  [${r + 1}] ${sc.id} ${tool} FAILED: ${(e as Error).message.slice(0, 300)}`);
          notes.push(`round ${r + 1}: ${sc.id} with ${tool} failed: ${(e as Error).message.slice(0, 200)}`);
        }
      }
    }
    const wOrder = r % 2 === 0 ? watchScenarios : [...watchScenarios].reverse();
    for (const w of wOrder) {
      try {
        watchRuns.push(await measureWatch(w, r));
      } catch (e) {
        log(`  [${r + 1}] ${w.id} FAILED: ${(e as Error).message.slice(0, 300)}`);
        notes.push(`round ${r + 1}: ${w.id} failed: ${(e as Error).message.slice(0, 200)}`);
      }
    }
  }
  const openWatches: OpenWatches[] = [];
  // Quick runs: the fresh-process measurement only (the one the target is about), to stay < 3 min.
  for (const fresh of QUICK ? [true] : [true, false]) {
    for (const t of openTargets) {
      try {
        const o = await measureOpenWatches(t, fresh);
        if (o) openWatches.push(o);
      } catch (e) {
        log(`  open watches via ${t}${fresh ? ' (fresh)' : ''} FAILED: ${(e as Error).message.slice(0, 300)}`);
        notes.push(`open watches via ${t}${fresh ? ' (fresh process)' : ''} failed: ${(e as Error).message.slice(0, 200)}`);
      }
    }
  }

  const toolsUsed = [...TOOLS, ...new Set(scenarios.flatMap(toolsOf).filter((t) => !TOOLS.includes(t)))];
  const summary = summarize(scenarios, runs, toolsUsed, SERVER_CPU, CLIENT_CPU);
  const watchSummary = summarizeWatches(watchScenarios, watchRuns);
  const saturated = summary.filter((s) => PIN && s.busyClient >= 0.95).map((s) => `${s.scenario} (${s.tool})`);
  if (saturated.length) notes.push(`the load-generator CPU was ≥ 95 % busy (median) in ${saturated.join(', ')}: there the client side (tool + backend${summary.some((s) => s.others > 0.2) ? ' + other processes' : ''}) may have capped req/s`);
  const othersAll = median(runs.map((r) => r.others));
  if (Number.isFinite(othersAll)) notes.push(`processes outside the benchmark used a median ${Math.round(othersAll * 100)} % of a core during the runs (max ${Math.round(Math.max(...runs.map((r) => r.others)) * 100)} %): ${othersAll > 0.2 ? 'a noisy machine; compare ratios and CPU per request more than absolute req/s' : 'a quiet machine'}`);
  const backendCost = median(runs.filter((r) => r.scenario === 'direct/get').map((r) => r.backendCpuUsPerReq));
  if (Number.isFinite(backendCost)) notes.push(`the backend costs ~${backendCost.toFixed(0)} µs CPU per 2 KiB GET (direct/get), i.e. it alone could serve ~${Math.round(1e6 / backendCost).toLocaleString('en-US')} req/s on one core`);
  const finishedAt = new Date().toISOString();
  const result: BenchResult = {
    schema: 'mvproxy-bench/1',
    mode: MODE,
    startedAt,
    finishedAt,
    elapsedS: round((performance.now() - t0) / 1000, 1),
    machine: { node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown', kernel: os.release(), loadavgStart: loadStart.map((x) => round(x, 2)), loadavgEnd: os.loadavg().map((x) => round(x, 2)) },
    settings: {
      rounds: ROUNDS,
      durationS: DURATION,
      settleS: SETTLE_S,
      connections: CONNECTIONS,
      tools: toolsUsed,
      toolVersions: { autocannon: '9.0.0', ...(WRK ? { wrk: wrkVersion() ?? 'unknown' } : {}) },
      pinning: { server: PINNING.server ?? null, client: PINNING.client ?? null, note: pinNote },
      runtime: (runtimeUsed === 'dist' ? 'compiled (tsc → bench/.build, as dist/ in the image), NODE_ENV=production' : 'tsx (node --import tsx src/main.ts)') + (PROXY_NODE_FLAGS.length ? `, node flags ${PROXY_NODE_FLAGS.join(' ')}` : ''),
      watch: { watches: WATCHES, intervalMs: WATCH_INTERVAL, measureMs: WATCH_MEASURE },
      openWatches: OPEN_WATCHES,
    },
    targets: targetInfo.map((t) => ({ ...t, idleRssMB: t.idleRssMB === undefined ? undefined : round(t.idleRssMB, 1) })),
    scenarios,
    skippedScenarios,
    runs,
    summary: summary.map((s) => ({ ...s, rps: round(s.rps, 1), xDirect: round(s.xDirect, 3), xNginx: round(s.xNginx, 3), busyServer: round(s.busyServer, 3), busyClient: round(s.busyClient, 3) })),
    watchRuns,
    watchSummary,
    openWatches,
    checks: [],
    notes,
  };
  result.checks = checks(result, TOOLS);

  const base = startedAt.replace(/[:.]/g, '-');
  const jsonFile = join(OUT_DIR, `${base}.json`);
  writeFileSync(jsonFile, JSON.stringify(result, null, 2) + '\n');
  const svgFile = join(OUT_DIR, `${base}.svg`);
  if (summary.length) writeFileSync(svgFile, svgChart(result));
  const md = markdown(result, summary.length ? relative(__dirname, svgFile) : undefined, relative(join(__dirname, '..'), jsonFile));
  log('\n' + md);
  log(`wrote ${relative(process.cwd(), jsonFile)}${summary.length ? ` and ${relative(process.cwd(), svgFile)}` : ''}`);
  if (WRITE_README) {
    updateReadme(join(__dirname, 'README.md'), md);
    log('updated the results block of bench/README.md');
  }
}

const watchdog = setTimeout(() => {
  process.stderr.write(`bench: time limit of ${TIME_LIMIT_MS / 1000} s reached; stopping\n`);
  void cleanup().finally(() => process.exit(1));
}, TIME_LIMIT_MS);

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    process.stderr.write(`bench: ${sig}, stopping\n`);
    void cleanup().finally(() => process.exit(130));
  });
}

// The exit code comes from main(); a failing cleanup() is left to Node's unhandled-rejection exit.
void main()
  .then(
    () => 0,
    (e: unknown) => {
      process.stderr.write(`bench: ${(e as Error).stack ?? String(e)}\n`);
      return 1;
    },
  )
  .then(async (code) => {
    clearTimeout(watchdog);
    await cleanup();
    process.exit(code);
  });
