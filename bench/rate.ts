// The realistic-rate benchmark (issue 28 item 6): a real kube-apiserver v1.37.2 (+ etcd, the
// binaries of test/kube) driven by client-go at fixed rates over TLS, not at saturation. For each
// rate, verb and path it reports the latency client-go sees (p50/p99, open loop), the latency added
// to the direct path, and the CPU per request of the proxy and of the apiserver, each net of its own
// idle CPU (measured first).
//
//   npm run bench:rate                          # 500 and 1,000/s, GET and LIST, 20 s each (~8 min)
//   npm run bench:rate -- --rates 200 --duration 5 --verbs get      # a short check
//
// Options: --rates 500,1000 --verbs get,list --paths direct,uws,node,nginx[,nginx-h1,floor] --duration S
//   --warmup S --idle S --objects N (LIST size: N ConfigMaps of 2 KiB) --audit (the suite's audit log
//   on: Metadata level, blocking) --time-limit-s S --out-dir DIR
//   --proxy-node-flags "--trace-gc"   node flags for mvproxy; with --trace-gc each step also reports
//   mvproxy's GC pauses in its window (to tell a stall of the proxy from a per-connection delay)
//   --mvproxy-build DIR   run another compiled mvproxy (DIR/src/main.js, e.g. an older commit built
//   with tsc -p tsconfig.build.json --outDir DIR) instead of compiling src/ into bench/.build
//   --sched-trace   samples the proxy's main thread run-queue wait every 2 ms and reports which share
//   of each stall (a run of slow requests) it spent waiting for a CPU, against its share overall
//
// Paths (all TLS, the client authenticated by its certificate):
//   direct    client-go → kube-apiserver (HTTP/2)
//   uws       client-go → mvproxy, uWS front end (HTTP/1.1: uWS offers no h2) → apiserver
//   node      client-go → mvproxy, node front end (HTTP/2) → apiserver
//   nginx     client-go → nginx (TLS, HTTP/2, verifies the client certificate, forwards its CN as
//             X-Remote-User) → TLS with the front-proxy client certificate, keep-alive → apiserver:
//             the anchor, doing what mvproxy does for the local route
//   nginx-h1  the same nginx without h2 towards the client (HTTP/1.1, as the uWS path)
//   floor     the floor of the uWS path: uWS + a plain HTTP/1.1 client (bench/floor-proxy.ts), the
//             certificate's CN and O as X-Remote-User/-Group, TLS with the front-proxy certificate
//   floor-node  the floor of the node path: node:http2's compatibility API (h2 by ALPN, as mvproxy's
//             node front end) + the same plain client and identity
// The load generator is test/kube/go/cmd/rateclient (built by scripts/kube-build.sh). Writes
// bench/results/rate-<timestamp>.json and prints a table. Bounded: every client run is killed 30 s
// past its schedule, the whole run stops past --time-limit-s.

import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, relative } from 'node:path';
import { childPids, CLK_TCK, cpuSeconds, cpuTimes, round, sleep, startProc, which, type Proc } from './lib';
import { BUILD_DIR, IMAGE_ENV, buildDist, ROOT } from './targets';
import { startKubeFloor } from './kube-floor';
import { startControlPlane, kubectlAs, NEW, BIN_DIR, type KubeControlPlane } from '../test/kube/support/control-plane';
import { startMvproxies, type Member } from '../test/kube/support/mvproxy';
import { freePort, startProcess, waitFor, type Proc as KubeProc } from '../test/kube/support/processes';
import { has, list, num, str } from './args';

// ---------------------------------------------------------------- options


const RATES = list('--rates', '500,1000').map(Number);
const VERBS = list('--verbs', 'get,list') as ('get' | 'list')[];
const PATHS = list('--paths', 'direct,uws,node,nginx');
const DURATION = num('--duration', 20);
const WARMUP = num('--warmup', 3);
const IDLE = num('--idle', 5);
const OBJECTS = num('--objects', 50);
const AUDIT = has('--audit');
const TIME_LIMIT_MS = num('--time-limit-s', 900) * 1000;
const OUT_DIR = str('--out-dir') ?? join(__dirname, 'results');
const NS = 'rate';
const PROXY_NODE_FLAGS = (str('--proxy-node-flags') ?? '').split(' ').filter(Boolean);
const TRACE_GC = PROXY_NODE_FLAGS.includes('--trace-gc');
const SCHED_TRACE = has('--sched-trace');
const MVPROXY_BUILD = str('--mvproxy-build');

