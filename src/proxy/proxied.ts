// One client request on its way upstream, after routing decided where. The per-attempt object
// reports, the request decides (Envoy's router filter and UpstreamRequest): each attempt
// (upstream/h1/attempt.ts) knows one connection and one response and reports head, body, end or
// failure through AttemptReport; this object makes every decision — relay or hold an answer, fail
// over to the next peer, answer with a Status, cut a stream — through one peer cursor (candidates,
// first, tried), and writes one record per request that feeds the metrics and the request log.
//
//   toLocal()            the local apiserver (every local decision; the peer listener)
//   toLocalThenPeers()   notFound: the local apiserver; on its 404 each member's peer in turn
//                        (--local-failover: also when it refused the connection or is shutting down)
//   toPeers()            peer: the candidates from a random start, failing over on a safe failure
//
// Deadlines are not timers of this object: proxy/inflight.ts sweeps every request in flight and
// calls expire() past its deadline (the whole request, or for a stream its head).

import { performance } from 'node:perf_hooks';
import type { Exchange } from '../listener/exchange';
import type { RequestInfo } from '../request/requestinfo';
import { isLongRunning, streamHeadTimeoutMs } from '../request/longrunning';
import type { Attempt, AttemptFactory, AttemptReport } from '../upstream/h1/attempt';
import type { OriginPool } from '../upstream/h1/origin';
import type { AttemptHead } from '../upstream/h1/attempt';
import { H2Attempt } from '../upstream/h2/attempt';
import { CHUNKED_BODY, NO_BODY, UnsafeFieldError, headCarriesIdentity, requestHead, requestHeaders2, type RequestHeadOptions } from '../upstream/request-head';
import { isFailoverSafe, isSafeMethod, type HeldAnswer } from '../upstream/failover';
import type { IdentityHeaderRules } from '../upstream/headers';
import type { PeerPools } from '../upstream/pools';
import { NotSentHeader } from '../api/headers';
import { ERRORS, ErrorCode, hasCode, type AnsweredCode } from '../api/errors';
import { fdLimitMessage, isOutOfFileDescriptors, reportFdShortage } from '../api/fd-limit';
import { writeHeld, writeStatus } from '../respond/write';
import { UNLISTED, type Metrics, type Route } from '../telemetry/metrics';
import type { Logger } from '../telemetry/log';
import type { Snapshot } from '../snapshot/holder';
import type { InflightRequests, Tracked } from './inflight';
import type { HeldBodyBudget } from './held-bodies';
import { accessGranted } from './discovery-access';

/** What every proxied request of one daemon shares (built once by ProxyHandler). */
export interface ProxyContext {
  /** The local apiserver, presenting the front-proxy client certificate: for requests with identity headers. */
  readonly local: OriginPool;
  /** The local apiserver without a client certificate: for every other request (carriesIdentity). */
  readonly localPlain: OriginPool;
  /** host:port of the local apiserver (the Host header of requests to it). */
  readonly localHost: string;
  readonly peers: PeerPools;
  /** Front-proxy identity header names (--requestheader-*-headers). */
  readonly identityRules: IdentityHeaderRules;
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
  /** Makes each attempt: the relay's client (newUpstreamAttempt); a scripted fake in test/unit/proxied.test.ts. */
  readonly newAttempt: AttemptFactory;
  /** Told when the local apiserver refused a connection or answered "shutting down" (snapshot/local-apiserver.ts); absent: --local-failover=false. */
  readonly localHealth?: { refused(why: string): void; shuttingDown(): void };
}

/** Where a local request may go when the local apiserver cannot take it (--local-failover). */
export interface LocalFailover {
  readonly peers: readonly string[];
  readonly gvr: GVR;
}

/**
 * The peers that can answer a request in the local apiserver's place (issue 30): for a resource,
 * the peers whose discovery lists its group/version/resource (for core and shared APIs, every
 * routed peer); for the non-resource paths every apiserver answers alike (/version, /api and its
 * group/versions, /apis/<group>[/<version>], /openapi/*), every routed peer. /healthz, /livez,
 * /readyz, /metrics and /debug stay local: they describe this node. For /apis (mvproxy's own document)
 * a peer's apiserver only decides whether the client may read it (discovery-access.ts).
 * undefined when no peer can.
 */
