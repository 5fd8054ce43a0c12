// Keep-alive connection pools to the local kube-apiserver and to each peer's peer
// listener. Peer connections use mutual TLS: our --proxy-client-cert-file/--proxy-client-key-file
// as the client certificate, the peer's serving certificate checked against --peer-ca-file with
// server name kubernetes.default.svc whatever address is dialled (docs/kubernetes-mvp.md §2.3, BuildPeerProxy).

import type { TLSFiles } from './tls-files';
import { OriginPool } from './h1/origin';
import { OwnPool } from './own-client';
import { splitHostPort } from '../gocompat/net';

/** The server name Kubernetes checks a peer's serving certificate against (pkg/controlplane/apiserver/peer.go). */
export const PEER_SERVER_NAME = 'kubernetes.default.svc';

export type { TLSFiles } from './tls-files';

export interface PoolOptions {
  /** Connect timeout in ms; a dead upstream is reported as 503 within it. */
  connectTimeoutMs: number;
  tls?: TLSFiles;
  /** Each new TLS connection: the serving certificate's notAfter (Unix seconds) the other side presented. */
  onServerCertificate?: (notAfterSeconds: number) => void;
  /** How long an idle connection is kept when the server sends no Keep-Alive hint; 30 s unless set. */
  keepAliveTimeoutMs?: number;
  /** The relay's long-running requests share HTTP/2 sessions where the peer offers h2 (--upstream-http2). */
  http2?: boolean;
}

/**
 * A uWS peer listener closes a connection idle for 10 s (uWS's HTTP idle timeout, not settable in
 * this build) and sends no Keep-Alive hint: kept longer, a request could go out on a connection
 * the peer is closing and fail. node:https peers hint 30 s (keepAliveTimeout), which node's Agent follows.
 */
export const PEER_IDLE_TIMEOUT_MS = 5_000;

/**
 * How long the relay keeps an idle connection to the local apiserver: below kube-apiserver's own
 * idle close (90 s, secure_serving.go IdleTimeout), so it never races that close; an upstream that
 * hints a shorter Keep-Alive timeout (node:http servers, 5 s) lowers it per connection.
 */
export const LOCAL_IDLE_TIMEOUT_MS = 30_000;

/** The relay's connections to the local apiserver at `url` (upstream/h1/origin.ts). */
export function localRelay(url: URL, connectTimeoutMs: number, tls: TLSFiles | undefined, http2 = false): OriginPool {
  const { host, port, secure } = socketAddress(url);
  return new OriginPool({ host, port, authority: url.host, tls: secure ? tls : undefined, connectTimeoutMs, idleTimeoutMs: LOCAL_IDLE_TIMEOUT_MS, http2 });
}

/** A URL's host as a socket address takes it (an IPv6 address without brackets), and its port or the scheme's. */
function socketAddress(url: URL): { host: string; port: number; secure: boolean } {
  const secure = url.protocol === 'https:';
  const host = url.hostname.charCodeAt(0) === 0x5b /* [ */ ? url.hostname.slice(1, -1) : url.hostname;
  return { host, port: Number(url.port || (secure ? 443 : 80)), secure };
}

/**
 * The pool of mvproxy's own calls to `origin` (upstream/own-client.ts). No connection cap: a Lease
 * watch holds one for minutes. Idle sockets close after 30 s unless set (the apiserver's own
 * keep-alive is longer, so we close first and never race its close).
 */
export function createPool(url: URL, o: PoolOptions): OwnPool {
  const { host, port, secure } = socketAddress(url);
  return ownPool(host, port, secure, o);
}

function ownPool(host: string, port: number, secure: boolean, o: PoolOptions): OwnPool {
  return new OwnPool(host, port, secure, { ...o, keepAliveTimeoutMs: o.keepAliveTimeoutMs ?? LOCAL_IDLE_TIMEOUT_MS });
}

