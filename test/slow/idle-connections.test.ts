// Idle connections and slowloris heads against every listener (issue 38 item 5): the client listener
// (TLS, as deployed), the peer listener (mutual TLS: node:http2, or uWS with --peer-frontend=uws; the
// realistic attacker has no client certificate or never finishes the handshake) and the operations
// listener (/metrics, plain HTTP). mvproxy runs as its own process (its fds from /proc/<pid>/fd, its
// RSS from /proc/<pid>/status, jemalloc preloaded as in the image) in front of a fake apiserver that
// records every request.
//
// Two attacks:
// - a flood: 10,000 connections opened and held on one listener of a fresh daemon: plain TCP that
//   sends nothing; on a TLS listener half of them send 20 bytes of a ClientHello and one in ten a
//   whole ClientHello, then nothing (a handshake never finished). While they are held an honest
//   client of each of the three listeners must be served and nothing may reach the apiserver; once
//   they are gone (closed by the daemon on uWS; by the attacker on node, whose timeouts are one to
//   two minutes) the daemon's fds must be back, and its RSS within 50 % of what it was at rest;
// - probes: 20 connections of each kind of KIND_TEXT (idle in each state a handshake or a head can
//   stop in, and heads dribbled a byte every 100 ms) on every listener of a daemon per front end, all
//   started at once and watched for up to WINDOW_MS: each must be closed by the daemon (how long it
//   took is printed, never asserted), honest clients are served all along, nothing reaches the
//   apiserver, and the daemon's fds are back once the attacker goes away.
//
// Measured here (2 cores, both lanes, 2026-12-06):
// - uWS client and peer listener: 10,000 accepted in 0.4-1.5 s; every kind of probe, the slowloris
//   heads included, closed silently 10.2-10.7 s after it opened (the idle timeout is not re-armed by
//   the bytes of an unfinished head); RSS 158 -> 227 (held) -> 185-192 MiB 12 s after, 129-156 MiB
//   later.
// - node client and peer listener (node:http2 with allowHTTP1): 10,000 accepted in 12-16 s (a TLS
//   accept costs ~1 ms of the main thread; honest clients were still answered in under 50 ms);
//   idle, or a handshake never finished: closed silently at 120 s (node:tls handshakeTimeout); after
//   the handshake, no request or a slowloris head: 408 at 60-90 s (headersTimeout 60 s, checked
//   every 30 s); idle after an answer: 6.5 s (keepAliveTimeout 5 s); no client certificate on the
//   peer listener: closed in the handshake (0.4-0.7 s). An HTTP/2 connection that sends its preface
//   and then nothing, or a HEADERS frame a byte at a time, was NEVER closed (node's http2 server has
//   no idle or header timeout); since listen-node.ts closeWhenIdle it is closed at 32 s with no
//   stream open (kube-apiserver's ReadHeaderTimeout), 90 s after its last stream (IdleTimeout).
//   kube-apiserver closes a TLS handshake and a request head within ReadHeaderTimeout, 32 s
//   (k8s.io/apiserver pkg/server/secure_serving.go); node's are 120 s and 60-90 s (measured above).
// - Memory on the node:http listeners (node's client and peer listener; the operations listener of
//   either front end) was not given back when a flood ended: 151-164 -> ~560 (held) -> 664 MiB on
//   node's client listener until V8's memory reducer happened to run, 236 MiB after a full
//   collection. The sockets' native TLS state goes with their JS objects, which only a major
//   collection frees, and lifecycle/memory.ts collected after a burst of *requests* only. Open
//   connections now count with them (telemetry/connections.ts): 168 -> 562 -> 129 MiB.
//
// Time: ~2 min 20 s per lane (the probes' 130 s window runs beside the floods). Lane 1 (node only)
// floods node with 10,000 per listener. Lane 2 (uWS and node) floods uWS with 10,000 per listener
// and node with 1,000 on its client and peer listeners (its code is lane 1's); the operations
// listener, node:http on both front ends, is flooded on the lane's first front end only.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import http from 'node:http';
import https from 'node:https';
import http2 from 'node:http2';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FRONTENDS } from '../support/frontends';
import { startChildDaemon, type ChildDaemon } from '../support/child-daemon';
import { startFakeUpstream } from '../support/fake-upstream';
import { nodePKIFlags } from '../support/node-pki';
import { eventually, GiveUp } from '../support/poll';
import { createClusterPKI, type NodeCertFiles } from '../../src/pki/bundle';
import type { Frontend } from '../../src/config/types';
import { jemalloc } from '../support/jemalloc';
import { frame, headerBlock } from '../support/h2-flood';

