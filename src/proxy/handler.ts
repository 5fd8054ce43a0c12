// The request path: parse → decide → forward. Reads only the published route table; the only
// await-like step is the upstream I/O itself (spec §2; Kubernetes peerproxy_handler.go).
//
//   client listener → handleClient(): RequestInfo, decide(), then local apiserver or a peer
//   peer listener   → handlePeer():   always the local apiserver (one hop, never proxied again)

import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { HealthChecks, HealthResponse } from '../observability/healthz';
import type { Exchange } from '../listener/exchange';
import { newRequestInfo, type RequestInfo } from '../request/requestinfo';
import { isLongRunning, streamHeadTimeoutMs } from '../request/longrunning';
import { decide } from '../routing/decide';
import { DECISION_NON_RESOURCE, DECISION_PROXY_DISABLED } from '../routing/decision';
import { serveDiscovery } from '../discovery/serve';
import { openAPIGroupVersion } from '../discovery/openapi';
import type { RouteTableHolder } from '../routing/holder';
import { forward, type HeldAnswer, isFailoverSafe, PeerDownError, type ForwardHandler } from '../upstream/forward';
import { carriesIdentity, forwardRequestHeaders, type IdentityHeaderRules } from '../upstream/headers';
import type { PeerPools } from '../upstream/pools';
import { ERRORS, type ErrorCode } from '../upstream/errors';
import { STATUS_CONTENT_TYPE } from '../respond/status';
import { errorResponse } from '../respond/error';
import { type InFlight, type Metrics, type Route, PROXY_ERROR_ENDPOINT_RESOLUTION } from '../observability/metrics';
import type { Logger } from '../observability/log';

export interface ProxyHandlerOptions {
  /** The local apiserver, presenting the front-proxy client certificate: for requests with identity headers. */
  local: Dispatcher;
  /** The local apiserver without a client certificate: for every other request (carriesIdentity). */
  localPlain: Dispatcher;
  peers: PeerPools;
  routes: RouteTableHolder;
  /** Feature gate UnknownVersionInteroperabilityProxy on and --peer-ca-file given; else a transparent proxy. */
  proxyEnabled: boolean;
  /** Answer legacy /apis, /apis/<g>, /apis/<g>/<v> for peer-only group/versions from the merged data. */
  legacyDiscoveryFix: boolean;
  /** Front-proxy identity header names (--requestheader-*-headers). */
  identityRules?: IdentityHeaderRules;
  requestTimeoutMs: number;
  metrics: Metrics;
  log: Logger;
  /** Picks the first peer to try among n candidates; random by default (in-tree: rand.Intn). */
  pickStart?: (n: number) => number;
}

export class ProxyHandler {
  private readonly pickStart: (n: number) => number;
  /** Non-long-running exchanges in flight, each with a deadline (--request-timeout as a whole). */
  private readonly timed = new Set<ForwardHandler>();
  /** Long-running exchanges (watches, logs -f), ended cleanly at shutdown, never timed out. */
  private readonly streams = new Set<ForwardHandler>();
  /**
   * One sweep for every deadline instead of a timer per request: a request is cut at most
   * DEADLINE_SWEEP_MS after its deadline (undici's headersTimeout/bodyTimeout only measure silence,
   * so a body that trickles or stalls half-way would otherwise hold a connection for ever).
   */
  private readonly sweeper: NodeJS.Timeout;
  /** Set at shutdown once the listeners stopped accepting: requests on kept-alive connections get 429. */
  draining = false;
  constructor(private readonly o: ProxyHandlerOptions) {
    this.pickStart = o.pickStart ?? ((n) => (n === 1 ? 0 : Math.floor(Math.random() * n)));
    this.logRequests = o.log.enabled(4);
    this.sweeper = setInterval(() => this.expireOverdue(), DEADLINE_SWEEP_MS);
    this.sweeper.unref();
  }

  /** Forwarded requests not yet answered (shutdown drains until it is 0). */
  get inflight(): number {
    return this.timed.size + this.streams.size;
  }