/**
 * Pools to peers by address, created on first use and closed when their address leaves the snapshot:
 * own-client.ts's for mvproxy's own calls (discovery fetches, probes), and the relay's own client's for the
 * requests it proxies (upstream/h1/origin.ts).
 */
export class PeerPools {
  private readonly pools = new Map<string, OwnPool>();
  private readonly relays = new Map<string, OriginPool>();
  /**
   * Pools out of use (their address left, or new TLS material) that still finish what they carry: a
   * watch keeps its connection for its whole life. close() ends them too.
   */
  private readonly retiredPools = new Set<OwnPool>();
  private readonly retiredRelays = new Set<OriginPool>();
  /** notAfter (Unix seconds) of the serving certificate each peer address presented last. */
  readonly certificateExpiry = new Map<string, number>();
  constructor(private readonly o: PoolOptions) {}

  get(address: string): OwnPool {
    let p = this.pools.get(address);
    if (!p) {
      // Split as the relay splits it (below), never through a URL parser: both dial the same host.
      const { host, port } = splitHostPort(address);
      p = ownPool(host, port, true, { ...this.o, keepAliveTimeoutMs: PEER_IDLE_TIMEOUT_MS, onServerCertificate: (notAfter) => this.certificateExpiry.set(address, notAfter) });
      this.pools.set(address, p);
    }
    return p;
  }

  /** The relay's connections to the peer listener at `address` (mutual TLS, PEER_SERVER_NAME, session resumption). */
  relay(address: string): OriginPool {
    let p = this.relays.get(address);
    if (!p) {
      const { host, port } = splitHostPort(address);
      p = new OriginPool({ host, port, authority: address, tls: this.o.tls, http2: this.o.http2, connectTimeoutMs: this.o.connectTimeoutMs, idleTimeoutMs: PEER_IDLE_TIMEOUT_MS, onServerCertificate: (notAfter) => this.certificateExpiry.set(address, notAfter) });
      this.relays.set(address, p);
    }
    return p;
  }

  /** Connections to peers open now through the relay's client: HTTP/1.1 ones, HTTP/2 sessions and their streams. */
  relayConnections(): { h1: number; h2: number; streams: number } {
    const r = { h1: 0, h2: 0, streams: 0 };
    for (const p of this.relays.values()) {
      r.h1 += p.open;
      r.h2 += p.h2?.sessionCount ?? 0;
      r.streams += p.h2?.streamCount ?? 0;
    }
    return r;
  }

  /** Closes pools for addresses no longer in use (gracefully: in-flight requests finish). */
  retain(addresses: Iterable<string>): void {
    const keep = new Set(addresses);
    for (const p of this.retiredRelays) if (p.open === 0 && !p.h2?.sessionCount) this.retiredRelays.delete(p);
    for (const [addr, p] of this.relays) {
      if (!keep.has(addr)) {
        this.relays.delete(addr);
        p.close();
        this.retiredRelays.add(p);
      }
    }
    for (const [addr, p] of this.pools) {
      if (!keep.has(addr)) {
        this.pools.delete(addr);
        this.certificateExpiry.delete(addr);
        this.retiredPools.add(p);
        void p
          .close()
          .catch(() => undefined)
          .then(() => this.retiredPools.delete(p));
      }
    }
  }

  /** Replaces the TLS material (certificate rotation): new pools are made on next use, old ones drain. */
  setTLS(tls: TLSFiles): void {
    this.o.tls = tls;
    const expiry = new Map(this.certificateExpiry);
    this.retain([]);
    for (const [a, t] of expiry) this.certificateExpiry.set(a, t);
  }

  /** Ends every connection at once, those of retired pools included. */
  async close(): Promise<void> {
    for (const p of [...this.relays.values(), ...this.retiredRelays]) p.destroy();
    this.relays.clear();
    this.retiredRelays.clear();
    const all = [...this.pools.values(), ...this.retiredPools];
    this.pools.clear();
    this.retiredPools.clear();
    await Promise.all(all.map((p) => p.destroy().catch(() => undefined)));
  }
}