const CM = '/api/v1/namespaces/default/configmaps';
/** How long the probes are watched: past node's longest own timeout (TLS handshake, 120 s) and kube-apiserver's (IdleTimeout 90 s). */
const WINDOW_MS = 130_000;
const PROBES_PER_KIND = 20;
/** One byte of a slowloris head every DRIP_MS. */
const DRIP_MS = 100;
/** A head this long (plus its line) takes ~210 s at one byte per 100 ms: it never completes in the window. */
const PAD = 'p'.repeat(2000);
/** Connections opened at once in a flood (the listen backlog is 511). */
const BATCH = 500;
const WARMUP = 500;
/**
 * RSS once a flood is gone, against RSS at rest. Not test/slow/watch-memory.test.ts's 20 %: after
 * 10,000 connections uWS stays 15-25 % above rest for tens of seconds (allocator caches; back to rest
 * later), measured; what a user notices is the node front end staying at 3-4 times its rest.
 */
const MEMORY_SLACK = 1.5;

type ListenerName = 'client' | 'peer' | 'ops';
const LISTENERS: readonly ListenerName[] = ['client', 'peer', 'ops'];
const isTLS = (l: ListenerName) => l !== 'ops';

/** Connections per flood: 10,000 for the lane's first front end, 1,000 for the second (see the top). */
const floodSize = (fe: Frontend) => (fe === FRONTENDS[0] ? 10_000 : 1_000);
/** Listeners flooded per front end: the operations listener (node:http on both) on the lane's first only. */
const floodedListeners = (fe: Frontend) => LISTENERS.filter((l) => l !== 'ops' || fe === FRONTENDS[0]);


// ---------------------------------------------------------------------------------------------
// The fake apiserver, the certificates, the daemon

let dir: string;
let certs: NodeCertFiles;
let pkiFlags: string[];
let ca: Buffer;
let peerCert: { cert: Buffer; key: Buffer };
let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
/** Resource requests that reached the apiserver and are not an honest client's. */
const leaked: string[] = [];
const daemons = new Set<ChildDaemon>();

async function startDaemon(fe: Frontend): Promise<ChildDaemon> {
  const d = await startChildDaemon(
    [
      `--frontend=${fe}`,
      ...(fe === 'uws' ? ['--peer-frontend=uws'] : []),
      '--secure-port=0',
      '--bind-address=127.0.0.1',
      '--peer-port=0',
      '--peer-bind-address=127.0.0.1',
      '--metrics-bind-address=127.0.0.1:0',
      `--local-apiserver=${upstream.url}`,
      `--tls-cert-file=${certs.servingCert}`,
      `--tls-private-key-file=${certs.servingKey}`,
      ...pkiFlags,
      '--server-id=mvproxy-idle',
      '--v=0',
    ],
    jemalloc(),
  );
  daemons.add(d);
  // The listeners this test claims to attack.
  assert.match(d.stderr(), fe === 'uws' ? /peer listener front end: uWebSockets\.js/ : /peer listener front end: node:https/);
  return d;
}

const alive = (d: ChildDaemon) => d.proc.exitCode === null && d.proc.signalCode === null;
const fds = (d: ChildDaemon) => readdirSync(`/proc/${d.proc.pid}/fd`).length;
const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
const port = (d: ChildDaemon, l: ListenerName) => (l === 'client' ? d.clientPort : l === 'peer' ? d.peerPort : d.metricsPort);