  private expireOverdue(): void {
    if (this.timed.size === 0) return;
    const now = performance.now();
    for (const h of this.timed) if (h.deadline < now) h.expire();
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  /**
   * mvproxy's own health checks (the ops listener's), set once the daemon has built them. On the
   * client port /livez, /readyz and /healthz answer with mvproxy's failure when one of its checks
   * fails (while it shuts down: /readyz with `[-]shutdown failed` at once), else with the local
   * apiserver's answer; so a load balancer probing the client port drains this node first.
   */
  health?: HealthChecks;
  /** --v=4 and above: one line per request (observe). */
  private readonly logRequests: boolean;

  /** A request from a client: the Mixed Version Proxy decision. */
  handleClient(ex: Exchange): void {
    const own = (ex.method === 'GET' || ex.method === 'HEAD') && this.health ? this.health.evaluate(ex.path, ex.query) : undefined;
    if (own?.status === 500) return writeHealth(ex, own);
    // A health path passes to the local apiserver also while draining (its /livez stays meaningful).
    if (this.draining && own === undefined) return writeStatus(ex, 'MVP_ERR_SHUTTING_DOWN');
    if (ex.refusal !== undefined) return writeStatus(ex, ex.refusal);
    // Only origin-form targets: an absolute-form (http://host/path) or asterisk-form (*) target would
    // be routed on one path while the apiserver reads another.
    if (ex.path.charCodeAt(0) !== 0x2f /* / */) return writeStatus(ex, 'MVP_ERR_BAD_REQUEST_TARGET');
    const start = performance.now();
    const info = newRequestInfo(ex.method, ex.path, ex.query);
    const d = this.o.proxyEnabled ? decide(info, ex.peerProxied, this.o.routes.current) : DECISION_PROXY_DISABLED;
    const ri = info instanceof Error ? undefined : info;
    // Discovery under /apis is answered from the published snapshot (merged, nopeer or legacy);
    // anything serveDiscovery declines (/api, v2beta1, yaml, ...) passes through to the apiserver.
    if (d === DECISION_NON_RESOURCE && this.o.proxyEnabled) {
      if (isApisPath(ex.path) && this.serveDiscovery(ex)) {
        this.observe('discovery', ri, 200, start, ex);
        return;
      }
      if (ex.path.startsWith('/openapi/v3') && this.routeOpenAPI(ex, ri!, start)) return;
    }
    switch (d.kind) {
      case 'local':
        this.toLocal(ex, ri, start, false);
        return;
      case 'notFound': {
        // Nobody serves it by this node's snapshot. The snapshot can lag a peer by a refresh (a peer's
        // apiserver just restarted as a newer release, spec §8): a 404 here would tell a controller
        // that an object another client reads through that peer is gone. So a request without a
        // body (it can be sent again) that the local apiserver answers 404 is asked of each peer
        // before the 404 reaches the client. A request with a body gets the local answer.
        // A small body (a create, an update: Content-Length up to REPLAY_BODY_MAX) is read whole
        // first so it can be sent again; a larger or chunked one streams and gets the local answer.
        const peers = peersByAddress(this.o.routes.current.memberAddresses);
        const length = ex.body === null ? 0 : contentLength(ex.headers);
        if (peers.length === 0 || length === undefined || length > REPLAY_BODY_MAX) {
          this.toLocal(ex, ri, start, false);
          return;
        }
        if (ex.body === null) {
          this.toLocal(ex, ri, start, false, (held) => this.askPeersAfter404(ex, ri!, peers, 0, start, held));
          return;
        }
        readWhole(ex.body, length).then(
          (body) => {
            if (!ex.clientClosed) this.toLocal(ex, ri, start, false, (held) => this.askPeersAfter404(ex, ri!, peers, 0, start, held, body), body);
          },
          () => {
            if (!ex.clientClosed) this.fail(ex, 'MVP_ERR_BAD_FRAMING', 'local', ri, start);
          },
        );
        return;
      }
      case 'unavailable':
        // Known in the cluster but no serving peer has an address: 503, never a misleading 404.
        // Counted as upstream does (peerproxy_handler.go WrapHandler): an endpoint_resolution error,
        // and no rerouted request, since nothing was proxied.
        this.o.metrics.peerProxyErrors.inc({ type: PROXY_ERROR_ENDPOINT_RESOLUTION, group: ri!.apiGroup, version: ri!.apiVersion, resource: ri!.resource });
        this.fail(ex, 'MVP_ERR_PEER_NO_ENDPOINT', 'peer', ri, start);
        return;
      case 'peer':
        this.toPeer(ex, ri!, gvrOf(ri!), d.peers, this.pickStart(d.peers.length), 0, start);
        return;
    }
  }

  private serveDiscovery(ex: Exchange): boolean {
    let accept: string | undefined;
    let ifNoneMatch: string | undefined;
    const h = ex.headers;
    for (let i = 0; i < h.length; i += 2) {
      // First value of each, as Go's Header.Get.
      if (accept === undefined && h[i] === 'accept') accept = h[i + 1];
      else if (ifNoneMatch === undefined && h[i] === 'if-none-match') ifNoneMatch = h[i + 1];
    }
    return serveDiscovery(ex, this.o.routes.discovery, accept, ifNoneMatch, this.o.metrics, { legacyFix: this.o.legacyDiscoveryFix });
  }

  /**
   * /openapi/v3: the index with peer-only group/versions added; /openapi/v3/apis/<g>/<v> of a
   * group/version only peers serve: proxied to one of them (see discovery/openapi.ts).
   */
  private routeOpenAPI(ex: Exchange, ri: RequestInfo, start: number): boolean {
    if (ex.method !== 'GET' && ex.method !== 'HEAD') return false;
    const table = this.o.routes.current;
    if (ex.path === '/openapi/v3' || ex.path === '/openapi/v3/') {
      const index = this.o.routes.openAPIIndex;
      if (index === undefined) return false;
      ex.res.writeHead(200, { headers: ['content-type', 'application/json', 'cache-control', 'no-cache, private'], contentLength: index.length, contentType: 'application/json' }, false);
      if (ex.method === 'GET') ex.res.write(index);
      ex.res.end();
      this.observe('discovery', ri, 200, start, ex);
      return true;
    }
    const gv = openAPIGroupVersion(ex.path);
    if (!gv || !table.synced) return false;
    const route = table.lookupGroupVersion(gv[0], gv[1]);
    if (!route || route.servedLocally || route.peers.length === 0) return false;
    this.toPeer(ex, ri, { group: gv[0], version: gv[1], resource: '' }, route.peers, this.pickStart(route.peers.length), 0, start);
    return true;
  }

  /** A request that arrived on the peer listener from a verified peer: served by the local apiserver, never proxied again. */
  handlePeer(ex: Exchange): void {
    if (this.draining) return writeStatus(ex, 'MVP_ERR_PEER_SHUTTING_DOWN');
    if (ex.refusal !== undefined) return writeStatus(ex, ex.refusal);
    if (ex.path.charCodeAt(0) !== 0x2f /* / */) return writeStatus(ex, 'MVP_ERR_BAD_REQUEST_TARGET');
    const info = newRequestInfo(ex.method, ex.path, ex.query);
    this.toLocal(ex, info instanceof Error ? undefined : info, performance.now(), true);
  }

  private toLocal(ex: Exchange, ri: RequestInfo | undefined, start: number, fromPeer: boolean, on404?: (held: HeldAnswer) => void, body?: Buffer): void {
    const longRunning = ri !== undefined && isLongRunning(ri);
    // eslint-disable-next-line prefer-const
    let h: ForwardHandler | undefined; // assigned once dispatch returns; callbacks never run before that in practice
    // From the peer listener the source's x-kubernetes-peer-proxied: true passes on unchanged, so
    // the local apiserver (if it runs the in-tree filter too) also serves it locally; so do the
    // identity headers the source mvproxy wrote (the peer connection is verified), re-sent with
    // this node's proxy client certificate.
    const headers = forwardRequestHeaders(ex.headers, { remoteAddress: ex.remoteAddress, peerHop: false, identityRules: this.o.identityRules, identity: ex.identity, trustIdentityHeaders: fromPeer });
    h = forward(ex, carriesIdentity(headers, this.o.identityRules) ? this.o.local : this.o.localPlain, {
      headers,
      longRunning,
      requestTimeoutMs: longRunning ? streamHeadTimeoutMs(ex.query, this.o.requestTimeoutMs) : this.o.requestTimeoutMs,
      recordHead: this.logRequests,
      onDone: (status) => {
        this.settled(h, longRunning);
        this.observe('local', ri, status, start, ex, undefined, longRunning, h);
      },
      hold: on404 && {
        statuses: [404],
        then: (held) => {
          this.settled(h, longRunning);
          on404(held);
        },
      },
      body,
      onFailedBeforeResponse: (err) => {
        this.settled(h, longRunning);
        this.o.metrics.upstreamConnectErrors.inc({ route: 'local', peer: '' });
        this.o.log.info(2, 'local apiserver request failed', { err: errText(err), path: ex.path, fromPeer });
        this.fail(ex, timeoutCode(err) ?? 'MVP_ERR_LOCAL_UNAVAILABLE', 'local', ri, start);
      },
    });
    this.track(h, longRunning, start, 'local');
  }

  private track(h: ForwardHandler, longRunning: boolean, start: number, route: 'local' | 'peer', peerAddress = ''): void {
    if (h.done) return;
    h.route = route;
    h.peerAddress = peerAddress;
    if (longRunning) this.streams.add(h);
    else {
      // undici's own headers/body timeouts (the same bound) handle silences and release the socket;
      // the sweep, a second later, only catches what they cannot see (trickling or stalled bodies).
      h.deadline = start + this.o.requestTimeoutMs + DEADLINE_GRACE_MS;
      this.timed.add(h);
    }
  }

  private settled(h: ForwardHandler | undefined, longRunning: boolean): void {
    if (h === undefined) return;
    if (longRunning) this.streams.delete(h);
    else this.timed.delete(h);
  }

  /** What is being proxied now (mvproxy_inflight_requests, read at scrape time). */
  *inFlight(): Iterable<InFlight> {
    for (const h of this.streams) yield { route: h.route, longRunning: true };
    for (const h of this.timed) yield { route: h.route, longRunning: false };
  }

  /**
   * A peer failed its health probe: requests to it still waiting for an answer fail now instead of
   * at --request-timeout (a stalled peer keeps kept-alive connections open and never answers). As
   * a transport failure: a GET or HEAD fails over to another serving peer, else a 503 Status.
   * Requests it already answers (a watch streaming) are left alone. Returns how many failed.
   */
  abandonPeer(address: string, why: string): number {
    let n = 0;
    for (const set of [this.timed, this.streams]) {
      for (const h of [...set]) if (h.peerAddress === address && h.abandon(new PeerDownError(why))) n++;
    }
    return n;
  }

  /** Shutdown: ends every watch and log stream cleanly; returns how many there were. */
  endStreams(): number {
    const n = this.streams.size;
    for (const h of this.streams) h.endCleanly();
    return n;
  }

  /**
   * The local apiserver answered 404 for a resource no snapshot lists: peers[i], then the next on
   * its 404 or when it cannot answer; the last one's 404 is the client's. When no peer can answer
   * (unreachable, or its own apiserver down: 502/503/504, as while it restarts in an upgrade), the
   * local 404 stands, as in-tree for a resource no peer's discovery lists: a peer that served it
   * would be in the snapshot (and its outage a 503 there), and a peer past its grace period has
   * left routing on purpose.
   */
  private askPeersAfter404(ex: Exchange, ri: RequestInfo, peers: readonly string[], i: number, start: number, local404: HeldAnswer, body?: Buffer): void {
    const id = peers[i]!;
    const last = i === peers.length - 1;
    const next = () => (last ? this.answerHeld404(ex, ri, local404, start) : this.askPeersAfter404(ex, ri, peers, i + 1, start, local404, body));
    const address = this.o.routes.current.memberAddresses.get(id);
    const gvr = gvrOf(ri);
    if (address === undefined) return next();
    const longRunning = isLongRunning(ri);
    // eslint-disable-next-line prefer-const
    let h: ForwardHandler | undefined;
    h = forward(ex, this.o.peers.get(address), {
      headers: forwardRequestHeaders(ex.headers, { remoteAddress: ex.remoteAddress, peerHop: true, identityRules: this.o.identityRules, identity: ex.identity }),
      longRunning,
      requestTimeoutMs: longRunning ? streamHeadTimeoutMs(ex.query, this.o.requestTimeoutMs) : this.o.requestTimeoutMs,
      recordHead: this.logRequests,
      hold: {
        statuses: last ? PEER_CANNOT_ANSWER : PEER_PASSES_ON,
        then: (held) => {
          this.settled(h, longRunning);
          if (held.status !== 404) this.o.log.info(2, 'peer could not answer after a local 404', { peer: id, address, status: held.status, path: ex.path });
          next();
        },
      },
      body,
      onDone: (status) => {
        this.settled(h, longRunning);
        this.rerouted(status, gvr);
        this.observe('peer', ri, status, start, ex, id, longRunning, h);
      },
      onFailedBeforeResponse: (err) => {
        this.settled(h, longRunning);
        this.peerRequestFailed(ex, id, address, err);
        next();
      },
    });
    this.track(h, longRunning, start, 'peer', address);
  }

  /** The local apiserver's 404, held while the peers were asked, is the client's answer after all. */
  private answerHeld404(ex: Exchange, ri: RequestInfo, held: HeldAnswer, start: number): void {
    if (ex.clientClosed) return;
    const body = Buffer.concat(held.body);
    ex.res.writeHead(404, { ...held.head, contentLength: body.length }, false);
    if (body.length && ex.method !== 'HEAD') ex.res.write(body);
    ex.res.end();
    this.observe('local', ri, 404, start, ex, undefined, isLongRunning(ri));
  }

  /** Tries the candidates from index `first`, failing over to the next on a connect failure. */
  private toPeer(ex: Exchange, ri: RequestInfo, gvr: GVR, peers: readonly string[], first: number, tried: number, start: number): void {
    const table = this.o.routes.current;
    const id = peers[(first + tried) % peers.length];
    const address = table.peerAddresses.get(id);
    const longRunning = isLongRunning(ri);
    if (address === undefined) {
      // The peer left between decide() and now (a newer table was published): next one.
      this.nextPeerOrFail(ex, ri, peers, first, tried, start, gvr);
      return;
    }
    // eslint-disable-next-line prefer-const
    let h: ForwardHandler | undefined;
    h = forward(ex, this.o.peers.get(address), {
      headers: forwardRequestHeaders(ex.headers, { remoteAddress: ex.remoteAddress, peerHop: true, identityRules: this.o.identityRules, identity: ex.identity }),
      longRunning,
      requestTimeoutMs: longRunning ? streamHeadTimeoutMs(ex.query, this.o.requestTimeoutMs) : this.o.requestTimeoutMs,
      recordHead: this.logRequests,
      onDone: (status) => {
        this.settled(h, longRunning);
        this.rerouted(status, gvr);
        this.observe('peer', ri, status, start, ex, id, longRunning, h);
      },
      onFailedBeforeResponse: (err, bodyTouched) => {
        this.settled(h, longRunning);
        this.peerRequestFailed(ex, id, address, err);
        const timeout = timeoutCode(err);
        if (timeout === undefined && isFailoverSafe(err, ex.method, bodyTouched)) {
          this.nextPeerOrFail(ex, ri, peers, first, tried, start, gvr);
          return;
        }
        this.rerouted(ERRORS[timeout ?? 'MVP_ERR_PEER_UNAVAILABLE'].status, gvr);
        this.fail(ex, timeout ?? 'MVP_ERR_PEER_UNAVAILABLE', 'peer', ri, start);
      },
    });
    this.track(h, longRunning, start, 'peer', address);
  }

  private nextPeerOrFail(ex: Exchange, ri: RequestInfo, peers: readonly string[], first: number, tried: number, start: number, gvr: GVR): void {
    if (tried + 1 < peers.length && !ex.clientClosed) {
      this.toPeer(ex, ri, gvr, peers, first, tried + 1, start);
      return;
    }
    this.rerouted(503, gvr);
    this.fail(ex, 'MVP_ERR_PEER_UNAVAILABLE', 'peer', ri, start);
  }

  /**
   * A request to a peer failed before its answer: counted and logged against that peer. Not as
   * apiserver_peer_proxy_errors_total{type="proxy_transport"}: upstream counts that only when it
   * cannot build the round tripper (peerproxy_handler.go:255); a failed dial is "rerouted, code
   * 503" there, which the caller counts with the client's answer.
   */
  private peerRequestFailed(ex: Exchange, id: string, address: string, err: Error): void {
    this.o.metrics.upstreamConnectErrors.inc({ route: 'peer', peer: id });
    this.o.log.info(2, 'peer request failed', { peer: id, address, err: errText(err), path: ex.path });
  }

  /**
   * apiserver_rerouted_request_total, once per proxied resource request, with the status the client
   * got (upstream: peerproxy_handler.go:266). A non-resource request mvproxy proxies to a peer (an
   * OpenAPI document, resource '') is not one: upstream never proxies those.
   */
  private rerouted(status: number, gvr: GVR): void {
    if (gvr.resource !== '') this.o.metrics.reroutedRequests.inc({ code: String(status), ...gvr });
  }

  /**
   * One finished request: its latency in the histogram (not for streams: a watch's hours would
   * swamp it) and, at --v=4, one log line in the shape of Kubernetes' httplog ("HTTP" verb URI
   * latency userAgent srcIP resp) plus mvproxy's route. Off below --v=4: one boolean test.
   */
  private observe(route: Route, ri: RequestInfo | undefined, status: number, start: number, ex?: Exchange, peer?: string, longRunning = false, h?: ForwardHandler): void {
    const seconds = (performance.now() - start) / 1000;
    if (!longRunning) {
      this.o.metrics.requestDuration.observe({ route, verb: ri?.verb ?? 'unknown', code: codeClass(status) }, seconds);
      if (peer !== undefined) this.o.metrics.reroutedDuration.observe({ peer }, seconds);
    }
    if (this.logRequests && ex !== undefined) {
      // httplog's fields and order (verb URI latency userAgent audit-ID srcIP resp), then mvproxy's:
      // the route, and the upstream's share of the latency (request sent → response head).
      const auditID = h?.auditID || headerValue(ex.headers, 'audit-id');
      this.o.log.info(4, 'HTTP', {
        verb: ex.method,
        URI: ex.query ? `${ex.path}?${ex.query}` : ex.path,
        latency: `${(seconds * 1000).toFixed(3)}ms`,
        userAgent: headerValue(ex.headers, 'user-agent'),
        'audit-ID': auditID,
        srcIP: ex.remoteAddress,
        resp: status,
        route: peer ? `peer:${peer}` : route,
        ...(h && h.headAt ? { upstreamLatency: `${(h.headAt - h.sentAt).toFixed(3)}ms` } : {}),
      });
    }
  }

  /** Answers with the error's metav1.Status (the only place an error response is written). */
  fail(ex: Exchange, code: ErrorCode, route: Route, ri: RequestInfo | undefined, start: number): void {
    if (ex.clientClosed) return;
    const spec = ERRORS[code];
    writeStatus(ex, code);
    this.observe(route, ri, spec.status, start, ex, undefined, ri !== undefined && isLongRunning(ri));
  }
}

/** A peer asked after a local 404 (askPeersAfter404) that answers so has nothing to say about the resource: its apiserver is down or restarting. */
const PEER_CANNOT_ANSWER: readonly number[] = [502, 503, 504];
/** ...or that answers so, when more peers remain to be asked. */
const PEER_PASSES_ON: readonly number[] = [404, ...PEER_CANNOT_ANSWER];

/** The largest request body kept whole to be sent again to a peer (askPeersAfter404): Kubernetes objects written by controllers are a few KiB. */
const REPLAY_BODY_MAX = 1024 * 1024;

/** Content-Length as a number, or undefined when absent or not one (chunked bodies stream). */
function contentLength(headers: readonly string[]): number | undefined {
  const v = headerValue(headers, 'content-length');
  return /^\d+$/.test(v) ? Number(v) : undefined;
}

/** The whole body, which must be exactly `length` bytes. */
function readWhole(body: NodeJS.ReadableStream, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let got = 0;
    body.on('data', (c: Buffer) => {
      got += c.length;
      if (got > length) return reject(new Error('body longer than its Content-Length'));
      chunks.push(c);
    });
    body.once('end', () => (got === length ? resolve(Buffer.concat(chunks, got)) : reject(new Error('body shorter than its Content-Length'))));
    body.once('error', reject);
  });
}

