// The request path, stage by stage in request order (docs/architecture.md):
//
//   listener  → admission here: mvproxy's own health answers, draining, refused framing, origin-form
//   request   → RequestInfo (request/requestinfo.ts)
//   discovery → /apis and the /openapi/v3 index answered from the snapshot (discovery/serve.ts),
//               before routing, as Kubernetes serves discovery from its own handlers
//   routing   → decide() over the snapshot's route table (routing/decide.ts)
//   upstream  → a ProxiedRequest (proxied.ts) sends it to the local apiserver or a peer
//   respond   → mvproxy's own answers (respond/write.ts)
//
// Each request reads one snapshot (snapshot/holder.ts), taken once; the only await-like step is the
// upstream I/O itself (docs/kubernetes-mvp.md §2; Kubernetes peerproxy_handler.go WrapHandler).
//
//   client listener → handleClient(): the whole Mixed Version Proxy decision
//   peer listener   → handlePeer():   always the local apiserver (one hop, never proxied again)

import { performance } from 'node:perf_hooks';
import { ERRORS, ErrorCode } from '../api/errors';
import type { HealthChecks } from '../observability/healthz';
import type { Exchange } from '../listener/exchange';
import { isOriginForm } from '../listener/head-check';
import { newRequestInfo, type RequestInfo } from '../request/requestinfo';
import { isLongRunning } from '../request/longrunning';
import { discoveryAnswer, writeDiscoveryAnswer } from '../discovery/serve';
import { openAPIGroupVersion } from '../discovery/openapi';
import { decide } from '../routing/decide';
import { DECISION_PROXY_DISABLED } from '../routing/decision';
import { IdentityHeaderRules } from '../upstream/headers';
import type { OriginPool } from '../upstream/h1/origin';
import { newUpstreamAttempt, type AttemptFactory } from '../upstream/h1/attempt';
import type { PeerPools } from '../upstream/pools';
import { writeDocument, writeHealth, writeStatus } from '../respond/write';
import { type Metrics, PROXY_ERROR_ENDPOINT_RESOLUTION } from '../telemetry/metrics';
import type { Logger } from '../telemetry/log';
import type { Lifecycle } from '../lifecycle/state';
import type { Snapshot, SnapshotHolder } from '../snapshot/holder';
import { InflightRequests } from './inflight';
import { BodyTimeoutError, HeldBodyBudget, readWhole, REPLAY_BODY_MAX } from './held-bodies';
import { DiscoveryAccess } from './discovery-access';
import { firstValue, gvrOf, headerValue, localFailoverTarget, observe, ProxiedRequest, type ProxyContext } from './proxied';

export interface ProxyHandlerOptions {
  /** The local apiserver, presenting the front-proxy client certificate: for requests with identity headers. */
  local: OriginPool;
  /** The local apiserver without a client certificate: for every other request (carriesIdentity). */
  localPlain: OriginPool;
  peers: PeerPools;
  snapshots: SnapshotHolder;
  lifecycle: Lifecycle;
  /** Feature gate UnknownVersionInteroperabilityProxy on and --peer-ca-file given; else a transparent proxy. */
  proxyEnabled: boolean;
  /** Answer legacy /apis, /apis/<g>, /apis/<g>/<v> for peer-only group/versions from the merged data. */
  legacyDiscoveryFix: boolean;
  /** Front-proxy identity header names (--requestheader-*-headers). */
  identityRules?: IdentityHeaderRules;
  /** --discovery-access-ttl: how long a credential the apiserver let read discovery is not asked again (discovery-access.ts); 0 by default. */
  discoveryAccessTTLMs?: number;
  requestTimeoutMs: number;
  metrics: Metrics;
  log: Logger;
  /** Picks the first peer to try among n candidates; random by default (in-tree: rand.Intn). */
  pickStart?: (n: number) => number;
  /** --held-request-body-bytes: request bodies held at once for the retry after a local 404 (held-bodies.ts). */
  heldRequestBodyBytes: number;
  /** Makes each upstream attempt (tests script their own); the relay's client by default. */
  newAttempt?: AttemptFactory;
  /**
   * --local-failover: while the local apiserver is not serving (snapshot `local`), and for a request
   * it refused or answered "shutting down", what a peer can answer goes to a peer. `localHealth`
   * hears what the request path saw (snapshot/local-apiserver.ts).
   */
  localFailover?: boolean;
  localHealth?: { refused(why: string): void; shuttingDown(): void };
  /**
   * mvproxy's own health checks (the ops listener's). On the client port /livez, /readyz and
   * /healthz answer with mvproxy's failure when one of its checks fails (while it shuts down:
   * /readyz with `[-]shutdown failed` at once), else with the local apiserver's answer; so a load
   * balancer probing the client port drains this node first. Without them, those paths are proxied.
   */
  health?: HealthChecks;
}