/** V8's heap as the daemon's own /metrics reports it (MiB). */
async function heapOf(d: ChildDaemon): Promise<string> {
  const text = await fetch(`http://127.0.0.1:${d.metricsPort}/metrics`).then((r) => r.text(), () => '');
  return ['nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes']
    .map((m) => `${m.replace(/^nodejs_|_bytes$/g, '')} ${mib(Number(new RegExp(`^${m} (\\S+)`, 'm').exec(text)?.[1]))} MiB`)
    .join(', ');
}

interface Honest {
  listener: ListenerName;
  status: number;
  ms: number;
}

let honestSeq = 0;
/**
 * One request of an honest client on a new connection: a kubectl-like GET on the client listener, a
 * peer's proxied GET (with the front-proxy client certificate) on the peer listener, a scrape of
 * /metrics on the operations listener. Status 0: no answer within 30 s.
 */
function honest(d: ChildDaemon, listener: ListenerName): Promise<Honest> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    let settled = false;
    const done = (status: number) => {
      if (settled) return;
      settled = true;
      resolve({ listener, status, ms: Date.now() - t0 });
    };
    const path = `${CM}?honest=${++honestSeq}`;
    const common = { host: '127.0.0.1', port: port(d, listener), agent: false as const, timeout: 30_000 };
    const req =
      listener === 'ops'
        ? http.get({ ...common, path: '/metrics' })
        : https.get({ ...common, path, ca, servername: 'localhost', ...(listener === 'peer' ? { ...peerCert, headers: { 'x-kubernetes-peer-proxied': 'true' } } : {}) });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0));
      res.on('error', () => done(0));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => done(0));
  });
}

async function honestAll(d: ChildDaemon): Promise<Honest[]> {
  const out: Honest[] = [];
  for (const l of LISTENERS) out.push(await honest(d, l));
  return out;
}

const show = (hs: Honest[]) => hs.map((h) => `${h.listener} ${h.status || 'no answer'} in ${h.ms} ms`).join(', ');

/** The first flight of a TLS client as node sends it (ALPN h2 and http/1.1), captured once. */
async function captureClientHello(): Promise<Buffer> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const p = (srv.address() as net.AddressInfo).port;
  return new Promise((resolve) => {
    srv.once('connection', (s) =>
      s.once('data', (b: Buffer) => {
        resolve(b);
        s.destroy();
        srv.close();
      }),
    );
    const c = tls.connect({ host: '127.0.0.1', port: p, servername: 'localhost', ALPNProtocols: ['h2', 'http/1.1'], rejectUnauthorized: false });
    c.on('error', () => undefined);
  });
}
let clientHello: Buffer;

// ---------------------------------------------------------------------------------------------
// HTTP/2 frames by hand (test/support/h2-flood.ts): a HEADERS frame to dribble

const H2_PREFACE = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), frame(4, 0, 0, Buffer.alloc(0))]);
const H2_SLOW_HEADERS = frame(
  1,
  0x5, // END_STREAM | END_HEADERS
  1,
  headerBlock([[':method', 'GET'], [':scheme', 'https'], [':authority', 'localhost'], [':path', `${CM}?attack=h2-slowloris`], ['x-pad', PAD]]),
);

// ---------------------------------------------------------------------------------------------
// Probes: a few connections of each kind, watched until the daemon closes them

type Kind = 'tcp-idle' | 'tls-partial-hello' | 'tls-hello-then-silence' | 'tls-idle' | 'idle-after-answer' | 'slowloris' | 'h2-idle' | 'h2-slowloris';