export function localFailoverTarget(ri: RequestInfo | undefined, path: string, snap: Snapshot): LocalFailover | undefined {
  const t = snap.table;
  if (!t.synced) return undefined;
  if (ri !== undefined && ri.isResourceRequest) {
    const e = t.lookup(ri.apiGroup, ri.apiVersion, ri.resource);
    return e !== undefined && e.peers.length > 0 ? { peers: e.peers, gvr: gvrOf(ri) } : undefined;
  }
  if (!answeredAlikeByPeers(path) || t.peerAddresses.size === 0) return undefined;
  return { peers: [...t.peerAddresses.keys()], gvr: NO_GVR };
}

function answeredAlikeByPeers(path: string): boolean {
  return path === '/version' || path === '/api' || path === '/apis' || path.startsWith('/api/') || path.startsWith('/apis/') || path === '/openapi/v2' || path.startsWith('/openapi/');
}

export interface GVR {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
}

type Stage = 'local' | 'peers' | 'peersAfter404';

/** Where the answer of the attempt under way is going. */
const A_WAITING = 0; // no head yet
const A_RELAYING = 1; // the head went to the client, the body follows
const A_HOLDING = 2; // a held status: collected, not relayed (yet)
const A_GRANTED = 3; // authorizeThen: the apiserver let the client past its filters; its body is dropped

export class ProxiedRequest implements AttemptReport, Tracked {
  readonly longRunning: boolean;
  route: 'local' | 'peer' = 'local';
  peerAddress = '';
  /** performance.now() ms after which expire() is called: the request's whole deadline, or a stream's head deadline (Infinity once its head arrived). */
  deadline = Infinity;
  private stage: Stage = 'local';
  private attempt: Attempt | null = null;
  private answer = A_WAITING;
  /** The status the client got (0 until a head went out). */
  private status = 0;
  private finished = false;
  private tracked = false;
  /** The peer (server ID) of the attempt under way. */
  private peerID = '';
  /** Peer candidates, in the order they are tried from `first`. */
  private candidates: readonly string[] = [];
  private first = 0;
  private tried = 0;
  private gvr: GVR = NO_GVR;
  /** Statuses of the attempt under way that are held, not relayed. */
  private holdStatuses: readonly number[] | undefined;
  /** The answer being held, and its bytes so far. */
  private held: HeldAnswer | null = null;
  private heldLength = 0;
  /** The local apiserver's 404, held while peers are asked (toLocalThenPeers). */
  private local404: HeldAnswer | undefined;
  /** The request body read whole, so it can be sent again (toLocalThenPeers); else the client's body streams. */
  private body: Buffer | undefined;
  /** Bytes of c.heldBodies that `body` holds, given back at settle(). */
  private heldBytes = 0;
  /** It arrived on the peer listener (logged with a local failure; its identity headers are trusted). */
  private fromPeer = false;
  /**
   * For the request log only (--v=4): the last upstream answer's Audit-Id, and its wait: request
   * written → head (ms). Not the head itself: a watch's would stay alive as long as the watch (~290 B
   * each, bench/watch-heap.ts --owners).
   */
  private upstreamAuditID: string | undefined;
  private upstreamMs = -1;

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

  /** authorizeThen: serves mvproxy's own document once an upstream's answer shows the client may read it. */
  private serveGranted: (() => void) | undefined;

  /**
   * The upstream's answer to the client's own request decides whether mvproxy may answer it from its
   * snapshot (proxy/discovery-access.ts): an answer from past the apiserver's authentication and
   * authorization (accessGranted) is dropped and `serve` writes the client's; any other (401, 403,
   * 429, a failure) is relayed or answered as for any request. Then toLocal or toPeers.
   */
  authorizeThen(serve: () => void): this {
    this.serveGranted = serve;
    return this;
  }

  /**
   * To the local apiserver. From the peer listener (`fromPeer`) the source's
   * x-kubernetes-peer-proxied: true passes on unchanged, so the local apiserver (if it runs the
   * in-tree filter too) also serves it locally; so do the identity headers the source mvproxy wrote
   * (the peer connection is verified), re-sent with this node's proxy client certificate.
   */
  toLocal(fromPeer: boolean, mayFailOver = false): void {
    this.stage = 'local';
    this.fromPeer = fromPeer;
    this.mayFailOver = mayFailOver;
    // A 429 may be the apiserver's "shutting down" (it ran nothing): held, to go to a peer instead.
    this.sendLocal(mayFailOver ? HOLD_429 : undefined);
  }

