// Shared pieces of the fault tests in test/faults and test/slow (not a test file itself): one
// in-process mvproxy under observation, a fake local apiserver, and a scriptable fake *peer*
// (node:https with a serving certificate from the cluster CA, as a real peer listener has) that a
// test can kill, stall or slow down. Also a leak probe: active handles by type, open file
// descriptors and RSS, compared before and after a fault once everything idle has been closed.
import https from 'node:https';
import { createServer as createHttpServer } from 'node:http';
import type http from 'node:http';
import net from 'node:net';
import { readFileSync, readdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { request, type Agent } from 'undici';
import { createClusterPKI, type ClusterPKI, type NodeCertFiles } from '../../src/pki/bundle';
import type { Daemon } from '../../src/daemon';
import type { Frontend } from '../../src/config/types';
import { startTestDaemon } from '../support/daemon';
import { FRONTENDS } from '../support/frontends';
import { readFixture } from '../support/fixtures';
import { eventually, PollTimeout } from '../support/poll';

/** Aggregated discovery media type, as kubectl asks for it. */
export const AGG = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
/** Served by the fake peer (v1.37 API set) and not by the fake local apiserver (v1.33 set). */
export const PEER_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads';
/** Served by the fake local apiserver. */
export const LOCAL = '/api/v1/namespaces/default/configmaps';
export const API_DOC = Buffer.from(JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [{ metadata: { name: '' }, versions: [{ version: 'v1', resources: [{ resource: 'configmaps', scope: 'Namespaced', singularResource: 'configmap', verbs: ['create', 'get', 'list'] }] }] }] }));
export const APIS_V133 = readFixture('v1.33-0b1dcaba/aggregated_v2.json');
export const APIS_V137 = readFixture('v1.37.0-dev-6732d913/aggregated_v2.json');

export type Route = (req: http.IncomingMessage, res: http.ServerResponse) => boolean;

/**
 * A fake kube-apiserver that can be killed and revived on the same port: plain HTTP (a local
 * apiserver) or HTTPS with a serving certificate (a peer's peer listener; it asks for no client
 * certificate). /api and /apis serve aggregated discovery (`apis` can be swapped at any time).
 */
export interface FakeServer {
  readonly address: string;
  readonly url: string;
  readonly port: number;
  apis: Buffer;
  route: Route;
  /** Requests that reached it ("METHOD url"), discovery included. */
  readonly seen: string[];
  /** Kills it: every connection is reset at once and the port stops listening. */
  kill(): Promise<void>;
  /** Listens again on the same port. */
  revive(): Promise<void>;
  /** Closes its idle keep-alive connections (so the daemon's pool lets go of them). */
  closeIdle(): void;
  close(): Promise<void>;
}