const KIND_TEXT: Record<Kind, string> = {
  'tcp-idle': 'a TCP connection that sends nothing',
  'tls-partial-hello': '20 bytes of a TLS ClientHello, then nothing',
  'tls-hello-then-silence': 'a whole TLS ClientHello, then nothing (the handshake never finished)',
  'tls-idle': 'a finished TLS handshake (no client certificate), then no request',
  'idle-after-answer': 'a kept-alive HTTP/1.1 connection idle after one answered request',
  slowloris: 'an HTTP/1.1 request head dribbled one byte every 100 ms (slowloris)',
  'h2-idle': 'HTTP/2: the preface and SETTINGS, then no stream',
  'h2-slowloris': 'HTTP/2: a HEADERS frame dribbled one byte every 100 ms (slowloris)',
};

/** What kube-apiserver does with the same connection on its port (k8s.io/apiserver secure_serving.go, Go's net/http), for the report. */
const KUBE_APISERVER: Record<Kind, string> = {
  'tcp-idle': 'kube-apiserver: the TLS handshake must finish within ReadHeaderTimeout, 32 s',
  'tls-partial-hello': 'kube-apiserver: 32 s',
  'tls-hello-then-silence': 'kube-apiserver: 32 s',
  'tls-idle': 'kube-apiserver: ReadHeaderTimeout 32 s',
  slowloris: 'kube-apiserver: ReadHeaderTimeout 32 s',
  'idle-after-answer': 'kube-apiserver: IdleTimeout 90 s',
  'h2-idle': 'kube-apiserver: IdleTimeout 90 s',
  'h2-slowloris': 'kube-apiserver: IdleTimeout 90 s (no stream opens)',
};

function kindsOf(fe: Frontend, l: ListenerName): Kind[] {
  if (l === 'ops') return ['tcp-idle', 'idle-after-answer', 'slowloris'];
  const tlsKinds: Kind[] = ['tcp-idle', 'tls-partial-hello', 'tls-hello-then-silence', 'tls-idle', 'slowloris'];
  if (l === 'peer') return tlsKinds; // the realistic attacker has no client certificate
  // uWS speaks HTTP/1.1 only (its TLS offers no ALPN h2).
  return [...tlsKinds, 'idle-after-answer', ...(fe === 'node' ? (['h2-idle', 'h2-slowloris'] as Kind[]) : [])];
}

interface Probe {
  listener: ListenerName;
  kind: Kind;
  opened: number;
  /** ms after opening that the daemon closed it, undefined while open. */
  closedAfter?: number;
  /** The first bytes the daemon sent (an HTTP status line, say), latin1. */
  first: string;
}

interface ProbeRun {
  daemon: ChildDaemon;
  started: number;
  fdsAtRest: number;
  probes: Probe[];
  honest: Honest[];
  stop(): void;
}

/** Dribbling sockets: one timer writes the next byte of each. */
const dribbling = new Map<net.Socket, { bytes: Buffer; at: number }>();
let dribbler: NodeJS.Timeout | undefined;
function dribble(s: net.Socket, bytes: Buffer): void {
  dribbling.set(s, { bytes, at: 0 });
  dribbler ??= setInterval(() => {
    for (const [sock, d] of dribbling) {
      if (sock.destroyed || d.at >= d.bytes.length) dribbling.delete(sock);
      else sock.write(d.bytes.subarray(d.at, ++d.at));
    }
  }, DRIP_MS);
}