  /** --local-failover applies: a request the local apiserver provably did not take may go to a peer (issue 30). */
  private mayFailOver = false;

  /** The local apiserver provably did not take the request: to a peer that serves it, if any (counted by reason); false if none. */
  private failOverToPeers(reason: 'refused' | 'shutting_down'): boolean {
    this.mayFailOver = false;
    if (this.notFoundRoute) {
      this.peersWithoutLocal(reason);
      return true;
    }
    const f = localFailoverTarget(this.ri, this.ex.path, this.snap);
    if (f === undefined) return false;
    this.c.metrics.localFailovers.inc({ reason });
    this.toPeers(f.peers, this.c.pickStart(f.peers.length), f.gvr);
    return true;
  }

  /**
   * Nobody serves the resource by this snapshot, which can lag a peer by a refresh (a peer's
   * apiserver just restarted as a newer release, docs/kubernetes-mvp.md §8): the local apiserver is
   * asked first, and its 404 is held while each member's peer is asked in turn (askNextPeer).
   * `body`: the request body read whole (Content-Length up to REPLAY_BODY_MAX), so it can be sent again.
   */
  toLocalThenPeers(peers: readonly string[], body: Buffer | undefined, heldBytes: number, mayFailOver = false): void {
    this.stage = 'local';
    this.candidates = peers;
    this.body = body;
    this.heldBytes = heldBytes;
    this.notFoundRoute = true;
    this.mayFailOver = mayFailOver;
    // The local apiserver is asked even while the snapshot says it is not serving: it may be back
    // already as a newer release that serves the resource (the probe sees it within a second, and
    // its discovery after that), and then the peers' 404 would be a spurious one (the rolling
    // upgrade: a v1.37-only object created through it at once). A refused connection costs nothing.
    this.sendLocal(mayFailOver ? HOLD_404_429 : HOLD_LOCAL_404);
  }

  /** toLocalThenPeers: a request that may go to the peers without the local 404 when the local apiserver cannot answer. */
  private notFoundRoute = false;

