// The systems under test, each its own process on 127.0.0.1: the backend, mvproxy (the real CLI,
// compiled to bench/.build, or through tsx), and the anchors (nginx, HAProxy, Go's
// httputil.ReverseProxy), each configured to proxy to the same backend listener.

import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { createClusterPKI } from '../src/pki/bundle';
import { PEER_SERVER_NAME } from '../src/upstream/pools';
import { childPids, freePort, sleep, startProc, waitForPort, which, type Proc } from './lib';

export const ROOT = join(__dirname, '..');
export const BUILD_DIR = join(__dirname, '.build');

/**
 * A bench script in plain TypeScript (a floor), its types stripped ahead into BUILD_DIR, as mvproxy's
 * build is compiled ahead. Run as .ts, Node strips them itself with amaro's WebAssembly, which then
 * stays in the process: a node:http2 floor at rest held 82.2–82.4 MiB that way and 71.1–72.6 stripped
 * ahead (bench/README "Against the floor at rest"), so each floor's RSS carried ~11 MiB of a compiler.
 * Written to a file of its own and renamed into place: two benches at once never run a half-written one.
 */
export function strippedScript(name: string): string {
  mkdirSync(BUILD_DIR, { recursive: true });
  const out = join(BUILD_DIR, name.replace(/\.ts$/, '.js'));
  // TypeScript's transpiler (loaded here only: most importers never need it), not node:module's
  // stripTypeScriptTypes, which is experimental and warns on every run.
  const ts = require('typescript') as typeof import('typescript');
  const options = { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2023, removeComments: true };
  const js = ts.transpileModule(readFileSync(join(__dirname, name), 'utf8'), { compilerOptions: options });
  const tmp = `${out}.${process.pid}.tmp`;
  writeFileSync(tmp, js.outputText);
  renameSync(tmp, out);
  return out;
}

export interface Pinning {
  /** CPUs of the system under test (a proxy, or the backend in the direct scenarios). */
  server?: string;
  /** CPUs of the load generators and of the backend while a proxy is measured. */
  client?: string;
}

export interface Backend {
  proc: Proc;
  portA: number;
  portB: number;
  setWatchInterval(ms: number): Promise<void>;
}

