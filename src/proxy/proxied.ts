// One client request on its way upstream, after routing decided where: it owns its attempts (one
// upstream/forward.ts ForwardHandler each), the failover between peers, its deadline, its metrics
// and its request log line. Each attempt reports back through AttemptOwner; the state that used to
// travel as positional parameters (candidates, first, tried, the held 404, the replayable body)
// lives here, so failing over is a method call, not a recursion.
//
//   toLocal()            the local apiserver (every local decision; the peer listener)
//   toLocalThenPeers()   notFound: the local apiserver; on its 404 each member's peer in turn
//   toPeers()            peer: the candidates from a random start, failing over on a safe failure

import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { Exchange } from '../listener/exchange';
import type { RequestInfo } from '../request/requestinfo';
import { isLongRunning, streamHeadTimeoutMs } from '../request/longrunning';
import { type AttemptOwner, ForwardHandler, type HeldAnswer, isFailoverSafe, isNotSent, isSafeMethod } from '../upstream/forward';
import { NotSentHeader } from '../api/headers';
import { carriesIdentity, forwardRequestHeaders, type IdentityHeaderRules } from '../upstream/headers';
import type { PeerPools } from '../upstream/pools';
import { ERRORS, type ErrorCode } from '../api/errors';
import { writeHeld, writeStatus } from '../respond/write';
import type { Metrics, Route } from '../observability/metrics';
import type { Logger } from '../observability/log';
import type { Snapshot } from '../snapshot/holder';
import { DEADLINE_GRACE_MS, type InflightRequests, type Tracked } from './inflight';
import type { HeldBodyBudget } from './held-bodies';

/** What every proxied request of one daemon shares (built once by ProxyHandler). */
export interface ProxyContext {
  /** The local apiserver, presenting the front-proxy client certificate: for requests with identity headers. */
  readonly local: Dispatcher;
  /** The local apiserver without a client certificate: for every other request (carriesIdentity). */
  readonly localPlain: Dispatcher;
  readonly peers: PeerPools;
  /** Front-proxy identity header names (--requestheader-*-headers). */
  readonly identityRules?: IdentityHeaderRules;
  readonly requestTimeoutMs: number;
  readonly metrics: Metrics;
  readonly log: Logger;
  /** --v=4 and above: one line per request (observe). */
  readonly logRequests: boolean;
  /** Picks the first peer to try among n candidates (in-tree: rand.Intn). */
  readonly pickStart: (n: number) => number;
  readonly inflight: InflightRequests;
  /** The budget a held request body (toLocalThenPeers) was reserved from; given back when the request ends. */
  readonly heldBodies: HeldBodyBudget;
}

export interface GVR {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
}

type Stage = 'local' | 'peers' | 'peersAfter404';

export class ProxiedRequest implements AttemptOwner, Tracked {
  readonly longRunning: boolean;
  route: 'local' | 'peer' = 'local';
  peerAddress = '';
  deadline = Infinity;
  private stage: Stage = 'local';
  private attempt: ForwardHandler | undefined;
  private tracked = false;
  /** The peer (server ID) of the attempt under way. */
  private peerID = '';
  /** Peer candidates, in the order they are tried from `first`. */
  private candidates: readonly string[] = [];
  private first = 0;
  private tried = 0;
  private gvr: GVR = NO_GVR;
  /** The local apiserver's 404, held while peers are asked (toLocalThenPeers). */
  private local404: HeldAnswer | undefined;
  /** The request body read whole, so it can be sent again (toLocalThenPeers); else the client's body streams. */
  private body: Buffer | undefined;
  /** Bytes of c.heldBodies that `body` holds, given back at settle(). */
  private heldBytes = 0;
  /** It arrived on the peer listener (logged with a local failure). */
  private fromPeer = false;

  constructor(
    private readonly c: ProxyContext,
    private readonly ex: Exchange,
    private readonly ri: RequestInfo | undefined,
    /** The snapshot the request was routed with: peer addresses are read from it, not from a newer one. */
    private readonly snap: Snapshot,
    private readonly start: number,
  ) {
    this.longRunning = ri !== undefined && isLongRunning(ri);
  }

  /**
   * To the local apiserver. From the peer listener (`fromPeer`) the source's
   * x-kubernetes-peer-proxied: true passes on unchanged, so the local apiserver (if it runs the
   * in-tree filter too) also serves it locally; so do the identity headers the source mvproxy wrote
   * (the peer connection is verified), re-sent with this node's proxy client certificate.
   */
  toLocal(fromPeer: boolean): void {
    this.stage = 'local';
    this.fromPeer = fromPeer;
    this.sendLocal(fromPeer, undefined);
  }

