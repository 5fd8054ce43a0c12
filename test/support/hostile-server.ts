// A hostile (or buggy) upstream on a raw net.Server or tls.Server, for the attacks from the upstream
// side (test/security/hostile-upstream.test.ts, peer-route-upgrades.test.ts): it plays the local
// kube-apiserver (plain TCP) or a peer mvproxy's peer listener (mutual TLS, a serving certificate
// of the cluster CA), answers discovery and /readyz honestly so a daemon routes to it, and answers
// every other request with whatever bytes the test scripts, on the socket the request came on. It
// records every byte received and splits requests as loosely as lenient-upstream.ts does (a head
// ends at the first CRLF CRLF, the body by chunked or the last Content-Length), so a request
// smuggled to it is seen as one; after a `tunnel` answer (a 101) nothing more is split.

import net from 'node:net';
import tls from 'node:tls';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimApiserver, type SimApiserver } from '../../src/sim';
import { DISCOVERY_ACCEPT_NOPEER } from '../../src/snapshot/fetch';
import { createClusterPKI, type ClusterPKI } from '../../src/pki/bundle';
import type { Daemon } from '../../src/daemon';
import type { DaemonConfig, Frontend } from '../../src/config/types';
import { startTestDaemon } from './daemon';
import { lenientHead } from './lenient-upstream';

export interface HostileRequest {
  /** Connection number, 0-based, in accept order. */
  conn: number;
  /** The head exactly as received, final blank line included. */
  head: string;
  method: string;
  target: string;
  body: Buffer;
  /** The head has an Upgrade field. */
  upgrade: boolean;
  /** The CN of the client certificate the connection presented (TLS), or ''. */
  clientCN: string;
}

export interface HostileConn {
  readonly id: number;
  readonly socket: net.Socket;
}

/** What the server does after a scripted answer: keep splitting requests (default), or treat what follows as tunnel bytes. */
export type AfterAnswer = void | 'tunnel';

/** A discovery document as served: content type and body. */
export interface ServedDocument {
  contentType: string;
  body: Buffer;
}

export interface HostileServerOptions {
  /** Absent: plain TCP (the local apiserver). Present: TLS asking for a client certificate from `ca`. */
  tls?: { cert: string; key: string; ca: string };
  /** /api and /apis (any query), answered 200 with this document when given. */
  discovery?: Partial<Record<'/api' | '/apis', ServedDocument>>;
  /** Every other request (discovery paths without a document, /readyz and the daemon's own lists are answered here when this returns false). */
  answer(r: HostileRequest, c: HostileConn): boolean | AfterAnswer;
}

export interface HostileServer {
  readonly port: number;
  readonly address: string;
  readonly url: string;
  /** Every request split off, in arrival order (discovery, probes and the daemon's own lists included). */
  readonly requests: HostileRequest[];
  /** Requests the daemon forwarded for a client: they carry X-Forwarded-For, which mvproxy's own fetches never do. */
  clientRequests(): HostileRequest[];
  /** Every byte received on each connection (latin1). */
  readonly raw: string[];
  /** Bytes received after a 'tunnel' answer, per connection. */
  readonly tunnelled: string[];
  /** Connections opened so far, and those the other side (the daemon) or the server closed. */
  readonly accepted: number;
  readonly closed: Set<number>;
  /** The sockets still open, by connection number. */
  readonly sockets: Map<number, net.Socket>;
  /** Forget what was recorded (connection numbers keep counting). */
  reset(): void;
  close(): Promise<void>;
}

const NOT_FOUND = '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"NotFound","code":404}';