export async function startBackend(pin: Pinning): Promise<Backend> {
  const proc = startProc('backend', process.execPath, ['--import', 'tsx', join(__dirname, 'backend.ts'), '--port-a', '0', '--port-b', '0'], { cpus: pin.client, cwd: ROOT });
  const m = await proc.waitFor(/\{"portA":(\d+),"portB":(\d+)/, 30_000).catch(async (e: unknown) => {
    await proc.stop('SIGKILL');
    throw e;
  });
  const portA = Number(m[1]);
  return {
    proc,
    portA,
    portB: Number(m[2]),
    async setWatchInterval(ms) {
      const r = await request(`http://127.0.0.1:${portA}/_bench/watch-interval?ms=${ms}`, { method: 'POST' });
      await r.body.dump();
    },
  };
}

// ---------------------------------------------------------------- mvproxy

export type Runtime = 'dist' | 'tsx';

/**
 * Compiles src/ to bench/.build with tsc (no type check: `npm run typecheck` does that), so the
 * proxy runs as in the image (dist/src/main.js) without tsx's loader thread in its RSS. Returns
 * the reason when it cannot.
 */
export function buildDist(): string | undefined {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', BUILD_DIR, '--noCheck', '--sourceMap', 'false'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) return `tsc failed (${r.status ?? r.signal}): ${(r.stdout + r.stderr).slice(0, 500)}`;
  if (!existsSync(join(BUILD_DIR, 'src', 'main.js'))) return 'tsc wrote no bench/.build/src/main.js';
  return undefined;
}

/**
 * Compiles src/ as it was at a git commit (`git archive` of src/ and the tsconfigs) to
 * bench/.before/<commit>/, beside bench/.build at the same depth so its imports resolve to this
 * checkout's node_modules: the "before" of a before-and-after measured in one run (run.ts --before).
 * Returns its main.js, or the reason it cannot.
 */
export function buildRef(ref: string): { main: string; commit: string } | { error: string } {
  const rev = spawnSync('git', ['rev-parse', '--short', `${ref}^{commit}`], { cwd: ROOT, encoding: 'utf8' });
  if (rev.status !== 0) return { error: `git rev-parse ${ref}: ${rev.stderr.trim()}` };
  const commit = rev.stdout.trim();
  const out = join(__dirname, '.before', commit);
  const main = join(out, 'src', 'main.js');
  if (existsSync(main)) return { main, commit };
  const srcDir = join(__dirname, '.before', `${commit}-src`);
  rmSync(srcDir, { recursive: true, force: true });
  mkdirSync(srcDir, { recursive: true });
  const files = ['src', 'package.json', 'tsconfig.json', 'tsconfig.build.json'];
  const tar = spawnSync('bash', ['-c', `git archive ${commit} ${files.join(' ')} | tar -x -C "${srcDir}"`], { cwd: ROOT, encoding: 'utf8' });
  if (tar.status !== 0) return { error: `git archive ${commit}: ${tar.stderr.trim()}` };
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', join(srcDir, 'tsconfig.build.json'), '--outDir', out, '--noCheck', '--sourceMap', 'false'], { cwd: srcDir, encoding: 'utf8', timeout: 120_000 });
  rmSync(srcDir, { recursive: true, force: true });
  if (r.status !== 0 || !existsSync(main)) return { error: `tsc of ${commit} failed (${r.status ?? r.signal}): ${(r.stdout + r.stderr).slice(0, 500)}` };
  return { main, commit };
}

export interface PKIFiles {
  clusterCA: string;
  frontProxyCA: string;
  nodes: Record<string, { servingCert: string; servingKey: string; proxyClientCert: string; proxyClientKey: string }>;
}

export async function makePKI(dir: string, names: string[]): Promise<PKIFiles> {
  const pki = await createClusterPKI(dir);
  const nodes: PKIFiles['nodes'] = {};
  for (const n of names) nodes[n] = await pki.node(n);
  return { clusterCA: pki.clusterCAFile, frontProxyCA: pki.frontProxyCAFile, nodes };
}

export interface MvproxySpec {
  name: string;
  /** Flags after the bench's own (e.g. --v=4 for the request-log scenario). */
  extraFlags?: string[];
  frontend: 'uws' | 'node';
  localPort: number;
  /** Peer listener addresses of the static peers, by server ID. */
  peers: Record<string, string>;
  pki: PKIFiles;
  runtime: Runtime;
  cpus?: string;
  /** Extra node flags (e.g. --cpu-prof). */
  nodeFlags?: string[];
  /** Serve clients over TLS with the node's serving certificate (the node front end then offers h2). */
  clientTLS?: boolean;
  /** Another build's main.js (buildRef) in place of this checkout's. */
  main?: string;
}

export interface Mvproxy {
  name: string;
  proc: Proc;
  clientPort: number;
  peerPort: number;
  metricsPort: number;
  serverID: string;
  /** The front end it actually serves with. */
  frontend: string;
}

/** The environment the image runs mvproxy with (the Dockerfile's ENV; test/image/runtime-folder.test.ts keeps them equal). */
export const IMAGE_ENV: Readonly<Record<string, string>> = { NODE_ENV: 'production', UWS_HTTP_MAX_HEADERS_SIZE: '16384', NODE_OPTIONS: '--max-semi-space-size=4' };

export async function startMvproxy(s: MvproxySpec): Promise<Mvproxy> {
  const certs = s.pki.nodes[s.name]!;
  const serverID = `mvproxy-${s.name}`;
  const flags = [
    `--frontend=${s.frontend}`,
    '--bind-address=127.0.0.1',
    '--secure-port=0',
    '--peer-bind-address=127.0.0.1',
    '--peer-port=0',
    `--peer-tls-cert-file=${certs.servingCert}`,
    `--peer-tls-private-key-file=${certs.servingKey}`,
    `--local-apiserver=http://127.0.0.1:${s.localPort}`,
    `--proxy-client-cert-file=${certs.proxyClientCert}`,
    `--proxy-client-key-file=${certs.proxyClientKey}`,
    `--peer-ca-file=${s.pki.clusterCA}`,
    `--requestheader-client-ca-file=${s.pki.frontProxyCA}`,
    '--requestheader-allowed-names=front-proxy-client',
    `--server-id=${serverID}`,
    '--metrics-bind-address=127.0.0.1:0',
    ...Object.entries(s.peers).map(([id, addr]) => `--static-peers=${id}=${addr}`),
    ...(s.clientTLS ? [`--tls-cert-file=${certs.servingCert}`, `--tls-private-key-file=${certs.servingKey}`] : []),
    ...(s.extraFlags ?? []),
  ];
  const entry = s.main !== undefined ? [s.main] : s.runtime === 'dist' ? [join(BUILD_DIR, 'src', 'main.js')] : ['--import', 'tsx', join(ROOT, 'src', 'main.ts')];
  const env = { ...process.env, ...IMAGE_ENV };
  const proc = startProc(`mvproxy-${s.name}`, process.execPath, [...(s.nodeFlags ?? []), ...entry, ...flags], { cpus: s.cpus, cwd: ROOT, env });
  try {
    const m = await proc.waitFor(/\{[^\n]*"msg":"mvproxy started"[^\n]*\}/, 30_000);
    const rec = JSON.parse(m[0]) as { clientPort: number; peerPort: number; metricsPort: number; frontend: string };
    // uWS may not load on every machine; the daemon then falls back to node:http (the caller notes it).
    const mv: Mvproxy = { name: s.name, proc, clientPort: rec.clientPort, peerPort: rec.peerPort, metricsPort: rec.metricsPort, serverID, frontend: rec.frontend };
    // Ready = local discovery fetched and the discovery snapshot published (/readyz).
    const end = Date.now() + 30_000;
    for (;;) {
      const ok = await request(`http://127.0.0.1:${mv.metricsPort}/readyz`).then(
        async (r) => {
          await r.body.dump();
          return r.statusCode === 200;
        },
        () => false,
      );
      if (ok) break;
      if (Date.now() > end) throw new Error(`mvproxy-${s.name} not ready in 30 s:\n${proc.output().slice(-1500)}`);
      await sleep(200);
    }
    return mv;
  } catch (e) {
    await proc.stop('SIGKILL');
    throw e;
  }
}

// ---------------------------------------------------------------- anchors

export interface Anchor {
  name: 'nginx' | 'haproxy' | 'go' | 'floor' | 'floor-node' | 'floor-peer' | 'plain' | 'plain-node' | 'plain-peer';
  version: string;
  proc: Proc;
  port: number;
  /** Processes whose CPU and memory count (nginx: master and worker). */
  pids(): number[];
  /** More processes to stop at the end (the peer floor's B). */
  others?: Proc[];
}

export type AnchorResult = Anchor | { name: Anchor['name']; skipped: string };

export const ANCHOR_INSTALL = 'apt-get install -y nginx haproxy golang-go';

/** Waits for the port; on failure stops the process and throws with its output. */
async function listening(proc: Proc, port: number): Promise<void> {
  try {
    await Promise.race([
      waitForPort(port, 10_000),
      new Promise((_, reject) => proc.child.once('exit', (c) => reject(new Error(`exited with ${c}`)))),
    ]);
  } catch (e) {
    await proc.stop('SIGKILL');
    throw new Error(`${proc.name}: ${(e as Error).message}: ${proc.output().slice(-600)}`);
  }
}

/** The soft limit on open files (HAProxy refuses to start when maxconn needs more). */
function fdLimit(): number {
  const r = spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return Number.isFinite(n) && n > 0 ? Math.min(n, 40_000) : 4096;
}

function versionOf(cmd: string, args: string[], re: RegExp): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return re.exec((r.stdout ?? '') + (r.stderr ?? ''))?.[1] ?? 'unknown';
}