export async function startFakeServer(o: { tls?: NodeCertFiles; apis: Buffer; route?: Route }): Promise<FakeServer> {
  const sockets = new Set<net.Socket>();
  const seen: string[] = [];
  const fake = { apis: o.apis, route: o.route ?? (() => false), seen } as FakeServer;
  // Connections (the TLS socket for https) and whether a request is being served on each.
  const busy = new Map<net.Socket, boolean>();
  // When each connection that has not carried a request yet opened (closeIdle).
  const unusedSince = new Map<net.Socket, number>();
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    busy.set(req.socket, true);
    unusedSince.delete(req.socket);
    res.on('close', () => {
      if (busy.has(req.socket)) busy.set(req.socket, false);
    });
    seen.push(`${req.method} ${req.url}`);
    if (req.url === '/readyz') {
      // mvproxy probes each peer's peer listener with GET /readyz (src/peers/health.ts); a test's
      // route may answer it otherwise (or never).
      if (fake.route(req, res)) return;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
      return;
    }
    if (req.url === '/api' || req.url === '/apis') {
      res.writeHead(200, { 'content-type': AGG });
      res.end(req.url === '/api' ? API_DOC : fake.apis);
      return;
    }
    if (!fake.route(req, res)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}');
    }
  };
  const make = (): http.Server => {
    const server = o.tls ? https.createServer({ cert: readFileSync(o.tls.servingCert), key: readFileSync(o.tls.servingKey), keepAliveTimeout: 30_000 }, handler) : createHttpServer({ keepAliveTimeout: 30_000 }, handler);
    const track = (s: net.Socket) => {
      busy.set(s, false);
      unusedSince.set(s, performance.now());
      s.on('close', () => {
        busy.delete(s);
        unusedSince.delete(s);
      });
      // node:http keeps its half of a connection open while a response is pending (allowHalfOpen):
      // when the daemon closes its side of a request this server never answers (/hang), close ours,
      // or the test's own server would hold the sockets the leak probe counts.
      s.on('end', () => s.destroy());
    };
    server.on('connection', (s: net.Socket) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      if (!o.tls) track(s);
    });
    if (o.tls) server.on('secureConnection', track);
    return server;
  };
  let server = make();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  Object.assign(fake, {
    address: `127.0.0.1:${port}`,
    url: `${o.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    async kill() {
      for (const s of sockets) {
        // An RST where the socket allows it, as for a killed process; a plain destroy otherwise.
        const raw = s as net.Socket & { _handle?: unknown };
        if (typeof raw.resetAndDestroy === 'function' && raw._handle) raw.resetAndDestroy();
        else s.destroy();
      }
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
    async revive() {
      server = make();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
    },
    closeIdle() {
      // Every connection not serving a request right now, including ones that never carried a
      // request (node's own closeIdleConnections() leaves those alone) once they are 500 ms old: a
      // younger one is a request on its way (a /readyz probe), and closing it under that request
      // made the daemon take its local apiserver for down and send an upload meant for it to the
      // peer (upload-faults, one CI run). A real apiserver closes only connections that carried one.
      const now = performance.now();
      for (const [s, b] of busy) if (!b && now - (unusedSince.get(s) ?? -Infinity) >= 500) s.destroy();
    },
    async close() {
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  });
  return fake;
}

export function startFakePeer(certs: NodeCertFiles, route?: Route): Promise<FakeServer> {
  return startFakeServer({ tls: certs, apis: APIS_V137, route });
}

/**
 * Peer health probe interval of the observed daemon (src/peers/health.ts): long, so that no probe
 * runs during a test. Probes open and close pooled connections every interval, which the leak
 * probe would count; and a probe that catches a killed peer keeps it unrouted until the next one.
 * A killed peer is then seen by the request path itself (a 503 Status from the failed connect).
 */
export const PEER_PROBE_INTERVAL_MS = 60_000;

export interface Observed {
  daemon: Daemon;
  base: string;
  local: FakeServer;
  peer: FakeServer;
  pki: ClusterPKI;
  certs: NodeCertFiles;
  /** Closes idle keep-alive connections on both fake servers (before a resource snapshot). */
  closeIdle(): void;
  close(): Promise<void>;
}

export interface ObservedOptions {
  frontend: Frontend;
  localRoute?: Route;
  peerRoute?: Route;
  requestTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** Default PEER_PROBE_INTERVAL_MS (60 s: no probe during a test). */
  peerProbeIntervalMs?: number;
}

/** The daemon under observation, in this process: fake local apiserver (v1.33 set), one fake peer (v1.37 set). */
export async function startObserved(o: ObservedOptions): Promise<Observed> {
  const tmp = mkdtempSync(join(tmpdir(), 'mvproxy-faults-'));
  const pki = await createClusterPKI(join(tmp, 'pki'));
  const [certs, peerCerts] = await Promise.all([pki.node('observed'), pki.node('fake-peer')]);
  const local = await startFakeServer({
    apis: APIS_V133,
    route: (req, res) => {
      if (o.localRoute?.(req, res)) return true;
      if (req.url?.startsWith(LOCAL)) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}');
        return true;
      }
      return false;
    },
  });
  const peer = await startFakePeer(peerCerts, o.peerRoute);
  const daemon = await startTestDaemon({
    serverID: 'mvproxy-observed',
    frontend: o.frontend,
    localAPIServer: local.url,
    peerCAFile: pki.clusterCAFile,
    proxyClientCertFile: certs.proxyClientCert,
    proxyClientKeyFile: certs.proxyClientKey,
    peerTLSCertFile: certs.servingCert,
    peerTLSPrivateKeyFile: certs.servingKey,
    requestheaderClientCAFile: pki.frontProxyCAFile,
    requestheaderAllowedNames: ['front-proxy-client'],
    staticPeers: [{ id: 'mvproxy-fake-peer', address: peer.address }],
    connectTimeoutMs: o.connectTimeoutMs ?? 1000,
    requestTimeoutMs: o.requestTimeoutMs ?? 3000,
    discoveryRefreshIntervalMs: 600_000,
    peerDiscoveryGraceMs: 600_000,
    peerProbeIntervalMs: o.peerProbeIntervalMs ?? PEER_PROBE_INTERVAL_MS,
  });
  await daemon.publisher.refresh();
  await daemon.publisher.mergesDone();
  return {
    daemon,
    base: `http://127.0.0.1:${daemon.clientPort}`,
    local,
    peer,
    pki,
    certs,
    closeIdle() {
      local.closeIdle();
      peer.closeIdle();
    },
    async close() {
      await daemon.close();
      await peer.close().catch(() => undefined);
      await local.close();
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/** GET through the daemon; resolves with status and body, or with the error code if the exchange failed. */
export async function get(base: string, path: string, agent: Agent, timeoutMs = 10_000): Promise<{ status: number; text: string; ms: number } | { error: string; ms: number }> {
  const t0 = Date.now();
  try {
    const r = await request(base + path, { dispatcher: agent, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const text = await r.body.text();
    return { status: r.statusCode, text, ms: Date.now() - t0 };
  } catch (e) {
    return { error: (e as { code?: string }).code ?? String(e), ms: Date.now() - t0 };
  }
}

/**
 * Requests to a locally served GVR in a loop until stop() (one at a time, ~20/s, bounded): a fault
 * elsewhere must not cost them a single error.
 */
export function localTraffic(base: string, agent: Agent): { stop(): Promise<{ ok: number; bad: string[] }> } {
  let running = true;
  let ok = 0;
  const bad: string[] = [];
  const loop = (async () => {
    while (running) {
      const r = await get(base, LOCAL, agent, 5000);
      if ('status' in r && r.status === 200) ok++;
      else bad.push(JSON.stringify(r));
      await sleep(50);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { ok, bad };
    },
  };
}

// ---------- leak probe ----------

let gcFn: (() => void) | undefined;
function gc(): void {
  if (!gcFn) {
    setFlagsFromString('--expose-gc');
    gcFn = runInNewContext('gc') as () => void;
  }
  gcFn();
}

export interface ResourceSnapshot {
  /** process.getActiveResourcesInfo() counted by type (TCPSocketWrap, Timeout, TCPServerWrap, ...). */
  resources: Record<string, number>;
  fds: number;
  rss: number;
}

export function snapshot(): ResourceSnapshot {
  gc();
  const resources: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) resources[r] = (resources[r] ?? 0) + 1;
  return { resources, fds: readdirSync('/proc/self/fd').length, rss: process.memoryUsage().rss };
}

/** What grew from `before` to `after` (resource types and fds); {} = nothing left behind. */
export function growth(before: ResourceSnapshot, after: ResourceSnapshot): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(after.resources)) if (n > (before.resources[k] ?? 0)) out[k] = n - (before.resources[k] ?? 0);
  if (after.fds > before.fds) out.fds = after.fds - before.fds;
  return out;
}

/**
 * Waits (bounded) until nothing has grown since `before`, closing idle keep-alive connections of
 * the fake servers on the way (idle pooled connections are not leaks, but they would be counted).
 * Returns the last growth seen ({} when settled) and the last snapshot.
 */
export async function settle(before: ResourceSnapshot, o: { closeIdle: () => void | Promise<void>; timeoutMs?: number }): Promise<{ grown: Record<string, number>; after: ResourceSnapshot }> {
  let after = snapshot();
  let grown = growth(before, after);
  try {
    await eventually(
      async () => {
        after = snapshot();
        grown = growth(before, after);
        if (Object.keys(grown).length === 0) return true;
        await o.closeIdle();
        return false;
      },
      { what: 'nothing grown since the baseline', timeoutMs: o.timeoutMs ?? 5000, intervalMs: 100 },
    );
  } catch (e) {
    if (!(e instanceof PollTimeout)) throw e;
    // The caller asserts on what is still grown, and says what it measured.
  }
  return { grown, after };
}

/** RSS may wobble; it must come back within this much of the baseline (V8/malloc slack). */
export const RSS_SLACK = 48 * 1024 * 1024;

export function frontends(): readonly Frontend[] {
  return FRONTENDS;
}

// ---------- route tables built by hand (one-hop property) ----------

export interface GVR {
  group: string;
  version: string;
  resource: string;
  /** A request path for it (namespaced resources in "default"). */
  path: string;
}

export const GVRS: readonly GVR[] = [
  { group: '', version: 'v1', resource: 'configmaps', path: '/api/v1/namespaces/default/configmaps' }, // every version serves it
  { group: 'scheduling.k8s.io', version: 'v1beta1', resource: 'workloads', path: '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads' }, // v1.37 only
  { group: 'networking.k8s.io', version: 'v1beta1', resource: 'servicecidrs', path: '/apis/networking.k8s.io/v1beta1/servicecidrs' }, // v1.33 only
  { group: 'example.com', version: 'v1', resource: 'widgets', path: '/apis/example.com/v1/widgets' }, // nobody
];

/** Aggregated discovery groups claiming exactly these GVRs (what RouteTable.build reads). */
export function groupsOf(gvrs: readonly GVR[]): import('../../src/aggregation/types').APIGroupDiscovery[] {
  const byGroup = new Map<string, Map<string, string[]>>();
  for (const g of gvrs) {
    let vs = byGroup.get(g.group);
    if (!vs) byGroup.set(g.group, (vs = new Map()));
    let rs = vs.get(g.version);
    if (!rs) vs.set(g.version, (rs = []));
    rs.push(g.resource);
  }
  return [...byGroup].map(([name, vs]) => ({
    metadata: { name },
    versions: [...vs].map(([version, rs]) => ({ version, resources: rs.map((resource) => ({ resource, scope: 'Namespaced', singularResource: resource, verbs: ['get', 'list'] })) })),
  }));
}