const log = (s: string) => process.stdout.write(s + '\n');

// ---------------------------------------------------------------- processes and CPU

interface Measured {
  /** Label in the table and the JSON. */
  name: string;
  pids(): number[];
  /** CPU seconds per second when idle (measured before the steps). */
  idle: number;
}

const cpuOf = (m: Measured) => m.pids().reduce((s, p) => s + cpuSeconds(p), 0);

/**
 * Seconds a process's threads spent runnable but waiting for a CPU (/proc/<pid>/task/<tid>/schedstat,
 * second field, ns): how much of a stall is the machine's CPU contention rather than the process.
 */
function runDelayS(pid: number): number {
  let ns = 0;
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[1]);
  } catch {
    /* gone */
  }
  return ns / 1e9;
}

/** /proc/pressure/cpu "some" total, seconds: time in which at least one runnable task waited for a CPU. */
function cpuPressureS(): number {
  try {
    return Number(/^some .*total=(\d+)/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'))?.[1] ?? NaN) / 1e6;
  } catch {
    return NaN;
  }
}

/** The pid of the process whose command line contains every needle (etcd: its data dir). */
function findPid(needles: string[]): number | undefined {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      if (needles.every((n) => cmd.includes(n))) return Number(d);
    } catch {
      /* gone */
    }
  }
  return undefined;
}

// ---------------------------------------------------------------- nginx, TLS on both sides

/**
 * nginx as an authenticating proxy in front of the apiserver, as mvproxy is: TLS with the
 * apiserver's serving certificate, client certificates verified against the cluster CA, the CN and O
 * forwarded as X-Remote-User / X-Remote-Group (any sent by the client replaced), upstream TLS with
 * the front-proxy client certificate, verified, sessions reused, keep-alive. One worker (as the
 * saturation bench's nginx). `h1Port`: a second listener without h2.
 */
async function startNginx(plane: KubeControlPlane, apiPort: number): Promise<{ proc: KubeProc; port: number; h1Port: number } | { skipped: string }> {
  const bin = which('nginx');
  if (!bin) return { skipped: 'nginx is not installed (apt-get install -y nginx)' };
  const d = join(plane.dir, 'nginx');
  mkdirSync(join(d, 'tmp'), { recursive: true });
  const [port, h1Port] = [await freePort(), await freePort()];
  const pki = plane.pki;
  const server = (p: number, h2: boolean) => `
  server {
    listen 127.0.0.1:${p} ssl${h2 ? ' http2' : ''};
    ssl_certificate ${pki.apiserverCert};
    ssl_certificate_key ${pki.apiserverKey};
    ssl_client_certificate ${pki.caFile};
    ssl_verify_client on;
    location / {
      proxy_pass https://apiserver;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header X-Remote-User $rate_user;
      proxy_set_header X-Remote-Group $rate_group;
      proxy_ssl_certificate ${pki.proxyClientCert};
      proxy_ssl_certificate_key ${pki.proxyClientKey};
      proxy_ssl_trusted_certificate ${pki.caFile};
      proxy_ssl_verify on;
      proxy_ssl_name kubernetes;
      proxy_ssl_session_reuse on;
      proxy_buffer_size 16k;
      proxy_buffers 16 16k;
      proxy_busy_buffers_size 32k;
      proxy_read_timeout 120s;
    }
  }`;
  const conf = `# generated by bench/rate.ts
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes 1;
daemon off;
master_process on;
pid ${d}/nginx.pid;
error_log ${d}/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${d}/tmp/body;
  proxy_temp_path ${d}/tmp/proxy;
  fastcgi_temp_path ${d}/tmp/fastcgi;
  uwsgi_temp_path ${d}/tmp/uwsgi;
  scgi_temp_path ${d}/tmp/scgi;
  keepalive_requests 1000000;
  map $ssl_client_s_dn $rate_user { "~(^|,)CN=(?<cn>[^,]+)" $cn; default ""; }
  map $ssl_client_s_dn $rate_group { "~(^|,)O=(?<o>[^,]+)" $o; default ""; }
  upstream apiserver {
    server 127.0.0.1:${apiPort};
    keepalive 64;
    keepalive_requests 1000000;
  }
${server(port, true)}
${server(h1Port, false)}
}
`;
  writeFileSync(join(d, 'nginx.conf'), conf);
  const proc = startProcess('nginx', bin, ['-p', d, '-e', join(d, 'error.log'), '-c', join(d, 'nginx.conf')], plane.dir);
  await waitFor(() => `nginx listening on ${port}`, async () => {
    const net = await import('node:net');
    return new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
  }, 10_000, proc);
  return { proc, port, h1Port };
}