export class ProxyHandler {
  /** The requests being proxied now (deadlines, abandoned peers, the streams a shutdown ends). */
  readonly inflight = new InflightRequests();
  /** Request bodies held for the retry after a local 404 (notFound), within --held-request-body-bytes. */
  readonly heldBodies: HeldBodyBudget;
  private readonly c: ProxyContext;
  private readonly localFailover: boolean;
  /** Credentials the apiserver let read discovery lately (discovery-access.ts). */
  private readonly access: DiscoveryAccess;

  constructor(private readonly o: ProxyHandlerOptions) {
    this.heldBodies = new HeldBodyBudget(o.heldRequestBodyBytes);
    this.c = {
      local: o.local,
      localPlain: o.localPlain,
      localHost: o.local.name,
      peers: o.peers,
      identityRules: o.identityRules ?? new IdentityHeaderRules(),
      requestTimeoutMs: o.requestTimeoutMs,
      metrics: o.metrics,
      log: o.log,
      logRequests: o.log.enabled(4),
      pickStart: o.pickStart ?? ((n) => (n === 1 ? 0 : Math.floor(Math.random() * n))),
      inflight: this.inflight,
      heldBodies: this.heldBodies,
      newAttempt: o.newAttempt ?? newUpstreamAttempt,
      localHealth: o.localHealth,
    };
    this.localFailover = (o.localFailover ?? false) && o.proxyEnabled;
    this.access = new DiscoveryAccess(o.discoveryAccessTTLMs ?? 0);
  }

  close(): void {
    this.inflight.close();
  }

  /**
   * Where a client's protocol upgrade (exec, attach, port-forward) goes: the address of a peer's
   * peer listener while the local apiserver is not serving and a peer serves the resource
   * (--local-failover, issue 30; counted as a failover by the local state), else undefined: the
   * local apiserver. Decided before anything is sent, so the upgrade never runs twice; one hop
   * (a request already marked peer-proxied stays local).
   */
  upgradePeer(method: string, url: string, peerProxied: string | undefined): string | undefined {
    if (!this.localFailover || peerProxied === 'true') return undefined;
    const snap = this.o.snapshots.current;
    if (snap.local === 'serving') return undefined;
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const info = newRequestInfo(method, path, q === -1 ? '' : url.slice(q + 1), snap.table.names, false);
    const f = localFailoverTarget(info instanceof Error ? undefined : info, path, snap);
    if (f === undefined) return undefined;
    const first = this.c.pickStart(f.peers.length);
    for (let i = 0; i < f.peers.length; i++) {
      const address = snap.table.peerAddresses.get(f.peers[(first + i) % f.peers.length]!);
      if (address === undefined) continue;
      this.o.metrics.localFailovers.inc({ reason: snap.local });
      return address;
    }
    return undefined;
  }

  /** A request from a client: the Mixed Version Proxy decision. */
  handleClient(ex: Exchange): void {
    // Admission.
    const own = (ex.method === 'GET' || ex.method === 'HEAD') && this.o.health ? this.o.health.evaluate(ex.path, ex.query) : undefined;
    if (own?.status === 500) return writeHealth(ex, own);
    if (ex.refusal !== undefined) return writeStatus(ex, ex.refusal.code, ex.refusal.message);
    if (ex.identityRefusal !== undefined) return writeStatus(ex, ErrorCode.MVP_ERR_CERTIFICATE_USER, ex.identityRefusal);
    // Only origin-form targets (listener/head-check.ts isOriginForm says why).
    if (!isOriginForm(ex.path)) return writeStatus(ex, ErrorCode.MVP_ERR_BAD_REQUEST_TARGET);
    const start = performance.now();
    const snap = this.o.snapshots.current;
    // Request.
    const info = newRequestInfo(ex.method, ex.path, ex.query, snap.table.names, /* selectorName */ false);
    const ri = info instanceof Error ? undefined : info;
    // While draining (mvproxy restarts: its own SIGTERM), a request that arrives on a connection
    // still open is served, and its answer closes the connection (ListenerState), as Go's
    // Server.Shutdown lets a request on a kept-alive connection finish: the apiserver behind is
    // up. It used to get a 429: 27-34 failed requests per restart at 100 GET/s (bench/restart.ts).
    // Only a long-running request (a watch, exec, logs -f) gets the 429: it would hold the drain to
    // its timeout, and its client starts it again, on a new connection.
    if (this.o.lifecycle.draining && own === undefined && ri !== undefined && isLongRunning(ri)) return writeStatus(ex, ErrorCode.MVP_ERR_SHUTTING_DOWN);
    // Discovery: what mvproxy answers from the snapshot; anything it declines (/api, v2beta1, yaml,
    // a peer-only OpenAPI document, ...) goes on to routing and the apiserver.
    if (this.o.proxyEnabled && ri !== undefined && !ri.isResourceRequest && this.serveDocuments(ex, ri, snap, start)) return;
    // Routing.
    const d = this.o.proxyEnabled ? decide(info, ex.peerProxied, snap.table) : DECISION_PROXY_DISABLED;
    // Upstream.
    const r = new ProxiedRequest(this.c, ex, ri, snap, start);
    switch (d.kind) {
      case 'local':
        return this.toLocal(r, ex, ri, snap);
      case 'notFound':
        return this.notFound(ex, r, snap);
      case 'unavailable':
        // Known in the cluster but no serving peer has an address: 503, never a misleading 404.
        // Counted as upstream does (peerproxy_handler.go WrapHandler): an endpoint_resolution error,
        // and no rerouted request, since nothing was proxied.
        this.o.metrics.peerProxyErrors.inc({ type: PROXY_ERROR_ENDPOINT_RESOLUTION, group: ri!.apiGroup, version: ri!.apiVersion, resource: ri!.resource });
        return r.fail(ErrorCode.MVP_ERR_PEER_NO_ENDPOINT, 'peer');
      case 'peer':
        return r.toPeers(d.peers, this.c.pickStart(d.peers.length), gvrOf(ri!));
    }
  }