  /**
   * Nobody serves the resource by this snapshot, which can lag a peer by a refresh (a peer's
   * apiserver just restarted as a newer release, docs/kubernetes-mvp.md §8): the local apiserver is
   * asked first, and its 404 is held while each member's peer is asked in turn (askNextPeer).
   * `body`: the request body read whole (Content-Length up to REPLAY_BODY_MAX), so it can be sent again.
   */
  toLocalThenPeers(peers: readonly string[], body: Buffer | undefined, heldBytes: number): void {
    this.stage = 'local';
    this.candidates = peers;
    this.body = body;
    this.heldBytes = heldBytes;
    this.sendLocal(false, HOLD_LOCAL_404);
  }

  /** To one of `peers` (server IDs), from index `first`, failing over on a failure that is safe to retry. */
  toPeers(peers: readonly string[], first: number, gvr: GVR): void {
    this.stage = 'peers';
    this.candidates = peers;
    this.first = first;
    this.tried = 0;
    this.gvr = gvr;
    this.sendToCandidate();
  }

  private sendLocal(fromPeer: boolean, holdStatuses: readonly number[] | undefined): void {
    const c = this.c;
    const headers = forwardRequestHeaders(this.ex.headers, { remoteAddress: this.ex.remoteAddress, peerHop: false, identityRules: c.identityRules, identity: this.ex.identity, trustIdentityHeaders: fromPeer });
    this.route = 'local';
    this.peerAddress = '';
    this.peerID = '';
    this.send(carriesIdentity(headers, c.identityRules) ? c.local : c.localPlain, headers, holdStatuses);
  }

  private sendPeer(id: string, address: string, holdStatuses: readonly number[] | undefined): void {
    const c = this.c;
    this.route = 'peer';
    this.peerAddress = address;
    this.peerID = id;
    const headers = forwardRequestHeaders(this.ex.headers, { remoteAddress: this.ex.remoteAddress, peerHop: true, identityRules: c.identityRules, identity: this.ex.identity });
    this.send(c.peers.get(address), headers, holdStatuses);
  }

  private send(upstream: Dispatcher, headers: string[], holdStatuses: readonly number[] | undefined): void {
    const c = this.c;
    const attempt = new ForwardHandler(
      this.ex,
      {
        headers,
        longRunning: this.longRunning,
        requestTimeoutMs: this.longRunning ? streamHeadTimeoutMs(this.ex.query, c.requestTimeoutMs) : c.requestTimeoutMs,
        recordHead: c.logRequests,
        holdStatuses,
        body: this.body,
        fromAPIServer: this.route === 'local',
      },
      this,
    );
    this.attempt = attempt;
    if (!this.tracked) {
      this.tracked = true;
      if (!this.longRunning) this.deadline = this.start + c.requestTimeoutMs + DEADLINE_GRACE_MS;
      c.inflight.add(this);
    }
    attempt.dispatch(upstream); // may fail over, or settle, before it returns
  }

  /** The next candidate of toPeers, or a 503 Status when none is left. */
  private sendToCandidate(): void {
    while (this.tried < this.candidates.length && !this.ex.clientClosed) {
      const id = this.candidates[(this.first + this.tried) % this.candidates.length]!;
      const address = this.snap.table.peerAddresses.get(id);
      if (address !== undefined) return this.sendPeer(id, address, undefined);
      this.tried++; // no address in this snapshot (cannot happen for a decision made from it; kept as a guard)
    }
    this.rerouted(503);
    this.fail('MVP_ERR_PEER_UNAVAILABLE', 'peer');
  }

  /**
   * After the local 404: candidates[tried], then the next on its 404 or when it cannot answer; the
   * last one's 404 is the client's. When no peer can answer (unreachable, or its own apiserver
   * down: 502/503/504, as while it restarts in an upgrade), the local 404 stands, as in-tree for a
   * resource no peer's discovery lists: a peer that served it would be in the snapshot (and its
   * outage a 503 there), and a peer past its grace period has left routing on purpose.
   */
  private askNextPeer(): void {
    while (this.tried < this.candidates.length) {
      const id = this.candidates[this.tried]!;
      const last = this.tried === this.candidates.length - 1;
      this.tried++;
      const address = this.snap.table.memberAddresses.get(id);
      if (address !== undefined) return this.sendPeer(id, address, last ? PEER_CANNOT_ANSWER : PEER_PASSES_ON);
    }
    this.answerLocal404();
  }