function startProbes(d: ChildDaemon, fe: Frontend): ProbeRun {
  const probes: Probe[] = [];
  const mine = new Set<{ destroy(): void }>();
  const started = Date.now();
  const byUs = new WeakSet<object>();
  const track = (p: Probe, s: net.Socket) => {
    s.on('data', (b: Buffer) => {
      if (p.first.length < 64) p.first += b.toString('latin1').slice(0, 64 - p.first.length);
    });
    s.on('error', () => undefined);
    s.on('close', () => {
      if (!byUs.has(s)) p.closedAfter = Date.now() - p.opened;
    });
  };
  for (const listener of LISTENERS) {
    const p0 = port(d, listener);
    const tlsOpts = { host: '127.0.0.1', port: p0, ca, servername: 'localhost' };
    for (const kind of kindsOf(fe, listener)) {
      for (let i = 0; i < PROBES_PER_KIND; i++) {
        const p: Probe = { listener, kind, opened: Date.now(), first: '' };
        probes.push(p);
        const head = Buffer.from(`GET ${listener === 'ops' ? '/metrics' : CM}?attack=slowloris HTTP/1.1\r\nHost: localhost\r\nX-Pad: ${PAD}\r\n\r\n`, 'latin1');
        let s: net.Socket;
        switch (kind) {
          case 'tcp-idle':
            s = net.connect(p0, '127.0.0.1');
            break;
          case 'tls-partial-hello':
            s = net.connect(p0, '127.0.0.1', () => s.write(clientHello.subarray(0, 20)));
            break;
          case 'tls-hello-then-silence':
            s = net.connect(p0, '127.0.0.1', () => s.write(clientHello));
            break;
          case 'tls-idle':
            s = tls.connect({ ...tlsOpts, ALPNProtocols: ['http/1.1'] });
            break;
          case 'idle-after-answer': {
            const ask = () => s.write(`GET ${listener === 'ops' ? '/healthz' : '/livez'} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
            s = isTLS(listener) ? tls.connect({ ...tlsOpts, ALPNProtocols: ['http/1.1'] }, ask) : net.connect(p0, '127.0.0.1', ask);
            break;
          }
          case 'slowloris':
            s = isTLS(listener) ? tls.connect({ ...tlsOpts, ALPNProtocols: ['http/1.1'] }, () => dribble(s, head)) : net.connect(p0, '127.0.0.1', () => dribble(s, head));
            break;
          case 'h2-slowloris':
            s = tls.connect({ ...tlsOpts, ALPNProtocols: ['h2'] }, () => {
              s.write(H2_PREFACE);
              dribble(s, H2_SLOW_HEADERS);
            });
            break;
          case 'h2-idle': {
            // node's own HTTP/2 client: preface, SETTINGS and their ACKs, then no stream.
            const sess = http2.connect(`https://localhost:${p0}`, { ca, host: '127.0.0.1', servername: 'localhost', createConnection: () => tls.connect({ ...tlsOpts, ALPNProtocols: ['h2'] }) });
            sess.on('error', () => undefined);
            sess.once('remoteSettings', () => (p.first = 'h2:its HTTP/2 SETTINGS'));
            sess.on('close', () => {
              if (!byUs.has(sess)) p.closedAfter = Date.now() - p.opened;
            });
            mine.add({ destroy: () => (byUs.add(sess), sess.destroy()) });
            continue;
          }
        }
        track(p, s);
        mine.add({ destroy: () => (byUs.add(s), s.destroy()) });
      }
    }
  }
  const run: ProbeRun = {
    daemon: d,
    started,
    fdsAtRest: 0,
    probes,
    honest: [],
    stop() {
      clearInterval(ticker);
      for (const m of mine) m.destroy();
      mine.clear();
    },
  };
  // An honest client of each listener every 5 s while the probes are held.
  let asking = false;
  const ticker = setInterval(() => {
    if (asking || !alive(d)) return;
    asking = true;
    void honestAll(d).then((hs) => {
      run.honest.push(...hs);
      asking = false;
    });
  }, 5_000);
  return run;
}

/** Until every probe of the kind is closed, or the window is over. */
async function settled(run: ProbeRun, listener: ListenerName, kind: Kind): Promise<Probe[]> {
  const mine = run.probes.filter((p) => p.listener === listener && p.kind === kind);
  while (mine.some((p) => p.closedAfter === undefined) && Date.now() < run.started + WINDOW_MS && alive(run.daemon)) await sleep(250);
  return mine;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** What the daemon sent before it closed a probe, in a word. */
function firstBytes(b: string): string {
  if (b === '') return 'nothing';
  if (b.startsWith('h2:')) return b.slice(3);
  if (b.startsWith('HTTP/')) return JSON.stringify(b.split('\r\n')[0]);
  if (b.charCodeAt(0) === 0x16) return 'its TLS handshake flight';
  if (b.charCodeAt(0) === 0x15) return 'a TLS alert';
  if (b.charCodeAt(3) === 0x4) return 'HTTP/2 SETTINGS';
  return JSON.stringify(b.slice(0, 20));
}

// ---------------------------------------------------------------------------------------------
// A flood: n connections held on one listener

interface Flood {
  sockets: net.Socket[];
  errors: number;
  openMs: number;
  /** ms after opening at which the daemon closed each one it closed. */
  closedByDaemon: number[];
  goAway(): void;
}

async function flood(p: number, n: number, tlsListener: boolean): Promise<Flood> {
  const byUs = new WeakSet<net.Socket>();
  const f: Flood = {
    sockets: [],
    errors: 0,
    openMs: 0,
    closedByDaemon: [],
    goAway() {
      for (const s of f.sockets) {
        byUs.add(s);
        s.destroy();
      }
    },
  };
  const t0 = Date.now();
  for (let i = 0; i < n; i += BATCH) {
    await Promise.all(
      Array.from({ length: Math.min(BATCH, n - i) }, (_, j) => {
        const k = i + j;
        return new Promise<void>((resolve) => {
          const s = net.connect(p, '127.0.0.1');
          const opened = Date.now();
          let failed = false;
          s.once('connect', () => {
            if (tlsListener && k % 10 === 0) s.write(clientHello);
            else if (tlsListener && k % 2 === 1) s.write(clientHello.subarray(0, 20));
            resolve();
          });
          s.on('error', () => {
            failed = true;
            f.errors++;
            resolve();
          });
          s.on('close', () => {
            if (!byUs.has(s) && !failed) f.closedByDaemon.push(Date.now() - opened);
          });
          s.resume();
          f.sockets.push(s);
        });
      }),
    );
  }
  f.openMs = Date.now() - t0;
  return f;
}

// ---------------------------------------------------------------------------------------------

const probeRuns = new Map<Frontend, ProbeRun>();

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mvproxy-idle-'));
  const pki = await createClusterPKI(join(dir, 'pki'));
  certs = await pki.node('idle');
  pkiFlags = await nodePKIFlags(pki, 'idle');
  ca = readFileSync(pki.clusterCAFile);
  peerCert = { cert: readFileSync(certs.proxyClientCert), key: readFileSync(certs.proxyClientKey) };
  clientHello = await captureClientHello();
  upstream = await startFakeUpstream((req, res) => {
    const url = req.url ?? '';
    if (url.startsWith('/api/') && !url.includes('honest=')) leaked.push(`${req.method} ${url.slice(0, 120)}`);
    if (url.startsWith('/api/v1/') || /^\/(readyz|livez|healthz)/.test(url)) {
      res.writeHead(200, { 'content-type': url.startsWith('/api/') ? 'application/json' : 'text/plain' });
      res.end(url.startsWith('/api/') ? '{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}' : 'ok');
      return true;
    }
    return false;
  });
  // The probes of every front end start together: their window runs beside the floods below.
  for (const fe of FRONTENDS) {
    const d = await startDaemon(fe);
    const warm = await honestAll(d);
    assert.ok(
      warm.every((h) => h.status === 200),
      `warm-up: ${show(warm)}`,
    );
    await sleep(1000); // the first discovery merge starts a worker thread (its own fds): after that, count
    const fdsAtRest = fds(d);
    const run = startProbes(d, fe);
    run.fdsAtRest = fdsAtRest;
    probeRuns.set(fe, run);
  }
});