  /** A request that arrived on the peer listener from a verified peer: served by the local apiserver, never proxied again. */
  handlePeer(ex: Exchange): void {
    if (this.o.lifecycle.draining) return writeStatus(ex, ErrorCode.MVP_ERR_PEER_SHUTTING_DOWN);
    if (ex.refusal !== undefined) return writeStatus(ex, ex.refusal.code, ex.refusal.message);
    if (!isOriginForm(ex.path)) return writeStatus(ex, ErrorCode.MVP_ERR_BAD_REQUEST_TARGET);
    const snap = this.o.snapshots.current;
    const info = newRequestInfo(ex.method, ex.path, ex.query, snap.table.names, /* selectorName */ false);
    const r = new ProxiedRequest(this.c, ex, info instanceof Error ? undefined : info, snap, performance.now());
    // The local apiserver is down (refused, or its /readyz unreachable): the source's request is not
    // sent to it but answered "not sent" at once, so the source may ask another peer or give its own
    // local 404 (issue 30: routed away before sending). A restarting apiserver accepts connections
    // before it serves; a create sent there ran or not, nobody could say.
    if (this.localFailover && snap.local === 'down') return r.fail(ErrorCode.MVP_ERR_LOCAL_UNAVAILABLE, 'local', 'the local kube-apiserver is down (its last probe); the request was not sent');
    r.toLocal(true);
  }

  /**
   * Discovery documents from the snapshot: /apis (merged, nopeer or legacy), the /openapi/v3 index
   * with peer-only group/versions, and /openapi/v3/apis/<g>/<v> of a group/version only peers serve
   * (proxied to one of them, see discovery/openapi.ts). False: not answered here.
   */
  private serveDocuments(ex: Exchange, ri: RequestInfo, snap: Snapshot, start: number): boolean {
    if (isApisPath(ex.path)) {
      // Not from a partial view (Snapshot.complete): a 503 the client retries, never a view that
      // lacks what only peers serve (the namespace controller finalized namespaces with it: issue 39).
      if (!snap.complete) {
        writeStatus(ex, ErrorCode.MVP_ERR_DISCOVERY_INCOMPLETE);
        observe(this.c, ex, ri, 'discovery', ERRORS.MVP_ERR_DISCOVERY_INCOMPLETE.status, start);
        return true;
      }
      const a = discoveryAnswer(ex, snap.discovery, firstValue(ex.headers, 'accept'), { legacyFix: this.o.legacyDiscoveryFix });
      if (a === undefined) return false;
      this.withAccess(ex, ri, snap, start, () => writeDiscoveryAnswer(ex, a, firstValue(ex.headers, 'if-none-match'), this.o.metrics));
      return true;
    }
    if (!ex.path.startsWith('/openapi/v3') || (ex.method !== 'GET' && ex.method !== 'HEAD')) return false;
    if (ex.path === '/openapi/v3' || ex.path === '/openapi/v3/') {
      const index = snap.openAPIIndex;
      if (index === undefined) return false;
      this.withAccess(ex, ri, snap, start, () => writeDocument(ex, index, 'application/json'));
      return true;
    }
    const gv = openAPIGroupVersion(ex.path);
    if (!gv || !snap.table.synced) return false;
    const route = snap.table.lookupGroupVersion(gv[0], gv[1]);
    if (!route || route.servedLocally || route.peers.length === 0) return false;
    new ProxiedRequest(this.c, ex, ri, snap, start).toPeers(route.peers, this.c.pickStart(route.peers.length), { group: gv[0], version: gv[1], resource: '' });
    return true;
  }