  /** The local apiserver's 404, held while the peers were asked, is the client's answer after all. */
  private answerLocal404(): void {
    this.settle();
    if (this.ex.clientClosed) return;
    writeHeld(this.ex, this.local404!);
    this.observe('local', 404);
  }

  /** A peer's held answer (asked after the local 404) is the client's: passing it on could run the request twice. */
  private answerHeld(held: HeldAnswer): void {
    this.settle();
    this.rerouted(held.status);
    if (this.ex.clientClosed) return;
    writeHeld(this.ex, held);
    this.observe('peer', held.status);
  }

  attemptDone(status: number): void {
    this.settle();
    if (this.route === 'local') return this.observe('local', status);
    this.rerouted(status);
    this.observe('peer', status);
  }

  attemptHeld(held: HeldAnswer): void {
    if (this.stage === 'local') {
      this.local404 = held;
      this.stage = 'peersAfter404';
      this.gvr = gvrOf(this.ri!);
      this.tried = 0;
    } else if (held.status !== 404) {
      this.c.log.info(2, 'peer could not answer after a local 404', { peer: this.peerID, address: this.peerAddress, status: held.status, path: this.ex.path });
      // A 502/503/504 may come after the peer's apiserver ran the request (a create that then timed
      // out): the next peer would run it again. Passed on only when that cannot be (mvproxy's own
      // "not sent" answer, NotSentHeader) or cannot matter (a safe method); else it is the answer.
      if (!isSafeMethod(this.ex.method) && !heldNotSent(held)) return this.answerHeld(held);
    }
    this.askNextPeer();
  }

  attemptFailed(err: Error, bodyTouched: boolean): void {
    const c = this.c;
    if (this.route === 'local') {
      c.metrics.upstreamConnectErrors.inc({ route: 'local', peer: '' });
      c.log.info(2, 'local apiserver request failed', { err: errText(err), path: this.ex.path, fromPeer: this.fromPeer });
      return this.fail(timeoutCode(err) ?? (isNotSent(err) ? 'MVP_ERR_LOCAL_UNAVAILABLE' : 'MVP_ERR_LOCAL_FAILED'), 'local');
    }
    // Counted and logged against that peer. Not as apiserver_peer_proxy_errors_total{type="proxy_transport"}:
    // upstream counts that only when it cannot build the round tripper (peerproxy_handler.go); a
    // failed dial is "rerouted, code 503" there, which is counted with the client's answer.
    c.metrics.upstreamConnectErrors.inc({ route: 'peer', peer: this.peerID });
    c.log.info(2, 'peer request failed', { peer: this.peerID, address: this.peerAddress, err: errText(err), path: this.ex.path });
    const timeout = timeoutCode(err);
    // After the local 404 the body is a replayable Buffer: the same rule as failover, by method.
    if (this.stage === 'peersAfter404' && timeout === undefined && isFailoverSafe(err, this.ex.method, false)) return this.askNextPeer();
    if (timeout === undefined && isFailoverSafe(err, this.ex.method, bodyTouched)) {
      this.tried++;
      return this.sendToCandidate();
    }
    this.rerouted(ERRORS[timeout ?? 'MVP_ERR_PEER_UNAVAILABLE'].status);
    this.fail(timeout ?? 'MVP_ERR_PEER_UNAVAILABLE', 'peer');
  }

  // Tracked: what the registry asks of the attempt under way.
  expire(): void {
    this.attempt?.expire();
  }

  abandon(err: Error): boolean {
    return this.attempt?.abandon(err) ?? false;
  }

  endCleanly(): void {
    this.attempt?.endCleanly();
  }

  private settle(): void {
    if (this.heldBytes > 0) {
      this.c.heldBodies.give(this.heldBytes);
      this.heldBytes = 0;
      this.body = undefined;
    }
    if (!this.tracked) return;
    this.tracked = false;
    this.c.inflight.delete(this);
  }

  /** Answers with the error's metav1.Status. */
  fail(code: ErrorCode, route: Route): void {
    this.settle();
    if (this.ex.clientClosed) return;
    writeStatus(this.ex, code);
    this.observe(route, ERRORS[code].status);
  }