  /**
   * notFound, and the local apiserver refused this request or answered "shutting down" (--local-
   * failover): each member's peer in turn as after a local 404, the last one's 404 the answer (the
   * local apiserver's would be the same by its last discovery); when no peer can answer, the 503
   * the local apiserver's outage is (no local 404 to fall back on). Without it, that 503 has
   * client-go retry until its own timeout: every request for the newer release's kind while this
   * node's apiserver restarts in a rolling upgrade.
   */
  private peersWithoutLocal(reason: string): void {
    this.mayFailOver = false;
    this.c.metrics.localFailovers.inc({ reason });
    this.local404 = undefined;
    this.stage = 'peersAfter404';
    this.gvr = this.ri !== undefined ? gvrOf(this.ri) : NO_GVR;
    this.tried = 0;
    this.askNextPeer();
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

  private sendLocal(holdStatuses: readonly number[] | undefined): void {
    const c = this.c;
    this.route = 'local';
    this.peerAddress = '';
    this.peerID = '';
    const o = this.headOptions(c.localHost, false);
    this.send(headCarriesIdentity(this.ex.headers, o) ? c.local : c.localPlain, o, holdStatuses);
  }

  private sendPeer(id: string, address: string, holdStatuses: readonly number[] | undefined): void {
    this.route = 'peer';
    this.peerAddress = address;
    this.peerID = id;
    this.send(this.c.peers.relay(address), this.headOptions(address, true), holdStatuses);
  }

  /** The head's options. One object per attempt: the request head is built from it at once. */
  private headOptions(host: string, peerHop: boolean): RequestHeadOptions {
    const ex = this.ex;
    const body = this.body;
    return {
      host,
      remoteAddress: ex.remoteAddress,
      rules: this.c.identityRules,
      trustIdentityHeaders: this.fromPeer,
      identity: ex.identity,
      peerHop,
      bodyLength: body !== undefined ? body.length : ex.body === null ? (ex.contentLength === 0 ? 0 : NO_BODY) : ex.contentLength >= 0 ? ex.contentLength : CHUNKED_BODY,
    };
  }

  private send(pool: OriginPool, o: RequestHeadOptions, holdStatuses: readonly number[] | undefined): void {
    const c = this.c;
    const ex = this.ex;
    this.holdStatuses = holdStatuses;
    this.answer = A_WAITING;
    const target = ex.target;
    const fromAPIServer = this.route === 'local';
    const h1 = () =>
      c.newAttempt(this, pool, {
        head: requestHead(ex.method, target, ex.headers, o),
        body: this.body ?? ex.body,
        chunked: o.bodyLength === CHUNKED_BODY,
        noBody: ex.method === 'HEAD',
        fromAPIServer,
        replayable: isSafeMethod(ex.method) && (this.body !== undefined || ex.body === null),
      });
    // A long-running request without a body shares an HTTP/2 session to an upstream that offers h2
    // (upstream/h2: many watches, few connections); everything else is one HTTP/1.1 exchange. The
    // HTTP/1.1 head an h2 attempt may fall back to is checked as its fields were (the same checks).
    const h2 = pool.h2;
    let attempt: Attempt;
    try {
      attempt = this.longRunning && h2 !== undefined && h2.state !== 'h1' && ex.body === null && this.body === undefined ? new H2Attempt(this, h2, requestHeaders2(ex.method, target, ex.headers, o), fromAPIServer, h1) : h1();
    } catch (e) {
      if (!(e instanceof UnsafeFieldError)) throw e;
      // Nothing was written: the one writer refused a field the front end let through.
      c.metrics.upstreamWritesRefused.inc({ part: e.part });
      c.log.info(1, `${e.code}: ${e.message}`, { route: this.route, path: ex.path });
      return this.fail(e.code, this.route);
    }
    this.attempt = attempt;
    if (!this.tracked) {
      this.tracked = true;
      ex.onClientClose = () => this.clientGone();
      ex.res.onDrain = () => this.drained();
      c.inflight.add(this);
    }
    // The whole request's deadline; a stream's is its head's, per attempt.
    this.deadline = this.longRunning ? performance.now() + streamHeadTimeoutMs(ex.query, c.requestTimeoutMs) : this.start + c.requestTimeoutMs;
    attempt.start(); // may report, even fail over, before it returns
  }

  /** The next candidate of toPeers, or a 503 Status when none is left. */
  private sendToCandidate(): void {
    while (this.tried < this.candidates.length && !this.ex.clientClosed) {
      const id = this.candidates[(this.first + this.tried) % this.candidates.length]!;
      const address = this.snap.table.peerAddresses.get(id);
      // With another candidate left, a 503 is held to tell whether it is a peer mvproxy's own "not
      // sent" answer (it is shutting down: handHeldOver sends the request to the next one).
      if (address !== undefined) return this.sendPeer(id, address, this.tried + 1 < this.candidates.length ? PEER_NOT_SENT_HOLD : undefined);
      this.tried++; // no address in this snapshot (cannot happen for a decision made from it; kept as a guard)
    }
    this.rerouted(503);
    this.fail(ErrorCode.MVP_ERR_PEER_UNAVAILABLE, 'peer');
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

  // AttemptReport: what the attempt under way saw.

  upstreamHead(head: AttemptHead): void {
    if (this.c.logRequests) {
      this.upstreamAuditID = head.get('audit-id');
      if (this.attempt !== null) this.upstreamMs = this.attempt.headAt - this.attempt.sentAt;
    }
    if (this.serveGranted !== undefined && accessGranted(head.status)) {
      this.answer = A_GRANTED;
      return;
    }
    if (this.holdStatuses !== undefined && this.holdStatuses.includes(head.status)) {
      this.answer = A_HOLDING;
      this.held = { status: head.status, head, body: [] };
      this.heldLength = 0;
      return;
    }
    this.answer = A_RELAYING;
    this.status = head.status;
    if (this.longRunning) this.deadline = Infinity;
    if (!this.ex.clientClosed) this.ex.res.writeHead(head.status, head, this.longRunning);
  }

  upstreamBody(chunk: Buffer, kept = false): boolean {
    if (this.answer === A_GRANTED) return true;
    if (this.answer === A_HOLDING) {
      if (this.heldLength + chunk.length > HELD_BODY_MAX) return this.relayHeld(chunk, kept);
      this.heldLength += chunk.length;
      this.held!.body.push(kept ? chunk : Buffer.from(chunk));
      return true;
    }
    if (this.ex.clientClosed) return true;
    if (this.ex.res.write(chunk, kept)) return true;
    // A stream's client that stops reading: its upstream pauses (its HTTP/2 stream's window bounds
    // what waits here); one that does not drain within SLOW_STREAM_MS is ended (expire()).
    if (this.longRunning) this.deadline = performance.now() + SLOW_STREAM_MS;
    return false;
  }

  /**
   * A held answer grew past HELD_BODY_MAX: no Status the request waits to decide on is that large (a
   * proxied backend's 429 or 404, say), so it is the client's answer, relayed from its head on as it
   * comes. It used to be kept to its first 64 KiB and sent as if whole (issue 33 audit).
   */
  private relayHeld(chunk: Buffer, kept: boolean): boolean {
    const held = this.held!;
    this.held = null;
    this.answer = A_RELAYING;
    this.status = held.status;
    if (this.longRunning) this.deadline = Infinity;
    if (!this.ex.clientClosed) {
      this.ex.res.writeHead(held.status, held.head, this.longRunning);
      for (const b of held.body) this.ex.res.write(b, true); // copies or kept chunks: the request's own
    }
    return this.upstreamBody(chunk, kept);
  }

  private drained(): void {
    if (this.longRunning && this.answer === A_RELAYING) this.deadline = Infinity;
    this.attempt?.resume();
  }

  upstreamEnd(): void {
    if (this.answer === A_GRANTED) return this.granted();
    if (this.answer === A_HOLDING) return this.handHeldOver();
    if (!this.ex.clientClosed) this.ex.res.end();
    this.done(this.route === 'local' ? 'local' : 'peer');
  }

  upstreamFailed(err: Error & { code?: string }, notSent: boolean, gotHead: boolean): void {
    if (this.finished || this.ex.clientClosed) return;
    // The head said enough; the rest of a body that was to be dropped does not matter.
    if (this.answer === A_GRANTED) return this.granted();
    if (this.answer === A_HOLDING) {
      // What was held is still an answer (its status decides what happens next), but a cut one.
      this.held!.cut = true;
      return this.handHeldOver();
    }
    if (gotHead && !this.ex.res.headersSent) {
      // The head was read but nothing reached the client yet (uWS sends a head with the first body
      // byte: a quiet watch): a Status can still say what happened, instead of a bare close.
      this.c.log.info(2, 'upstream failed before any byte reached the client', { route: this.route, peer: this.peerID, err: errText(err), path: this.ex.path });
      if (this.route === 'peer') this.rerouted(503);
      return this.fail(this.route === 'local' ? ErrorCode.MVP_ERR_LOCAL_FAILED : ErrorCode.MVP_ERR_PEER_UNAVAILABLE, this.route);
    }
    if (gotHead) {
      // Mid-body failure: cut the client connection so it sees a truncated response, not a clean end.
      this.c.log.info(2, 'upstream failed mid-response', { route: this.route, peer: this.peerID, err: errText(err), path: this.ex.path });
      this.ex.res.destroy();
      this.done(this.route === 'local' ? 'local' : 'peer');
      return;
    }
    this.attemptFailed(err, notSent, this.attempt?.bodyTouched ?? false);
  }

  /** The attempt failed before any of its answer reached the client: fail over, or answer with a Status. */
  private attemptFailed(err: Error & { code?: string }, notSent: boolean, bodyTouched: boolean): void {
    const c = this.c;
    const code = failureCode(err);
    if (code === ErrorCode.MVP_ERR_FD_LIMIT) return this.outOfFileDescriptors(err);
    // The request itself is too large for the upstream (upstream/h2/attempt.ts): nothing was sent, and
    // nothing is wrong with the upstream (no connect error, no failover, no other peer takes more).
    if (code === ErrorCode.MVP_ERR_HEADER_LIST_TOO_LARGE) return this.fail(code, this.route, err.message);
    if (this.route === 'local') {
      c.metrics.upstreamConnectErrors.inc({ route: 'local', peer: '' });
      c.log.info(2, 'local apiserver request failed', { err: errText(err), path: this.ex.path, fromPeer: this.fromPeer });
      // Refused before anything was sent: the apiserver is not serving; a peer takes this one.
      if (notSent) c.localHealth?.refused(errText(err));
      if (notSent && (!bodyTouched || this.body !== undefined) && this.mayFailOver && this.failOverToPeers('refused')) return;
      return this.fail(code ?? (notSent ? ErrorCode.MVP_ERR_LOCAL_UNAVAILABLE : ErrorCode.MVP_ERR_LOCAL_FAILED), 'local');
    }
    // Counted and logged against that peer. Not as apiserver_peer_proxy_errors_total{type="proxy_transport"}:
    // upstream counts that only when it cannot build the round tripper (peerproxy_handler.go); a
    // failed dial is "rerouted, code 503" there, which is counted with the client's answer.
    c.metrics.upstreamConnectErrors.inc({ route: 'peer', peer: this.peerID });
    c.log.info(2, 'peer request failed', { peer: this.peerID, address: this.peerAddress, err: errText(err), path: this.ex.path });
    // After the local 404 the body is a replayable Buffer: the same rule as failover, by method.
    const safe = code === undefined && isFailoverSafe(err, notSent, this.ex.method, this.stage === 'peersAfter404' ? false : bodyTouched);
    if (safe && this.stage === 'peersAfter404') return this.askNextPeer();
    if (safe) {
      this.tried++;
      return this.sendToCandidate();
    }
    const answer = code ?? ErrorCode.MVP_ERR_PEER_UNAVAILABLE;
    this.rerouted(ERRORS[answer].status);
    this.fail(answer, 'peer');
  }

  /**
   * No connection could be opened for want of a file descriptor (issue 33 §3): mvproxy's own
   * shortage, so the apiserver is not marked down (a refused connection would be) and no peer is
   * tried (it needs a descriptor too); the client gets the 503 that names the limit, and client-go
   * retries it after Retry-After. Not an upstream error: the upstream never saw the request.
   */
  private outOfFileDescriptors(err: Error & { code?: string }): void {
    if (reportFdShortage('request')) this.c.log.info(0, 'out of file descriptors: new requests that need an upstream connection get a 503 until some are released (logged once per 10 s)', { err: errText(err), route: this.route, path: this.ex.path });
    if (this.route === 'peer') this.rerouted(ERRORS.MVP_ERR_FD_LIMIT.status);
    this.fail(ErrorCode.MVP_ERR_FD_LIMIT, this.route, fdLimitMessage(err));
  }

  /** The held answer is complete (or cut): the decision it was held for. */
  private handHeldOver(): void {
    const held = this.held!;
    this.held = null;
    this.answer = A_WAITING;
    if (this.ex.clientClosed) return;
    if (this.stage === 'local' && held.status === 429) {
      // kube-apiserver's answer while it shuts down (--shutdown-send-retry-after): it ran nothing,
      // so the request goes to a peer if its body can still be sent; any other 429 (priority and
      // fairness) is the client's answer.
      if (isShuttingDown(held)) {
        this.c.localHealth?.shuttingDown();
        if (this.mayFailOver && (!(this.attempt?.bodyTouched ?? false) || this.body !== undefined) && this.failOverToPeers('shutting_down')) return;
      }
      return this.answerHeld(held, 'local');
    }
    if (this.stage === 'peers') {
      // A peer mvproxy's own "not sent" 503 (it is shutting down, between its Lease's deletion and
      // this snapshot's next publication): nothing ran, so the next candidate, if the body can
      // still be sent. Any other 503 is the client's answer. peers-lease.test.ts saw the former
      // in one run in three: a GVR another peer serves got the 503.
      if (heldNotSent(held) && (!(this.attempt?.bodyTouched ?? false) || this.body !== undefined)) {
        this.tried++;
        return this.sendToCandidate();
      }
      return this.answerHeld(held, 'peer');
    }
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
      if (!isSafeMethod(this.ex.method) && !heldNotSent(held)) return this.answerHeld(held, 'peer');
    }
    this.askNextPeer();
  }

  /** authorizeThen: the client may read the document; mvproxy's own answer is written (and recorded) by `serve`. */
  private granted(): void {
    const serve = this.serveGranted!;
    this.settle();
    if (!this.ex.clientClosed) serve();
  }

  /** The local apiserver's 404, held while the peers were asked, is the client's answer after all. */
  private answerLocal404(): void {
    if (this.local404 === undefined) return this.fail(ErrorCode.MVP_ERR_LOCAL_UNAVAILABLE, 'local');
    this.answerHeld(this.local404, 'local');
  }

  /** A held answer is the client's. */
  private answerHeld(held: HeldAnswer, route: Route): void {
    if (route === 'peer') this.rerouted(held.status);
    this.settle();
    if (this.ex.clientClosed) return;
    writeHeld(this.ex, held);
    this.status = held.status;
    this.observe(route);
  }

  // Tracked: what the in-flight registry asks.
  inflightSlot = -1;

  /** Past the deadline: 504 while no answer went out (a stream's head, or a whole request), else the response is cut. */
  expire(): void {
    if (this.finished) return;
    this.attempt?.abort();
    if (this.answer === A_GRANTED) return this.granted();
    if (this.answer !== A_RELAYING || !this.ex.res.headersSent) {
      if (this.route === 'peer') this.rerouted(504);
      return this.fail(ErrorCode.MVP_ERR_UPSTREAM_TIMEOUT, this.route);
    }
    if (this.longRunning) {
      // A watcher that did not read for SLOW_STREAM_MS: ended cleanly, as kube-apiserver's watch
      // cache ends a watcher that blocks its dispatch; client-go re-watches from its last
      // resourceVersion. Its upstream stream is closed, so it no longer holds the shared connection.
      this.c.log.info(2, 'a long-running response whose client stopped reading was ended', { path: this.ex.path, srcIP: this.ex.remoteAddress, afterMs: SLOW_STREAM_MS });
      this.ex.res.end();
    } else this.ex.res.destroy();
    this.done(this.route);
  }

  /** Gives up on an upstream that has not answered yet (a peer that failed its probe): failover as for a transport failure. */
  abandon(err: Error): boolean {
    if (this.finished || this.answer !== A_WAITING || this.attempt === null) return false;
    const a = this.attempt;
    a.abort();
    this.attemptFailed(err, false, a.bodyTouched);
    return true;
  }

  /** Ends a streaming response cleanly (shutdown): client-go re-lists and re-watches, elsewhere. */
  endCleanly(): void {
    if (this.finished) return;
    this.attempt?.abort();
    if (this.answer === A_RELAYING && this.ex.res.headersSent) {
      this.ex.res.end();
      this.done(this.route);
    } else this.fail(ErrorCode.MVP_ERR_SHUTTING_DOWN, this.route);
  }

  private clientGone(): void {
    if (this.finished) return;
    this.attempt?.abort();
    this.done(this.route);
  }

  private settle(): void {
    this.finished = true;
    if (this.heldBytes > 0) {
      this.c.heldBodies.give(this.heldBytes);
      this.heldBytes = 0;
      this.body = undefined;
    }
    this.attempt = null;
    if (!this.tracked) return;
    this.tracked = false;
    this.ex.onClientClose = null;
    this.ex.res.onDrain = null;
    this.c.inflight.delete(this);
  }

  /**
   * The response ended (or was cut): the record, once. uWS reports a cut as the client's abort within
   * destroy() (clientGone), before the cutter's own done(): recorded twice, that was two log lines and
   * two rerouted counts (helper 15).
   */
  private done(route: Route): void {
    if (this.finished) return;
    this.settle();
    if (route === 'peer') this.rerouted(this.status);
    this.observe(route);
  }

  /** Answers with the error's metav1.Status. */
  fail(code: AnsweredCode, route: Route, message?: string): void {
    this.settle();
    if (this.ex.clientClosed) return;
    writeStatus(this.ex, code, message);
    this.status = ERRORS[code].status;
    this.observe(route);
  }

  /**
   * apiserver_rerouted_request_total, once per proxied resource request, with the status the client
   * got (upstream: peerproxy_handler.go). A non-resource request mvproxy proxies to a peer (an
   * OpenAPI document, resource '') is not one: upstream never proxies those.
   */
  private rerouted(status: number): void {
    const g = this.gvr;
    if (g.resource === '') return;
    // Labelled with the GVR when the request's snapshot lists it; else (the held local 404 asked of
    // the peers: a GVR the client named) under UNLISTED, so that no client adds series.
    const listed = this.snap.table.lookup(g.group, g.version, g.resource) !== undefined;
    this.c.metrics.reroutedRequests.inc({ code: String(status), group: listed ? g.group : UNLISTED, version: listed ? g.version : UNLISTED, resource: listed ? g.resource : UNLISTED });
  }

  private observe(route: Route): void {
    observe(this.c, this.ex, this.ri, route, this.status, this.start, this.longRunning, route === 'peer' ? this.peerID : undefined, this.upstreamAuditID, this.upstreamMs);
  }
}

/**
 * One finished request: its latency in the histogram (not for streams: a watch's hours would
 * swamp it) and, at --v=4, one log line in the shape of Kubernetes' httplog ("HTTP" verb URI
 * latency userAgent srcIP resp) plus mvproxy's route. Off below --v=4: one boolean test.
 */
export function observe(c: Pick<ProxyContext, 'metrics' | 'logRequests' | 'log'>, ex: Exchange, ri: RequestInfo | undefined, route: Route, status: number, start: number, longRunning = false, peer?: string, upstreamAuditID?: string, upstreamMs = -1): void {
  const seconds = (performance.now() - start) / 1000;
  if (!longRunning) {
    c.metrics.requestDuration.observe(route, ri?.verb ?? 'unknown', status, seconds);
    if (peer !== undefined) c.metrics.reroutedDuration.of(peer).observe(seconds);
  }
  if (!c.logRequests) return;
  // httplog's fields and order (verb URI latency userAgent audit-ID srcIP resp), then mvproxy's:
  // the route, and the upstream's share of the latency (request written → response head).
  c.log.info(4, 'HTTP', {
    verb: ex.method,
    URI: ex.query ? `${ex.path}?${ex.query}` : ex.path,
    latency: `${(seconds * 1000).toFixed(3)}ms`,
    userAgent: headerValue(ex.headers, 'user-agent'),
    'audit-ID': upstreamAuditID || headerValue(ex.headers, 'audit-id'),
    srcIP: ex.remoteAddress,
    resp: status,
    route: peer ? `peer:${peer}` : route,
    ...(upstreamMs >= 0 ? { upstreamLatency: `${upstreamMs.toFixed(3)}ms` } : {}),
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
/** The local apiserver's answer that sends a notFound request on to the peers. */
const HOLD_LOCAL_404: readonly number[] = [404];
/** The local apiserver's answer that may mean "shutting down" (a local request that may fail over). */
const HOLD_429: readonly number[] = [429];
/** notFound with --local-failover: the local 404 (peers asked next), or a 429 that may be "shutting down". */
const HOLD_404_429: readonly number[] = [404, 429];

/** kube-apiserver's 429 while it shuts down ("The apiserver is shutting down, please try again later."), not priority and fairness throttling. */
function isShuttingDown(held: HeldAnswer): boolean {
  for (const b of held.body) if (b.toString('latin1').includes('shutting down')) return true;
  return false;
}
/** A peer asked after a local 404 that answers so has nothing to say about the resource: its apiserver is down or restarting. */
const PEER_CANNOT_ANSWER: readonly number[] = [502, 503, 504];
/** ...or that answers so, when more peers remain to be asked. */
const PEER_PASSES_ON: readonly number[] = [404, ...PEER_CANNOT_ANSWER];
/**
 * How long a long-running response may wait for its client to read before it is ended. The
 * apiserver's watch cache gives a blocked watcher much less (a dispatch budget of ~100 ms) before
 * it terminates it; a client behind mvproxy also has TCP and TLS buffers between, hence seconds.
 */
const SLOW_STREAM_MS = 30_000;
/** Held on the peer route while another candidate remains: a peer mvproxy's "not sent" 503 goes on to it. */
const PEER_NOT_SENT_HOLD: readonly number[] = [503];
/** A Status body is well under this; a held answer that grows larger is relayed instead (relayHeld). */
const HELD_BODY_MAX = 64 * 1024;

/** A held answer that mvproxy wrote itself and that says the request reached no apiserver (api/errors.ts notSent). */
function heldNotSent(held: HeldAnswer): boolean {
  const h = held.head.headers;
  for (let i = 0; i < h.length; i += 2) if (h[i]!.toLowerCase() === NotSentHeader) return h[i + 1] === 'true';
  return false;
}

/** The Status for a failure that has its own: an answer that broke framing (502), no file descriptor for a connection (503). Else the caller's by route. */
function failureCode(err: Error & { code?: string }): AnsweredCode | undefined {
  if (hasCode(err, ErrorCode.MVP_ERR_UPSTREAM_PROTOCOL)) return ErrorCode.MVP_ERR_UPSTREAM_PROTOCOL;
  if (hasCode(err, ErrorCode.MVP_ERR_HEADER_LIST_TOO_LARGE)) return ErrorCode.MVP_ERR_HEADER_LIST_TOO_LARGE;
  return isOutOfFileDescriptors(err) ? ErrorCode.MVP_ERR_FD_LIMIT : undefined;
}

function errText(err: Error & { code?: string }): string {
  return err.code ? `${err.code}: ${err.message}` : err.message;
}