  /**
   * Writes a document of mvproxy's own once the apiserver says this client may read it
   * (discovery-access.ts): at once for a credential it granted within the TTL, else after the
   * client's own request came back from past its filters; any other answer is the client's. While
   * the local apiserver is not serving, a peer's apiserver decides (--local-failover, toLocal).
   */
  private withAccess(ex: Exchange, ri: RequestInfo, snap: Snapshot, start: number, write: () => void): void {
    const key = this.access.key(ex);
    const serve = (): void => {
      write();
      observe(this.c, ex, ri, 'discovery', 200, start);
    };
    const m = this.o.metrics.discoveryAccessChecks;
    if (this.access.allows(key, start)) {
      m.inc({ answer: 'remembered' });
      return serve();
    }
    const r = new ProxiedRequest(this.c, ex, ri, snap, start).authorizeThen(() => {
      m.inc({ answer: 'granted' });
      this.access.remember(key, performance.now());
      serve();
    });
    this.toLocal(r, ex, ri, snap);
  }

  /**
   * To the local apiserver. While it does not serve, what a peer can answer goes to a peer; while it
   * does, a request it refuses at once may still go (ProxiedRequest.failOverToPeers). Never for a
   * request a peer already proxied here: one hop.
   */
  private toLocal(r: ProxiedRequest, ex: Exchange, ri: RequestInfo | undefined, snap: Snapshot): void {
    if (!this.localFailover || ex.peerProxied === 'true') return r.toLocal(false);
    if (snap.local !== 'serving') {
      const f = localFailoverTarget(ri, ex.path, snap);
      if (f !== undefined) {
        this.o.metrics.localFailovers.inc({ reason: snap.local });
        return r.toPeers(f.peers, this.c.pickStart(f.peers.length), f.gvr);
      }
    }
    r.toLocal(false, true);
  }

  /**
   * Nobody serves it by this node's snapshot. The snapshot can lag a peer by a refresh (a peer's
   * apiserver just restarted as a newer release, docs/kubernetes-mvp.md §8): a 404 here would tell
   * a controller that an object another client reads through that peer is gone. So a request the
   * local apiserver answers 404 is asked of each peer before the 404 reaches the client. A body
   * (a create, an update: Content-Length up to REPLAY_BODY_MAX) is read whole first so it can be
   * sent again; a larger or chunked one streams and gets the local answer.
   */
  private notFound(ex: Exchange, r: ProxiedRequest, snap: Snapshot): void {
    const peers = snap.table.distinctMembers;
    const length = ex.body === null ? 0 : contentLength(ex.headers);
    if (peers.length === 0 || length === undefined || length > REPLAY_BODY_MAX) return r.toLocal(false);
    // --local-failover: what the local apiserver refuses goes to the peers (never a peer-proxied request).
    const failover = this.localFailover && ex.peerProxied !== 'true';
    if (ex.body === null) return r.toLocalThenPeers(peers, undefined, 0, failover);
    // Past the budget the body streams and the local answer stands, as for an oversized body.
    if (!this.heldBodies.take(length)) {
      this.o.log.info(2, 'request body not held for peers: --held-request-body-bytes is spent', { held: this.heldBodies.held, length, path: ex.path });
      return r.toLocal(false);
    }
    readWhole(ex.body, length, this.o.requestTimeoutMs).then(
      (body) => {
        if (ex.clientClosed) this.heldBodies.give(length);
        else r.toLocalThenPeers(peers, body, length, failover);
      },
      (err: Error) => {
        this.heldBodies.give(length);
        if (!ex.clientClosed) r.fail(err instanceof BodyTimeoutError ? ErrorCode.MVP_ERR_REQUEST_BODY_TIMEOUT : ErrorCode.MVP_ERR_BAD_FRAMING, 'local');
      },
    );
  }
}

/** Content-Length as a number, or undefined when absent or not one (chunked bodies stream). */
function contentLength(headers: readonly string[]): number | undefined {
  const v = headerValue(headers, 'content-length');
  return /^\d+$/.test(v) ? Number(v) : undefined;
}

/** /apis, /apis/, /apis/<g>, /apis/<g>/<v>: the discovery paths mvproxy may answer itself. */
function isApisPath(path: string): boolean {
  return path.length >= 5 && path.charCodeAt(1) === 0x61 /* a */ && path.startsWith('/apis') && (path.length === 5 || path.charCodeAt(5) === 0x2f);
}