/**
 * nginx 1 worker, upstream keepalive, buffers large enough for the 100 KiB LIST to stay in memory
 * (defaults would spill it to a temporary file), access log off; /static/apis serves the merged
 * discovery document mvproxy serves, as a static file with the same headers.
 */
export async function startNginx(dir: string, backendPort: number, staticApis: Buffer, pin: Pinning): Promise<AnchorResult> {
  const bin = which('nginx');
  if (!bin) return { name: 'nginx', skipped: `nginx is not installed (${ANCHOR_INSTALL})` };
  const d = join(dir, 'nginx');
  mkdirSync(join(d, 'tmp'), { recursive: true });
  chmodSync(dir, 0o755);
  chmodSync(d, 0o755);
  writeFileSync(join(d, 'apis.json'), staticApis, { mode: 0o644 });
  const port = await freePort();
  const conf = `# generated by bench/targets.ts
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
  keepalive_timeout 75s;
  upstream backend {
    server 127.0.0.1:${backendPort};
    keepalive 256;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location = /static/apis {
      alias ${d}/apis.json;
      default_type "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
      add_header Vary Accept;
      add_header Cache-Control public;
    }
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffer_size 16k;
      proxy_buffers 16 16k;
      proxy_busy_buffers_size 32k;
      proxy_read_timeout 120s;
    }
  }
}
`;
  writeFileSync(join(d, 'nginx.conf'), conf);
  const proc = startProc('nginx', bin, ['-p', d, '-e', join(d, 'error.log'), '-c', join(d, 'nginx.conf')], { cpus: pin.server });
  await listening(proc, port);
  return { name: 'nginx', version: versionOf(bin, ['-v'], /nginx\/(\S+)/), proc, port, pids: () => [proc.pid, ...childPids(proc.pid)] };
}