/** One server ID per distinct peer address (two IDs behind one listener would be asked twice). */
function peersByAddress(addresses: ReadonlyMap<string, string>): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const [id, address] of addresses) {
    if (seen.has(address)) continue;
    seen.add(address);
    out.push(id);
  }
  return out;
}

/** The first value of a request header (names in Exchange.headers are lowercased). */
function headerValue(headers: readonly string[], name: string): string {
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) return headers[i + 1]!;
  return '';
}

/** A health answer in Kubernetes' text format (observability/healthz.ts). */
function writeHealth(ex: Exchange, h: HealthResponse): void {
  const body = Buffer.from(ex.method === 'HEAD' ? '' : h.body);
  const headers = Object.entries(h.headers).flat();
  ex.res.writeHead(h.status, { headers, contentLength: Buffer.byteLength(h.body), contentType: h.headers['content-type'] ?? 'text/plain; charset=utf-8' }, false);
  if (body.length) ex.res.write(body);
  ex.res.end();
}

/** Writes one of mvproxy's own errors as a metav1.Status. */
export function writeStatus(ex: Exchange, code: ErrorCode, message?: string): void {
  const { status, headers, body } = errorResponse(code, message);
  // Answered before the request body was read whole (the upstream died mid-upload): the front end
  // closes the connection after this response (ClientResponse contract).
  ex.res.writeHead(status, { headers, contentLength: body.length, contentType: STATUS_CONTENT_TYPE }, false);
  ex.res.write(body);
  ex.res.end();
}