after(async () => {
  clearInterval(dribbler);
  for (const run of probeRuns.values()) run.stop();
  for (const d of daemons) await d.stop('SIGKILL');
  await upstream?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

for (const fe of FRONTENDS) {
  const n = floodSize(fe);
  for (const listener of floodedListeners(fe)) {
    describe(`${fe} front end, ${listener} listener: ${n.toLocaleString('en')} idle connections held by one attacker (mvproxy in its own process)`, () => {
      let d: ChildDaemon;
      let fdsAtRest = 0;
      let rssAtRest = 0;
      let peakRss = 0;
      let gone = false;
      before(async () => {
        d = await startDaemon(fe);
        const warm = await honestAll(d);
        assert.ok(
          warm.every((h) => h.status === 200),
          `warm-up: ${show(warm)}`,
        );
        // A warm-up flood, as test/slow/watch-memory.test.ts warms up: what is compiled or sized once is in both measurements.
        const w = await flood(port(d, listener), WARMUP, isTLS(listener));
        w.goAway();
        await sleep(2000);
        fdsAtRest = fds(d);
        rssAtRest = d.memory().rss;
      });
      after(async () => {
        daemons.delete(d);
        await d?.stop('SIGKILL');
      });

      const closes = fe === 'uws' && listener !== 'ops';
      test(
        `accepted and held: honest clients of all three listeners are served meanwhile, nothing reaches the apiserver${closes ? ', the daemon closes them itself (idle timeout)' : ''}, and once they are gone the daemon's fds are back`,
        async (t) => {
          const leakedBefore = leaked.length;
          const f = await flood(port(d, listener), n, isTLS(listener));
          try {
            assert.equal(f.errors, 0, `${f.errors} of ${n} connections failed to open`);
            // Accepted by the daemon, not only queued in the kernel: its own fds count them.
            const { ms: acceptedMs } = await eventually(
              () => {
                if (!alive(d)) throw new GiveUp(`the daemon died:\n${d.stderr().slice(-600)}`);
                return fds(d) >= fdsAtRest + n * 0.99;
              },
              { what: `the daemon holds the ${n} connections (fds ${fds(d)}, at rest ${fdsAtRest})`, timeoutMs: 30_000, intervalMs: 100 },
            );
            const peakFds = fds(d);
            const during = await honestAll(d);
            peakRss = d.memory().rss;
            t.diagnostic(`${n} opened in ${f.openMs} ms, held by the daemon ${acceptedMs} ms later (fds ${fdsAtRest} -> ${peakFds}); honest clients meanwhile: ${show(during)}; RSS ${mib(rssAtRest)} -> ${mib(peakRss)} MiB`);
            assert.ok(
              during.every((h) => h.status === 200),
              `honest clients while ${n} idle connections are held on the ${listener} listener: ${show(during)}`,
            );
            if (closes) {
              await eventually(
                () => f.closedByDaemon.length === n,
                { what: `the daemon closed the idle connections (${f.closedByDaemon.length} of ${n})`, timeoutMs: 30_000, intervalMs: 200 },
              );
              const c = [...f.closedByDaemon].sort((a, b) => a - b);
              t.diagnostic(`the daemon closed all ${n} after ${seconds(c[0]!)}-${seconds(c[c.length - 1]!)}`);
            } else t.diagnostic(`closed by the daemon before the attacker left: ${f.closedByDaemon.length} (node's timeouts are 60-120 s: the probes measure them)`);
          } finally {
            f.goAway();
            gone = true;
          }
          const { ms } = await eventually(
            () => {
              if (!alive(d)) throw new GiveUp(`the daemon died:\n${d.stderr().slice(-600)}`);
              return fds(d) <= fdsAtRest + 2;
            },
            { what: `the daemon's fds back to ${fdsAtRest} (+2) once the attacker is gone (now ${fds(d)})`, timeoutMs: 15_000, intervalMs: 100 },
          );
          t.diagnostic(`fds back to ${fds(d)} ${ms} ms after the attacker left`);
          assert.deepEqual(leaked.slice(leakedBefore), [], 'nothing but honest requests reached the apiserver');
          assert.equal((await honest(d, listener)).status, 200, 'served after the attack');
        },
      );

      test('the memory the idle connections held is given back once they are gone (RSS back within 50 % of the daemon at rest)', async (t) => {
        assert.ok(gone, 'the flood ran');
        let rss = d.memory().rss;
        try {
          // Bounded: the full collection runs 2-4 s after the burst (lifecycle/memory.ts), and jemalloc's
          // background thread gives the freed pages back gradually over its 10 s decay (docs/deploy.md
          // "Memory"); 40 s is that twice over, for a busy CI machine (the failures seen were at 20 s).
          // The assertion below says how far off it is.
          await eventually(() => (rss = d.memory().rss) <= rssAtRest * MEMORY_SLACK, { what: 'RSS back within 50 %', timeoutMs: 40_000, intervalMs: 500 }).catch(() => undefined);
        } finally {
          t.diagnostic(`RSS ${mib(rssAtRest)} MiB at rest, ${mib(peakRss)} MiB with the ${n} connections held, ${mib(rss)} MiB after they went away; V8 heap now ${await heapOf(d)}`);
        }
        assert.ok(rss <= rssAtRest * MEMORY_SLACK, `${mib(rss)} MiB after the ${n} idle connections went away, ${mib(rssAtRest)} MiB at rest (peak ${mib(peakRss)} MiB; V8 heap ${await heapOf(d)})`);
      });
    });
  }
}

for (const fe of FRONTENDS) {
  describe(`${fe} front end: idle and slowloris probes (${PROBES_PER_KIND} of each kind on each listener at once, watched for up to ${WINDOW_MS / 1000} s)`, () => {
    for (const listener of LISTENERS) {
      for (const kind of kindsOf(fe, listener)) {
        test(`${listener} listener, ${KIND_TEXT[kind]}: closed by the daemon`, async (t) => {
          const run = probeRuns.get(fe);
          assert.ok(run, 'the probes started');
          const mine = await settled(run, listener, kind);
          const closed = mine.map((p) => p.closedAfter).filter((x): x is number => x !== undefined).sort((a, b) => a - b);
          const answers = [...new Set(mine.map((p) => firstBytes(p.first)))];
          const kube = listener === 'ops' ? '' : `; ${KUBE_APISERVER[kind]}`;
          t.diagnostic(`${closed.length} of ${mine.length} closed by the daemon${closed.length ? ` after ${seconds(closed[0]!)}-${seconds(closed[closed.length - 1]!)}` : ''}; it sent: ${answers.join(' | ')}${kube}`);
          assert.ok(alive(run.daemon), `the daemon died:\n${run.daemon.stderr().slice(-600)}`);
          assert.equal(closed.length, mine.length, `${mine.length - closed.length} of ${mine.length} still open ${seconds(Date.now() - run.started)} after they were opened${kube}`);
        });
      }
    }

    test('honest clients of every listener were served all along; nothing from the attack reached the apiserver; its fds are back once the attacker goes away', async (t) => {
      const run = probeRuns.get(fe);
      assert.ok(run, 'the probes started');
      const worst = (l: ListenerName) => Math.max(...run.honest.filter((h) => h.listener === l).map((h) => h.ms));
      t.diagnostic(`${run.honest.length} honest requests during the probes; slowest per listener: ${LISTENERS.map((l) => `${l} ${worst(l)} ms`).join(', ')}`);
      assert.ok(run.honest.length >= LISTENERS.length, 'honest clients asked while the probes were held');
      const failed = run.honest.filter((h) => h.status !== 200);
      assert.deepEqual(failed, [], `honest requests not served: ${show(failed)}`);
      assert.deepEqual(leaked.filter((u) => u.includes('attack=')), [], 'no attack request reached the apiserver');
      run.stop();
      const { ms } = await eventually(
        () => {
          if (!alive(run.daemon)) throw new GiveUp(`the daemon died:\n${run.daemon.stderr().slice(-600)}`);
          return fds(run.daemon) <= run.fdsAtRest + 2;
        },
        { what: `the daemon's fds back to ${run.fdsAtRest} (+2) (now ${fds(run.daemon)})`, timeoutMs: 15_000, intervalMs: 100 },
      );
      t.diagnostic(`fds back to ${fds(run.daemon)} ${ms} ms after the attacker left`);
    });
  });
}