/** HAProxy, one thread, HTTP mode with keep-alive both sides, connection reuse, no delay for streams. */
export async function startHaproxy(dir: string, backendPort: number, pin: Pinning): Promise<AnchorResult> {
  const bin = which('haproxy');
  if (!bin) return { name: 'haproxy', skipped: `haproxy is not installed (${ANCHOR_INSTALL})` };
  const d = join(dir, 'haproxy');
  mkdirSync(d, { recursive: true });
  const port = await freePort();
  const conf = `# generated by bench/targets.ts
global
  nbthread 1
  # Each connection takes two descriptors (client and server side): stay under \`ulimit -n\`.
  maxconn ${Math.max(1000, Math.floor((fdLimit() - 100) / 2) - 10)}
defaults
  mode http
  option http-keep-alive
  # Without it HAProxy holds small streamed chunks back (MSG_MORE) and watch events arrive ~100-200 ms
  # late (measured); operators proxying kube-apiserver watches set it.
  option http-no-delay
  timeout connect 5s
  timeout client 120s
  timeout server 120s
  timeout http-keep-alive 75s
frontend fe
  bind 127.0.0.1:${port}
  default_backend be
backend be
  http-reuse always
  server backend 127.0.0.1:${backendPort}
`;
  writeFileSync(join(d, 'haproxy.cfg'), conf);
  const proc = startProc('haproxy', bin, ['-db', '-f', join(d, 'haproxy.cfg')], { cpus: pin.server });
  await listening(proc, port);
  return { name: 'haproxy', version: versionOf(bin, ['-v'], /version (\S+)/), proc, port, pids: () => [proc.pid] };
}

/**
 * Which upstream client a floor relays with (bench/floor-proxy.ts): 'undici' (dispatch(), the
 * `floor*` targets) or 'plain' (the least HTTP/1.1 client on net/tls sockets, the `plain*` targets).
 */
export type FloorClient = 'undici' | 'plain';

/**
 * bench/floor-proxy.ts: uWebSockets.js (or node:http, `front` 'node') + an upstream client and nothing
 * else, on the same Node, with the image's environment (IMAGE_ENV): the floor mvproxy's design
 * stands on (issues 18, 28). It runs stripped ahead (strippedScript), without tsx or Node's own
 * stripping, so no compiler adds to its RSS, as none does to mvproxy's (dist build).
 */