interface GVR {
  group: string;
  version: string;
  resource: string;
}

function gvrOf(ri: RequestInfo): GVR {
  return { group: ri.apiGroup, version: ri.apiVersion, resource: ri.resource };
}

/** /apis, /apis/, /apis/<g>, /apis/<g>/<v>: the discovery paths mvproxy may answer itself. */
function isApisPath(path: string): boolean {
  return path.length >= 5 && path.charCodeAt(1) === 0x61 /* a */ && path.startsWith('/apis') && (path.length === 5 || path.charCodeAt(5) === 0x2f);
}

/** A timeout before anything reached the client: 504. A body that went silent counts too (its head was held back, so a Status can still be sent). */
function timeoutCode(err: Error & { code?: string }): ErrorCode | undefined {
  return err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT' || err.code === 'MVP_ERR_REQUEST_TIMEOUT' ? 'MVP_ERR_UPSTREAM_TIMEOUT' : undefined;
}

/** How often deadlines are checked: a request ends within this much of --request-timeout. */
const DEADLINE_SWEEP_MS = 250;
const DEADLINE_GRACE_MS = 1_000;

function errText(err: Error & { code?: string }): string {
  return err.code ? `${err.code}: ${err.message}` : err.message;
}

/** 2xx/3xx/4xx/5xx: bounded label values whatever the upstream sends. */
function codeClass(status: number): string {
  return status >= 500 ? '5xx' : status >= 400 ? '4xx' : status >= 300 ? '3xx' : status >= 200 ? '2xx' : '0';
}
