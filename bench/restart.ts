// mvproxy's own restart, as a kubelet restarts a static pod or systemd a unit (issue 39 item 4):
// the built daemon (dist/src/main.js, run as the image runs it) in front of a simulated apiserver,
// a client at a fixed rate of GETs over keep-alive connections (undici, 8 connections, as a
// controller's client keeps a few), and the daemon restarted during the load:
//   sequential  SIGTERM; the new process starts the moment the old one exited (a static pod);
//   overlap     the new process starts first, on the same port (SO_REUSEPORT: --reuse-port), and the
//               old one gets SIGTERM once the new one listens (two units, or a rolling static pod).
// Measured per run: SIGTERM to exit, start to listening, the requests that failed, and the longest
// span in which every request failed. Never in a test: tests never time things.
//
//   npm run build && node --import tsx bench/restart.ts [--frontend=node|uws] [--mode=sequential|overlap] [--rate=100] [--runs=3]
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { Pool } from 'undici';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { startSimApiserver } from '../src/sim';
import { createClusterPKI } from '../src/pki/bundle';

const ROOT = join(__dirname, '..');
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
const frontend = arg('frontend', 'node');
const mode = arg('mode', 'sequential') as 'sequential' | 'overlap';
const rate = Number(arg('rate', '100'));
const runs = Number(arg('runs', '3'));
/** The node that runs the daemon: uWS loads under glibc >= 2.38 (scripts/node-glibc.sh's copy here). */
const nodeBin = frontend === 'uws' && existsSync(join(ROOT, '.cache/glibc-trixie/bin/node')) ? join(ROOT, '.cache/glibc-trixie/bin/node') : process.execPath;

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const p = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return p;
}

interface Started {
  proc: ChildProcess;
  spawnedAt: number;
  listeningAt: Promise<number>;
  exitedAt: Promise<number>;
}

/** The daemon's flags beside the ports: the proxy on (peer CA, front-proxy pair, peer listener), no peers. */
let pkiFlags: string[] = [];

function startDaemon(ports: { client: number; peer: number; metrics: number }, upstream: string, extra: string[]): Started {
  const spawnedAt = performance.now();
  const proc = spawn(nodeBin, [join(ROOT, 'dist', 'src', 'main.js'), `--frontend=${frontend}`, '--bind-address=127.0.0.1', `--secure-port=${ports.client}`, '--peer-bind-address=127.0.0.1', `--peer-port=${ports.peer}`, `--metrics-bind-address=127.0.0.1:${ports.metrics}`, `--local-apiserver=${upstream}`, '--v=0', ...pkiFlags, ...extra], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
  let err = '';
  const listeningAt = new Promise<number>((resolve, reject) => {
    proc.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      if (/"msg":"mvproxy started"/.test(err)) resolve(performance.now());
    });
    proc.once('exit', (c) => reject(new Error(`exited ${c} before it listened:\n${err.slice(-500)}`)));
  });
  listeningAt.catch(() => undefined);
  const exitedAt = new Promise<number>((resolve) => proc.once('exit', () => resolve(performance.now())));
  return { proc, spawnedAt, listeningAt, exitedAt };
}

async function oneRun(upstream: string): Promise<{ exitMs: number; startMs: number; failed: number; sent: number; longestMs: number; errors: Record<string, number> }> {
  const ports = { client: await freePort(), peer: await freePort(), metrics: await freePort() };
  const port = ports.client;
  let current = startDaemon(ports, upstream, []);
  await current.listeningAt;
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 8, keepAliveTimeout: 30_000 });
  const results: { at: number; ok: boolean; why: string }[] = [];
  let running = true;
  const load = (async () => {
    const gap = 1000 / rate;
    let next = performance.now();
    while (running) {
      next += gap;
      const at = performance.now();
      pool.request({ method: 'GET', path: '/api/v1/namespaces/default/configmaps', headersTimeout: 5000, bodyTimeout: 5000 }).then(
        async (r) => {
          await r.body.dump();
          results.push({ at, ok: r.statusCode === 200, why: String(r.statusCode) });
        },
        (e: Error & { code?: string }) => results.push({ at, ok: false, why: e.code ?? e.message }),
      );
      await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
    }
  })();
  await new Promise((r) => setTimeout(r, 2000));
  const old = current;
  let startMs: number;
  let exitMs: number;
  if (mode === 'sequential') {
    const t = performance.now();
    old.proc.kill('SIGTERM');
    const exited = await old.exitedAt;
    exitMs = exited - t;
    current = startDaemon(ports, upstream, []);
    startMs = (await current.listeningAt) - current.spawnedAt;
  } else {
    current = startDaemon(ports, upstream, []);
    startMs = (await current.listeningAt) - current.spawnedAt;
    const t = performance.now();
    old.proc.kill('SIGTERM');
    exitMs = (await old.exitedAt) - t;
  }
  await new Promise((r) => setTimeout(r, 2000));
  running = false;
  await load;
  await new Promise((r) => setTimeout(r, 500));
  await pool.close();
  current.proc.kill('SIGTERM');
  await current.exitedAt;
  results.sort((a, b) => a.at - b.at);
  let longestMs = 0;
  let since: number | undefined;
  for (const r of results) {
    if (!r.ok) since ??= r.at;
    else if (since !== undefined) {
      longestMs = Math.max(longestMs, r.at - since);
      since = undefined;
    }
  }
  const errors: Record<string, number> = {};
  for (const r of results) if (!r.ok) errors[r.why] = (errors[r.why] ?? 0) + 1;
  return { exitMs, startMs, failed: results.filter((r) => !r.ok).length, sent: results.length, longestMs, errors };
}

async function main(): Promise<void> {
  if (!existsSync(join(ROOT, 'dist', 'src', 'main.js'))) throw new Error('run npm run build first (the bench runs the built daemon)');
  const sim = await startSimApiserver({ name: 'apiserver', kubernetesVersion: 'v1.37' });
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-restart-'));
  const pki = await createClusterPKI(join(dir, 'pki'));
  const c = await pki.node('node-a');
  pkiFlags = [`--peer-ca-file=${pki.clusterCAFile}`, `--requestheader-client-ca-file=${pki.frontProxyCAFile}`, `--proxy-client-cert-file=${c.proxyClientCert}`, `--proxy-client-key-file=${c.proxyClientKey}`, `--peer-tls-cert-file=${c.servingCert}`, `--peer-tls-private-key-file=${c.servingKey}`];
  try {
    console.log(`mvproxy restart, ${frontend} front end, ${mode}, ${rate} GET/s over 8 keep-alive connections`);
    console.log('| run | SIGTERM → exit ms | start → listening ms | requests | failed | longest all-failed span ms | errors |');
    console.log('|---|---:|---:|---:|---:|---:|---|');
    for (let i = 1; i <= runs; i++) {
      const r = await oneRun(sim.url);
      console.log(`| ${i} | ${r.exitMs.toFixed(0)} | ${r.startMs.toFixed(0)} | ${r.sent} | ${r.failed} | ${r.longestMs.toFixed(0)} | ${JSON.stringify(r.errors)} |`);
    }
  } finally {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