export async function startFloorProxy(backendPort: number, pin: Pinning, front: 'uws' | 'node' = 'uws', client: FloorClient = 'undici', nodeFlags: string[] = []): Promise<AnchorResult> {
  const name = `${client === 'undici' ? 'floor' : 'plain'}${front === 'uws' ? '' : '-node'}` as Anchor['name'];
  const f = await spawnFloor(name, `http://127.0.0.1:${backendPort}`, [front, '--client', client], pin, nodeFlags);
  return { name, version: `node ${process.version}`, proc: f.proc, port: f.port, pids: () => [f.proc.pid] };
}

/**
 * The floor of the peer route (with either client): floor A (uWS, plain) dials floor B (uWS SSLApp asking for and
 * verifying client certificates) over mutual TLS with the certificates mvproxy A and B use
 * (A's proxy client certificate, B's serving certificate, the cluster and front-proxy CAs), and
 * B relays to backend listener b. Both on the server CPU, as mvproxy A and B.
 */
export async function startFloorPeer(backendPortB: number, pin: Pinning, pki: PKIFiles, client: FloorClient = 'undici'): Promise<AnchorResult> {
  const b = pki.nodes.b!;
  const a = pki.nodes.a!;
  const name = client === 'undici' ? 'floor-peer' : 'plain-peer';
  const B = await spawnFloor(`${name}-b`, `http://127.0.0.1:${backendPortB}`, ['uws', '--client', client, '--tls-cert', b.servingCert, '--tls-key', b.servingKey, '--client-ca', pki.frontProxyCA], pin);
  try {
    const A = await spawnFloor(`${name}-a`, `https://127.0.0.1:${B.port}`, ['uws', '--client', client, '--upstream-ca', pki.clusterCA, '--upstream-cert', a.proxyClientCert, '--upstream-key', a.proxyClientKey, '--upstream-servername', PEER_SERVER_NAME], pin);
    return { name, version: `node ${process.version}`, proc: A.proc, port: A.port, pids: () => [A.proc.pid, B.proc.pid], others: [B.proc] };
  } catch (e) {
    await B.proc.stop('SIGKILL');
    throw e;
  }
}

async function spawnFloor(name: string, origin: string, extra: string[], pin: Pinning, nodeFlags: string[] = []): Promise<{ proc: Proc; port: number }> {
  const port = await freePort();
  const proc = startProc(name, process.execPath, [...nodeFlags, strippedScript('floor-proxy.ts'), String(port), origin, ...extra], { cpus: pin.server, cwd: ROOT, env: { ...process.env, ...IMAGE_ENV } });
  try {
    await proc.waitFor(/"listening"/, 20_000);
  } catch (e) {
    await proc.stop('SIGKILL');
    throw e;
  }
  return { proc, port };
}

/** bench/goproxy (net/http/httputil.ReverseProxy), built with `go build` into bench/.build. */
export async function startGoProxy(backendPort: number, pin: Pinning): Promise<AnchorResult> {
  const go = which('go', ['/usr/lib/go/bin', '/usr/local/go/bin']);
  if (!go) return { name: 'go', skipped: `go is not installed (${ANCHOR_INSTALL})` };
  const out = join(BUILD_DIR, 'goproxy');
  mkdirSync(BUILD_DIR, { recursive: true });
  const r = spawnSync(go, ['build', '-o', out, '.'], {
    cwd: join(__dirname, 'goproxy'),
    encoding: 'utf8',
    timeout: 180_000,
    // Standard library only: no module downloads, ever.
    env: { ...process.env, GOCACHE: join(BUILD_DIR, 'gocache'), GOPROXY: 'off', GOFLAGS: '-mod=mod', GO111MODULE: 'on', GOTOOLCHAIN: 'local' },
  });
  if (r.status !== 0) return { name: 'go', skipped: `go build failed: ${(r.stdout + r.stderr).slice(0, 300)}` };
  const port = await freePort();
  const proc = startProc('goproxy', out, ['-listen', `127.0.0.1:${port}`, '-upstream', `http://127.0.0.1:${backendPort}`], { cpus: pin.server });
  try {
    await proc.waitFor(/"listening"/, 10_000);
  } catch (e) {
    await proc.stop('SIGKILL');
    throw e;
  }
  return { name: 'go', version: versionOf(go, ['version'], /go version (go\S+)/), proc, port, pids: () => [proc.pid] };
}