// ---------------------------------------------------------------- the client

interface ClientResult {
  ok: number;
  errors: number;
  firstError: string;
  dropped: number;
  achieved: number;
  items: number;
  latencyMs: { p50: number; p90: number; p99: number; p999: number; max: number };
  serviceMs: { p50: number; p90: number; p99: number; p999: number; max: number };
  schedulerLateMaxMs: number;
  histogramMs: number[];
  protocols: string[];
  /** Connections dialed during the measured window (0: all requests on warm connections). */
  newConnections: number;
  /** Requests slower than 20 ms, in due order: t = due time in ms since the window began. */
  slow: { t: number; ms: number; serviceMs: number; conn: string }[];
}

/**
 * The slow requests grouped into runs of requests due one after another (≤ 3 intervals apart): a
 * stall of a server (GC, a blocked loop) delays every request due during it, whatever its
 * connection; a delay of one connection's bytes (Nagle and delayed ACK: 40 ms on Linux) one request.
 */
function slowRuns(slow: ClientResult['slow'], rate: number): { slow: number; runs: number; single: number; longestRun: number; worstMs: number } {
  const gap = (3 * 1000) / rate;
  let runs = 0;
  let single = 0;
  let longest = 0;
  let len = 0;
  for (let i = 0; i < slow.length; i++) {
    if (i > 0 && slow[i]!.t - slow[i - 1]!.t <= gap) len++;
    else {
      if (len === 1) single++;
      if (len > 0) runs++;
      len = 1;
    }
    longest = Math.max(longest, len);
  }
  if (len === 1) single++;
  if (len > 0) runs++;
  return { slow: slow.length, runs, single, longestRun: longest, worstMs: slow.reduce((m, x) => Math.max(m, x.ms), 0) };
}

/** Run-queue wait of one thread (s) sampled over time (performance.now() ms). */
type WaitSeries = [number, number][];

function waitAt(series: WaitSeries, t: number): number {
  let i = 0;
  while (i < series.length - 1 && series[i + 1]![0] <= t) i++;
  const [t0, w0] = series[i]!;
  const next = series[i + 1];
  if (!next || t <= t0) return w0;
  return w0 + ((next[1] - w0) * (t - t0)) / (next[0] - t0);
}

/**
 * For the slowest request of each run of slow ones (the stall's whole length: it was due when the
 * stall began), the share of [due, due + latency] the proxy's event loop spent runnable but not
 * running; against its share over the whole window. Near 1 in stalls and low overall: the stalls are
 * the CPU given to other processes, not the proxy's own work or a network delay.
 */
function stallShares(slow: ClientResult['slow'], rate: number, series: WaitSeries, windowStart: number, windowEnd: number): { stalls: number; medianShareInStalls: number; shareOverall: number } {
  const gap = (3 * 1000) / rate;
  const shares: number[] = [];
  let worst: ClientResult['slow'][number] | undefined;
  const close = () => {
    if (!worst) return;
    const a = windowStart + worst.t;
    shares.push((waitAt(series, a + worst.ms) - waitAt(series, a)) * 1000 / worst.ms);
  };
  for (let i = 0; i < slow.length; i++) {
    if (i > 0 && slow[i]!.t - slow[i - 1]!.t <= gap) {
      if (slow[i]!.ms > worst!.ms) worst = slow[i];
    } else {
      close();
      worst = slow[i];
    }
  }
  close();
  shares.sort((x, y) => x - y);
  const overall = ((waitAt(series, windowEnd) - waitAt(series, windowStart)) * 1000) / (windowEnd - windowStart);
  return { stalls: shares.length, medianShareInStalls: round(shares.length ? shares[shares.length >> 1]! : NaN, 2), shareOverall: round(overall, 3) };
}