/** A small JSON answer with a Content-Length, kept alive. */
export function jsonAnswer(status: number, body: string, extra = ''): string {
  return `HTTP/1.1 ${status} X\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** Sec-WebSocket-Accept for a client's Sec-WebSocket-Key (RFC 6455 §4.2.2). */
export function webSocketAccept(key: string): string {
  return createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
}

/** The first value of a field in a recorded head (name case-insensitive), or undefined. */
export function field(head: string, name: string): string | undefined {
  return fields(head, name)[0];
}

/** Every value of a field in a recorded head (name case-insensitive), in order. */
export function fields(head: string, name: string): string[] {
  const out: string[] = [];
  for (const line of head.split('\r\n').slice(1)) {
    const c = line.indexOf(':');
    if (c > 0 && line.slice(0, c).toLowerCase() === name.toLowerCase()) out.push(line.slice(c + 1).trim());
  }
  return out;
}

export async function startHostileServer(o: HostileServerOptions): Promise<HostileServer> {
  const requests: HostileRequest[] = [];
  const raw: string[] = [];
  const tunnelled: string[] = [];
  const closed = new Set<number>();
  const sockets = new Map<number, net.Socket>();
  let accepted = 0;

  const onSocket = (sock: net.Socket) => {
    const conn = accepted++;
    sockets.set(conn, sock);
    sock.setNoDelay(true);
    sock.on('error', () => undefined);
    sock.on('close', () => {
      sockets.delete(conn);
      closed.add(conn);
    });
    let clientCN = '';
    if (sock instanceof tls.TLSSocket) {
      const cn = sock.getPeerCertificate()?.subject?.CN;
      clientCN = Array.isArray(cn) ? cn.join(',') : (cn ?? '');
    }
    let buf = Buffer.alloc(0);
    let tunnel = false;
    sock.on('data', (d: Buffer) => {
      raw[conn] = (raw[conn] ?? '') + d.toString('latin1');
      if (tunnel) {
        tunnelled[conn] = (tunnelled[conn] ?? '') + d.toString('latin1');
        return;
      }
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const t = take(buf, conn, clientCN);
        if (t === null) break;
        buf = buf.subarray(t.used);
        requests.push(t.req);
        const after = respond(t.req, { id: conn, socket: sock });
        if (after === 'tunnel') {
          tunnel = true;
          if (buf.length > 0) tunnelled[conn] = (tunnelled[conn] ?? '') + buf.toString('latin1');
          buf = Buffer.alloc(0);
          break;
        }
      }
    });
  };

  const respond = (r: HostileRequest, c: HostileConn): AfterAnswer => {
    const path = r.target.split('?')[0];
    const doc = path === '/api' || path === '/apis' ? o.discovery?.[path] : undefined;
    if (doc !== undefined) {
      c.socket.write(`HTTP/1.1 200 OK\r\nContent-Type: ${doc.contentType}\r\nContent-Length: ${doc.body.length}\r\n\r\n`);
      c.socket.write(doc.body);
      return;
    }
    const out = o.answer(r, c);
    if (out === 'tunnel') return 'tunnel';
    if (out !== false) return;
    if (path === '/readyz' || path === '/livez' || path === '/healthz') c.socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok');
    else c.socket.write(jsonAnswer(404, NOT_FOUND));
  };

  const server = o.tls
    ? tls.createServer({ cert: o.tls.cert, key: o.tls.key, ca: o.tls.ca, requestCert: true, rejectUnauthorized: true, ALPNProtocols: ['http/1.1'] }, onSocket)
    : net.createServer(onSocket);
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    address: `127.0.0.1:${port}`,
    url: `${o.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    requests,
    clientRequests: () => requests.filter((r) => /\r\nx-forwarded-for:/i.test(r.head)),
    raw,
    tunnelled,
    get accepted() {
      return accepted;
    },
    closed,
    sockets,
    reset() {
      requests.length = 0;
      raw.length = 0;
      tunnelled.length = 0;
    },
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets.values()) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Splits one request off the front of buf, leniently; null: more bytes needed. */
function take(buf: Buffer, conn: number, clientCN: string): { req: HostileRequest; used: number } | null {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const head = buf.subarray(0, end + 4).toString('latin1');
  const { method, target, chunked, length, upgrade } = lenientHead(head.split('\r\n'));
  const start = end + 4;
  if (chunked) {
    const parts: Buffer[] = [];
    let i = start;
    for (;;) {
      const eol = buf.indexOf('\r\n', i);
      if (eol < 0) return null;
      const size = parseInt(buf.subarray(i, eol).toString('latin1').split(';')[0]!, 16) || 0;
      if (size === 0) {
        const te = buf.indexOf('\r\n\r\n', eol);
        if (te < 0) return null;
        return { req: { conn, head, method, target, body: Buffer.concat(parts), upgrade, clientCN }, used: te + 4 };
      }
      if (buf.length < eol + 2 + size + 2) return null;
      parts.push(Buffer.from(buf.subarray(eol + 2, eol + 2 + size)));
      i = eol + 2 + size + 2;
    }
  }
  if (buf.length < start + length) return null;
  return { req: { conn, head, method, target, body: Buffer.from(buf.subarray(start, start + length)), upgrade, clientCN }, used: start + length };
}

// ---------- a daemon whose one peer is hostile ----------

/**
 * Aggregated discovery as a simulated apiserver of `version` serves it to a peer's question (the
 * Accept mvproxy's discovery fetch sends), for a hostile server to answer honestly with.
 */
export async function simDiscovery(version: 'v1.33' | 'v1.37'): Promise<Record<'/api' | '/apis', ServedDocument>> {
  const sim = await startSimApiserver({ name: `discovery-${version}`, kubernetesVersion: version, recordLimit: 0 });
  try {
    const get = async (path: '/api' | '/apis'): Promise<ServedDocument> => {
      const r = await fetch(sim.url + path, { headers: { accept: DISCOVERY_ACCEPT_NOPEER } });
      if (r.status !== 200) throw new Error(`sim ${path}: ${r.status}`);
      return { contentType: r.headers.get('content-type') ?? '', body: Buffer.from(await r.arrayBuffer()) };
    };
    return { '/api': await get('/api'), '/apis': await get('/apis') };
  } finally {
    await sim.close();
  }
}

export const HOSTILE_PEER_ID = 'mvproxy-hostile-peer';

export interface BesideHostilePeer {
  daemon: Daemon;
  /** This member's own (honest) simulated apiserver, v1.33; close it to make the local apiserver "down". */
  local: SimApiserver;
  /** The one peer: a hostile server speaking mutual TLS, serving v1.37 discovery. */
  peer: HostileServer;
  pki: ClusterPKI;
  close(): Promise<void>;
}

/**
 * One mvproxy (its client listener plain HTTP, or TLS taking client certificates of the cluster CA
 * with `clientTLS`) beside an honest v1.33 apiserver, with one static peer: a hostile server on
 * mutual TLS that presents a serving certificate of the cluster CA (as a peer's listener does),
 * answers discovery as a v1.37 apiserver, /readyz 200, and everything else as `answer` scripts.
 */
export async function startBesideHostilePeer(o: {
  frontend: Frontend;
  answer: HostileServerOptions['answer'];
  clientTLS?: boolean;
  /** Another local apiserver than the honest simulated one (which is started all the same, and closed with the rest). */
  localAPIServer?: string;
  configure?: (c: DaemonConfig) => void;
}): Promise<BesideHostilePeer> {
  const tmp = mkdtempSync(join(tmpdir(), 'mvproxy-hostile-'));
  const pki = await createClusterPKI(join(tmp, 'pki'));
  const [mine, theirs, docs] = await Promise.all([pki.node('member'), pki.node('hostile-peer'), simDiscovery('v1.37')]);
  const peer = await startHostileServer({
    tls: { cert: readFileSync(theirs.servingCert, 'latin1'), key: readFileSync(theirs.servingKey, 'latin1'), ca: pki.frontProxyCA.cert },
    discovery: docs,
    answer: o.answer,
  });
  const local = await startSimApiserver({ name: 'apiserver-local', kubernetesVersion: 'v1.33' });
  const daemon = await startTestDaemon({
    frontend: o.frontend,
    bindAddress: '127.0.0.1',
    localAPIServer: o.localAPIServer ?? local.url,
    peerTLSCertFile: mine.servingCert,
    peerTLSPrivateKeyFile: mine.servingKey,
    proxyClientCertFile: mine.proxyClientCert,
    proxyClientKeyFile: mine.proxyClientKey,
    peerCAFile: pki.clusterCAFile,
    requestheaderClientCAFile: pki.frontProxyCAFile,
    requestheaderAllowedNames: ['front-proxy-client'],
    connectTimeoutMs: 1000,
    requestTimeoutMs: 3000,
    discoveryRefreshIntervalMs: 60_000,
    peerProbeIntervalMs: 60_000,
    ...(o.clientTLS ? { tlsCertFile: mine.servingCert, tlsPrivateKeyFile: mine.servingKey, clientCAFile: pki.clusterCAFile } : {}),
  });
  o.configure?.(daemon.config);
  await daemon.setStaticPeers([{ id: HOSTILE_PEER_ID, address: peer.address }]);
  return {
    daemon,
    local,
    peer,
    pki,
    async close() {
      await daemon.close();
      await peer.close();
      await local.close();
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}