  /**
   * apiserver_rerouted_request_total, once per proxied resource request, with the status the client
   * got (upstream: peerproxy_handler.go). A non-resource request mvproxy proxies to a peer (an
   * OpenAPI document, resource '') is not one: upstream never proxies those.
   */
  private rerouted(status: number): void {
    if (this.gvr.resource !== '') this.c.metrics.reroutedRequests.inc({ code: String(status), group: this.gvr.group, version: this.gvr.version, resource: this.gvr.resource });
  }

  private observe(route: Route, status: number): void {
    observe(this.c, this.ex, this.ri, route, status, this.start, this.longRunning, route === 'peer' ? this.peerID : undefined, this.attempt);
  }
}

/**
 * One finished request: its latency in the histogram (not for streams: a watch's hours would
 * swamp it) and, at --v=4, one log line in the shape of Kubernetes' httplog ("HTTP" verb URI
 * latency userAgent srcIP resp) plus mvproxy's route. Off below --v=4: one boolean test.
 */
export function observe(c: ProxyContext, ex: Exchange, ri: RequestInfo | undefined, route: Route, status: number, start: number, longRunning = false, peer?: string, attempt?: ForwardHandler): void {
  const seconds = (performance.now() - start) / 1000;
  if (!longRunning) {
    c.metrics.requestDuration.observe({ route, verb: ri?.verb ?? 'unknown', code: codeClass(status) }, seconds);
    if (peer !== undefined) c.metrics.reroutedDuration.observe({ peer }, seconds);
  }
  if (!c.logRequests) return;
  // httplog's fields and order (verb URI latency userAgent audit-ID srcIP resp), then mvproxy's:
  // the route, and the upstream's share of the latency (request sent → response head).
  c.log.info(4, 'HTTP', {
    verb: ex.method,
    URI: ex.query ? `${ex.path}?${ex.query}` : ex.path,
    latency: `${(seconds * 1000).toFixed(3)}ms`,
    userAgent: headerValue(ex.headers, 'user-agent'),
    'audit-ID': attempt?.auditID || headerValue(ex.headers, 'audit-id'),
    srcIP: ex.remoteAddress,
    resp: status,
    route: peer ? `peer:${peer}` : route,
    ...(attempt && attempt.headAt ? { upstreamLatency: `${(attempt.headAt - attempt.sentAt).toFixed(3)}ms` } : {}),
  });
}

export function gvrOf(ri: RequestInfo): GVR {
  return { group: ri.apiGroup, version: ri.apiVersion, resource: ri.resource };
}

/** The first value of a request header, as Go's Header.Get (names in Exchange.headers are lowercased); undefined when absent. */
export function firstValue(headers: readonly string[], name: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) return headers[i + 1];
  return undefined;
}

/** The first value of a request header, '' when absent. */
export function headerValue(headers: readonly string[], name: string): string {
  return firstValue(headers, name) ?? '';
}

const NO_GVR: GVR = Object.freeze({ group: '', version: '', resource: '' });

/** A held answer that mvproxy wrote itself and that says the request reached no apiserver (api/errors.ts notSent). */
function heldNotSent(held: HeldAnswer): boolean {
  const h = held.head.headers;
  for (let i = 0; i < h.length; i += 2) if (h[i]!.toLowerCase() === NotSentHeader) return h[i + 1] === 'true';
  return false;
}
/** The local apiserver's answer that sends a notFound request on to the peers. */
const HOLD_LOCAL_404: readonly number[] = [404];
/** A peer asked after a local 404 that answers so has nothing to say about the resource: its apiserver is down or restarting. */
const PEER_CANNOT_ANSWER: readonly number[] = [502, 503, 504];
/** ...or that answers so, when more peers remain to be asked. */
const PEER_PASSES_ON: readonly number[] = [404, ...PEER_CANNOT_ANSWER];

/** A timeout before anything reached the client: 504. A body that went silent counts too (its head was held back, so a Status can still be sent). */
function timeoutCode(err: Error & { code?: string }): ErrorCode | undefined {
  return err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT' || err.code === 'MVP_ERR_REQUEST_TIMEOUT' ? 'MVP_ERR_UPSTREAM_TIMEOUT' : undefined;
}

function errText(err: Error & { code?: string }): string {
  return err.code ? `${err.code}: ${err.message}` : err.message;
}

/** 2xx/3xx/4xx/5xx: bounded label values whatever the upstream sends. */
function codeClass(status: number): string {
  return status >= 500 ? '5xx' : status >= 400 ? '4xx' : status >= 300 ? '3xx' : status >= 200 ? '2xx' : '0';
}