/** GC pauses (main thread, ms) in --trace-gc lines: "... ms: Scavenge ... MB, 1.2 / 0.0 ms ...". */
function gcPauses(text: string): { count: number; maxMs: number; totalMs: number; over10ms: number } {
  const re = /ms: (?:Scavenge|Mark-Compact|Mark-Sweep|Minor Mark-Sweep|Mark-sweep)[^\n]*?, ([\d.]+) \/ [\d.]+ ms/g;
  let count = 0;
  let maxMs = 0;
  let totalMs = 0;
  let over10ms = 0;
  for (const m of text.matchAll(re)) {
    const ms = Number(m[1]);
    count++;
    totalMs += ms;
    maxMs = Math.max(maxMs, ms);
    if (ms > 10) over10ms++;
  }
  return { count, maxMs: round(maxMs, 2), totalMs: round(totalMs, 1), over10ms };
}

const RATECLIENT = join(BIN_DIR, 'rateclient');

function lastJSON(p: Proc, phase: string): Record<string, unknown> | undefined {
  const lines = p.output().split('\n').filter((l) => l.startsWith('{') && l.includes(`"phase":"${phase}"`));
  return lines.length ? (JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>) : undefined;
}

/** Runs the client once; `window` is called at the start and end of the measured window. */
async function runClient(kubeconfig: string, server: string, args: string[], window: { start(clientPid: number): void; end(clientPid: number): void }): Promise<ClientResult> {
  const p = startProc('rateclient', RATECLIENT, [`--kubeconfig=${kubeconfig}`, `--server=${server}`, `--namespace=${NS}`, ...args]);
  const killer = setTimeout(() => p.child.kill('SIGKILL'), (WARMUP + DURATION + 30) * 1000);
  try {
    await p.waitFor(/"phase":"(measure|fatal)"/, (WARMUP + 15) * 1000);
    window.start(p.pid);
    await p.waitFor(/"phase":"(window-end|fatal)"/, (DURATION + 15) * 1000);
    window.end(p.pid);
    await new Promise((r) => (p.exited ? r(undefined) : p.child.once('exit', r)));
  } finally {
    clearTimeout(killer);
  }
  const fatal = lastJSON(p, 'fatal');
  if (fatal) throw new Error(`rateclient: ${String(fatal.error)}`);
  const done = lastJSON(p, 'done');
  if (!done) throw new Error(`rateclient printed no result: ${p.output().slice(-500)}`);
  return done as unknown as ClientResult;
}

// ---------------------------------------------------------------- main

interface Path {
  id: string;
  label: string;
  url: string;
  /** The proxy's processes (none for direct). */
  proxy?: Measured;
  /** mvproxy's log (its stdout: --trace-gc lines). */
  log?: () => string;
}

interface Step {
  path: string;
  verb: 'get' | 'list';
  rate: number;
  wallS: number;
  client: ClientResult;
  /** CPU µs per successful request, net of idle, per process. */
  cpuUsPerReq: Record<string, number>;
  addedP50Ms?: number;
  addedP99Ms?: number;
  slowRuns: ReturnType<typeof slowRuns>;
  /**
   * The machine during the step: CPU pressure (ms per s in which some task waited for a CPU), steal
   * (%), CPU of processes outside the benchmark (cores), and each measured process's run-queue wait (ms).
   */
  machine: { cpuPressureMsPerS: number; stealPct: number; othersCores: number; clientCpuUsPerReq: number; runQueueWaitMs: Record<string, number> };
  /** With --sched-trace: the proxy's run-queue wait in the stalls and overall. */
  proxyStalls?: ReturnType<typeof stallShares>;
  /** With --proxy-node-flags --trace-gc: mvproxy's GC pauses during the step. */
  proxyGc?: ReturnType<typeof gcPauses>;
}

const cleanups: (() => Promise<unknown>)[] = [];
async function cleanup(): Promise<void> {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  cleanups.length = 0;
}

async function main(): Promise<void> {
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const loadStart = os.loadavg();
  mkdirSync(OUT_DIR, { recursive: true });
  log(`bench:rate: rates ${RATES.join(', ')}/s, verbs ${VERBS.join(', ')}, paths ${PATHS.join(', ')}; ${WARMUP} s warm-up + ${DURATION} s per step; audit log ${AUDIT ? 'on' : 'off'}`);

  // The binaries: kube-build builds what is missing or changed (rateclient included), quietly.
  const kb = spawnSync('bash', [join(ROOT, 'scripts', 'kube-build.sh'), BIN_DIR], { encoding: 'utf8', timeout: 1_800_000 });
  if (kb.status !== 0) throw new Error(`scripts/kube-build.sh failed:\n${(kb.stdout + kb.stderr).slice(-2000)}`);
  const dist = PATHS.some((p) => p === 'uws' || p === 'node') && !MVPROXY_BUILD ? buildDist() : undefined;
  if (dist) throw new Error(`compiling src/ failed: ${dist}`);

  // One kube-apiserver v1.37.2 serving what the release serves; the suite's audit log off unless
  // --audit (kubeadm turns none on; at Metadata level, blocking, it costs the apiserver a file write
  // per request).
  const plane = await startControlPlane([{ name: 'kube', version: NEW, releaseDefaults: true, args: AUDIT ? [] : ['--audit-log-path='] }]);
  cleanups.push(() => plane.stop());
  const api = plane.apiservers[0]!;
  log(`kube-apiserver ${api.version}: pid ${api.proc.child.pid}, ${api.url}`);

  // The client: an ordinary user (not system:masters, which priority and fairness exempts), allowed
  // to read ConfigMaps by RBAC; the same identity on every path.
  const user = await plane.pki.user('rate-client', ['rate-readers']);
  const admin = plane.kubeconfig('admin', { cert: plane.admin });
  await kubectlAs(admin, api.url, ['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'rate-reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }] },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'rate-reader' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'rate-reader' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'rate-client' }] },
      ],
    }),
  });
  const kubeconfig = plane.kubeconfig('rate-client', { cert: user });
  const setup = spawnSync(RATECLIENT, [`--kubeconfig=${admin}`, `--server=${api.url}`, '--verb=setup', `--namespace=${NS}`, `--objects=${OBJECTS}`, '--size=2048'], { encoding: 'utf8', timeout: 120_000 });
  if (setup.status !== 0) throw new Error(`setup failed: ${setup.stdout}${setup.stderr}`);

  const apiserver: Measured = { name: 'apiserver', pids: () => [api.proc.child.pid!], idle: 0 };
  const etcdPid = findPid(['etcd', `--data-dir=${join(plane.dir, 'etcd')}`]);
  const etcd: Measured = { name: 'etcd', pids: () => (etcdPid ? [etcdPid] : []), idle: 0 };
  const paths: Path[] = [];
  const skipped: { path: string; reason: string }[] = [];
  for (const id of PATHS) {
    if (id === 'direct') paths.push({ id, label: 'direct (client-go → apiserver)', url: api.url });
    else if (id === 'uws' || id === 'node') {
      // As in the image: the compiled build, NODE_ENV=production, the Dockerfile's NODE_OPTIONS;
      // discovery refreshed at the default 30 s (the suite's 2 s would add its own load).
      const members: Member[] = await startMvproxies(plane, { frontend: id, extraArgs: ['--discovery-refresh-interval=30s'], command: { entry: [...PROXY_NODE_FLAGS, join(MVPROXY_BUILD ?? BUILD_DIR, 'src', 'main.js')], env: IMAGE_ENV } });
      const m = members[0]!;
      cleanups.push(() => m.stop());
      paths.push({ id, label: `mvproxy, ${id === 'uws' ? 'uWS' : 'node'} front end`, url: m.url, proxy: { name: `mvproxy-${id}`, pids: () => [m.proc.child.pid!], idle: 0 }, log: () => m.proc.log() });
      log(`mvproxy (${id}): pid ${m.proc.child.pid}, ${m.url}`);
    } else if (id === 'nginx' || id === 'nginx-h1') {
      let n = nginx;
      if (!n) {
        const r = await startNginx(plane, api.port);
        if ('skipped' in r) {
          skipped.push({ path: id, reason: r.skipped });
          continue;
        }
        n = nginx = r;
        cleanups.push(() => r.proc.stop(5000));
        log(`nginx: pid ${r.proc.child.pid}, :${r.port} (h2) :${r.h1Port} (HTTP/1.1)`);
      }
      const master = n.proc.child.pid!;
      paths.push({ id, label: id === 'nginx' ? 'nginx, TLS both sides (h2 to the client)' : 'nginx, TLS both sides (HTTP/1.1 to the client)', url: `https://127.0.0.1:${id === 'nginx' ? n.port : n.h1Port}`, proxy: { name: id, pids: () => [master, ...childPids(master)], idle: 0 } });
    } else if (id === 'floor' || id === 'floor-node') {
      const f = await startKubeFloor(plane, `https://127.0.0.1:${api.port}`, id === 'floor' ? 'uws' : 'node', 'floor', { ...IMAGE_ENV });
      cleanups.push(() => f.proc.stop(5000));
      const label = id === 'floor' ? 'floor: uWS + a plain HTTP/1.1 client, TLS both sides (bench/floor-proxy.ts)' : 'floor-node: node:http2 (h2 by ALPN) + a plain HTTP/1.1 client, TLS both sides (bench/floor-proxy.ts)';
      paths.push({ id, label, url: f.url, proxy: { name: id, pids: () => [f.proc.child.pid!], idle: 0 } });
      log(`${id}: pid ${f.proc.child.pid}, ${f.url}`);
    } else skipped.push({ path: id, reason: 'unknown path' });
  }

  // Idle CPU of every measured process, after a short settle.
  const measured = [apiserver, etcd, ...paths.flatMap((p) => (p.proxy ? [p.proxy] : []))];
  await sleep(2000);
  const i0 = measured.map(cpuOf);
  const it0 = performance.now();
  await sleep(IDLE * 1000);
  const idleS = (performance.now() - it0) / 1000;
  measured.forEach((m, i) => (m.idle = (cpuOf(m) - i0[i]!) / idleS));
  log(`idle CPU (ms per s): ${measured.map((m) => `${m.name} ${(m.idle * 1000).toFixed(1)}`).join(', ')}`);

  const steps: Step[] = [];
  let n = 0;
  for (const rate of RATES) {
    for (const verb of VERBS) {
      const order = n++ % 2 === 0 ? paths : [...paths].reverse();
      for (const path of order) {
        const procs = [apiserver, etcd, ...(path.proxy ? [path.proxy] : [])];
        let c0: number[] = [];
        let w0 = 0;
        let c1: number[] = [];
        let w1 = 0;
        // The machine: per-CPU times, CPU pressure, run-queue waits, the client's and this process's CPU.
        let m0 = { t: cpuTimes(), psi: 0, waits: [] as number[], client: 0, self: 0 };
        let m1 = m0;
        // --sched-trace: the proxy's main thread (tid = pid), every 2 ms.
        const series: WaitSeries = [];
        const mainTid = path.proxy?.pids()[path.id.startsWith('nginx') ? 1 : 0];
        const readWait = () => {
          try {
            series.push([performance.now(), Number(readFileSync(`/proc/${mainTid}/task/${mainTid}/schedstat`, 'utf8').split(' ')[1]) / 1e9]);
          } catch {
            /* gone */
          }
        };
        const sampler = SCHED_TRACE && mainTid ? setInterval(readWait, 2) : undefined;
        const sample = (clientPid: number) => ({ t: cpuTimes(), psi: cpuPressureS(), waits: procs.map((m) => m.pids().reduce((a, p) => a + runDelayS(p), 0)), client: cpuSeconds(clientPid), self: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6 });
        let client: ClientResult;
        let logAt = 0;
        let logEnd = 0;
        try {
          client = await runClient(kubeconfig, path.url, [`--verb=${verb}`, `--rate=${rate}`, `--warmup=${WARMUP}s`, `--duration=${DURATION}s`, '--max-outstanding=1000'], {
            start: (pid) => {
              m0 = sample(pid);
              c0 = procs.map(cpuOf);
              w0 = performance.now();
              if (TRACE_GC) logAt = path.log?.().length ?? 0;
            },
            end: (pid) => {
              c1 = procs.map(cpuOf);
              w1 = performance.now();
              m1 = sample(pid);
              if (TRACE_GC) logEnd = path.log?.().length ?? 0;
            },
          });
        } catch (e) {
          clearInterval(sampler);
          log(`  ${path.id} ${verb} ${rate}/s FAILED: ${(e as Error).message.slice(0, 300)}`);
          skipped.push({ path: `${path.id} ${verb} ${rate}/s`, reason: (e as Error).message.slice(0, 300) });
          continue;
        }
        const wallS = (w1 - w0) / 1000;
        const cpuUsPerReq: Record<string, number> = {};
        procs.forEach((m, i) => (cpuUsPerReq[m.name] = round(client.ok > 0 ? ((c1[i]! - c0[i]! - m.idle * wallS) / client.ok) * 1e6 : NaN, 1)));
        const busyS = m1.t.reduce((a, c, i) => a + (c.busy - (m0.t[i]?.busy ?? c.busy)), 0) / CLK_TCK;
        const stealJ = m1.t.reduce((a, c, i) => a + (c.steal - (m0.t[i]?.steal ?? c.steal)), 0);
        const totalJ = m1.t.reduce((a, c, i) => a + (c.total - (m0.t[i]?.total ?? c.total)), 0);
        const oursS = procs.reduce((a, _, i) => a + c1[i]! - c0[i]!, 0) + (m1.client - m0.client) + (m1.self - m0.self);
        const machine: Step['machine'] = {
          cpuPressureMsPerS: round(((m1.psi - m0.psi) / wallS) * 1000, 1),
          stealPct: round(totalJ > 0 ? (stealJ / totalJ) * 100 : NaN, 1),
          othersCores: round(Math.max(0, busyS - oursS) / wallS, 2),
          clientCpuUsPerReq: round(client.ok > 0 ? ((m1.client - m0.client) / client.ok) * 1e6 : NaN, 1),
          runQueueWaitMs: Object.fromEntries(procs.map((m, i) => [m.name, round((m1.waits[i]! - m0.waits[i]!) * 1000, 1)])),
        };
        const step: Step = { path: path.id, verb, rate, wallS: round(wallS, 2), client, cpuUsPerReq, slowRuns: slowRuns(client.slow, rate), machine };
        if (TRACE_GC && path.log) step.proxyGc = gcPauses(path.log().slice(logAt, logEnd));
        if (sampler) {
          clearInterval(sampler);
          if (series.length > 1) step.proxyStalls = stallShares(client.slow, rate, series, w0, w1);
        }
        steps.push(step);
        log(`  ${path.id.padEnd(8)} ${verb.padEnd(4)} ${String(rate).padStart(5)}/s  achieved ${client.achieved.toFixed(0).padStart(5)}/s  p50 ${client.latencyMs.p50.toFixed(2).padStart(7)}  p99 ${client.latencyMs.p99.toFixed(2).padStart(7)}  max ${client.latencyMs.max.toFixed(1).padStart(7)} ms  ${Object.entries(cpuUsPerReq).map(([k, v]) => `${k} ${v} µs`).join(', ')}  ${client.protocols.join('+')} ${client.newConnections} new conns  slow>20ms ${step.slowRuns.slow} (${step.slowRuns.runs} runs, ${step.slowRuns.single} single, longest ${step.slowRuns.longestRun})${step.proxyGc ? `  GC ${step.proxyGc.count} pauses, max ${step.proxyGc.maxMs} ms, ${step.proxyGc.over10ms} > 10 ms` : ''}${step.proxyStalls ? `  proxy waiting for a CPU: ${step.proxyStalls.medianShareInStalls} of each stall (median of ${step.proxyStalls.stalls}), ${step.proxyStalls.shareOverall} overall` : ''}  CPU pressure ${machine.cpuPressureMsPerS} ms/s, others ${machine.othersCores} cores, run-queue wait ${Object.entries(machine.runQueueWaitMs).map(([k, v]) => `${k} ${v}`).join(', ')} ms${client.errors + client.dropped ? `  ERRORS ${client.errors} dropped ${client.dropped} (${client.firstError.slice(0, 120)})` : ''}`);
      }
      // Added latency against the direct run of the same rate and verb (whatever order they ran in).
      const direct = steps.find((s) => s.path === 'direct' && s.verb === verb && s.rate === rate);
      for (const s of steps.filter((x) => x.verb === verb && x.rate === rate && x.path !== 'direct' && direct)) {
        s.addedP50Ms = round(s.client.latencyMs.p50 - direct!.client.latencyMs.p50, 2);
        s.addedP99Ms = round(s.client.latencyMs.p99 - direct!.client.latencyMs.p99, 2);
      }
    }
  }

  const result = {
    schema: 'mvproxy-bench-rate/1',
    startedAt,
    finishedAt: new Date().toISOString(),
    elapsedS: round((performance.now() - t0) / 1000, 1),
    machine: { node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown', kernel: os.release(), loadavgStart: loadStart.map((x) => round(x, 2)), loadavgEnd: os.loadavg().map((x) => round(x, 2)) },
    settings: { rates: RATES, verbs: VERBS, paths: PATHS, durationS: DURATION, warmupS: WARMUP, idleS: IDLE, objects: OBJECTS, objectBytes: 2048, audit: AUDIT, mvproxyBuild: MVPROXY_BUILD ?? 'src/ compiled into bench/.build', proxyNodeFlags: PROXY_NODE_FLAGS, kubeApiserver: api.version, client: 'client-go v0.37.2 typed clientset, defaults (protobuf, h2 by ALPN, gzip), QPS limiter off, open loop' },
    idleCpuMsPerS: Object.fromEntries(measured.map((m) => [m.name, round(m.idle * 1000, 2)])),
    paths: paths.map((p) => ({ id: p.id, label: p.label })),
    skipped,
    steps,
  };
  const file = join(OUT_DIR, `rate-${startedAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  log('\n' + table(steps, paths));
  if (skipped.length) log(`skipped: ${skipped.map((s) => `${s.path}: ${s.reason}`).join('; ')}`);
  log(`wrote ${relative(process.cwd(), file)}`);
}

let nginx: { proc: KubeProc; port: number; h1Port: number } | undefined;

const f = (x: number | undefined, d = 2) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d));
const signed = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : `${x >= 0 ? '+' : ''}${x.toFixed(2)}`);

function table(steps: Step[], paths: Path[]): string {
  const L = [
    '| path | verb | rate/s | achieved/s | p50 ms | p99 ms | added p50 | added p99 | proxy CPU µs/req | apiserver CPU µs/req | proxy ÷ apiserver | etcd µs/req | protocol | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|',
  ];
  // By rate, then verb, then path in the order asked for (the steps ran in alternating orders).
  const rank = (s: Step) => RATES.indexOf(s.rate) * 1e4 + VERBS.indexOf(s.verb) * 1e2 + paths.findIndex((x) => x.id === s.path);
  for (const s of [...steps].sort((a, b) => rank(a) - rank(b))) {
    const p = paths.find((x) => x.id === s.path)!;
    const proxy = p.proxy ? s.cpuUsPerReq[p.proxy.name] : undefined;
    const apis = s.cpuUsPerReq.apiserver;
    L.push(`| ${p.label} | ${s.verb.toUpperCase()} | ${s.rate} | ${f(s.client.achieved, 0)} | ${f(s.client.latencyMs.p50)} | ${f(s.client.latencyMs.p99)} | ${signed(s.addedP50Ms)} | ${signed(s.addedP99Ms)} | ${f(proxy, 0)} | ${f(apis, 0)} | ${proxy !== undefined && apis ? `${((proxy / apis) * 100).toFixed(0)} %` : '–'} | ${f(s.cpuUsPerReq.etcd, 0)} | ${s.client.protocols.join('+')} | ${s.client.errors + s.client.dropped} |`);
  }
  return L.join('\n');
}

const watchdog = setTimeout(() => {
  process.stderr.write(`bench:rate: time limit of ${TIME_LIMIT_MS / 1000} s reached; stopping\n`);
  void cleanup().finally(() => process.exit(1));
}, TIME_LIMIT_MS);

void main()
  .then(
    () => 0,
    (e: unknown) => {
      process.stderr.write(`bench:rate: ${(e as Error).stack ?? String(e)}\n`);
      return 1;
    },
  )
  .then(async (code) => {
    clearTimeout(watchdog);
    await cleanup();
    process.exit(code);
  });
